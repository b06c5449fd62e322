/** Shape checks shared by the op planners: each throws a CassetteError naming the operand. */
import { CassetteError } from "../../errors.ts";
import type { DType, Tensor } from "../tensor.ts";

/** Throws unless `t` has exactly `shape` (-1 matches any size). */
export function expectShape(op: string, what: string, t: Tensor, shape: readonly number[]): void {
  const ok = t.shape.length === shape.length && shape.every((d, i) => d < 0 || d === t.shape[i]);
  if (!ok) {
    throw new CassetteError(
      "ERR_INVALID_OPTION",
      `Cannot run ${op} as '${what}' must have shape [${shape.map((d) => (d < 0 ? "?" : d))}]: current shape is [${t.shape}]`,
    );
  }
}

/** Throws unless `t` has `rank` dimensions. */
export function expectRank(op: string, what: string, t: Tensor, rank: number): void {
  if (t.shape.length !== rank) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot run ${op} as '${what}' must have ${rank} dimensions: current shape is [${t.shape}]`);
  }
}

/** Throws unless `t` holds exactly `size` values. */
export function expectSize(op: string, what: string, t: Tensor, size: number): void {
  if (t.size !== size) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot run ${op} as '${what}' must hold ${size} values: current shape is [${t.shape}] (${t.size})`);
  }
}

/** Throws unless `t` holds `dtype` values. */
export function expectDType(op: string, what: string, t: Tensor, dtype: DType): void {
  if (t.dtype !== dtype) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot run ${op} as '${what}' must hold ${dtype} values: current dtype is ${t.dtype}`);
  }
}

export function invalid(message: string): never {
  throw new CassetteError("ERR_INVALID_OPTION", message);
}

/**
 * Register-tile size for `need` values: the next power of two, at most `max`. Each size is
 * one more pipeline to compile (seconds on a CPU driver), so only 1, 2, 4, 8 are used.
 */
export function tileSize(need: number, max = 8): number {
  let t = 1;
  while (t < need && t < max) t *= 2;
  return t;
}
