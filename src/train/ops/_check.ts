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
 * Register-tile size for `n` values spread over `lanes` invocations, at most `max` each: the
 * fewest workgroups that cover them, then the smallest tile that fills those (144 conv taps on
 * 16 lanes: 2 groups of 5 per lane, not 2 of 8 with the second almost idle). Each size is one
 * more pipeline to compile, so sizes stay within 1…max.
 */
export function tileSize(n: number, max = 8, lanes = 1): number {
  const groups = Math.max(1, Math.ceil(n / (lanes * max)));
  return Math.max(1, Math.ceil(n / (lanes * groups)));
}
