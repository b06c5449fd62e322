/** Geometry shared by the conv2d ops: stride 1, zero padding, NCHW input, KCRS weights. */
import type { Tensor } from "../tensor.ts";
import { expectRank, expectShape, invalid } from "./_check.ts";

export interface ConvGeometry {
  N: number; C: number; H: number; W: number;
  K: number; KH: number; KW: number; P: number;
  OH: number; OW: number;
}

/** Checks x [N,C,H,W] and w [K,C,KH,KW] and derives the output size (stride 1, padding P). */
export function convGeometry(op: string, x: Tensor, w: Tensor, padding: number): ConvGeometry {
  expectRank(op, "x", x, 4);
  expectRank(op, "w", w, 4);
  const [N, C, H, W] = x.shape, [K, Cw, KH, KW] = w.shape;
  if (Cw !== C) invalid(`Cannot run ${op} as 'w' must have ${C} input channels like 'x' [${x.shape}]: current shape is [${w.shape}]`);
  if (!Number.isInteger(padding) || padding < 0) invalid(`Cannot run ${op} as 'padding' must be an integer ≥ 0: current value is ${padding}`);
  const OH = H + 2 * padding - KH + 1, OW = W + 2 * padding - KW + 1;
  if (OH < 1 || OW < 1) invalid(`Cannot run ${op} as a ${KH}×${KW} kernel with padding ${padding} does not fit the ${H}×${W} input`);
  return { N, C, H, W, K, KH, KW, P: padding, OH, OW };
}

export function convParams(g: ConvGeometry, splits = 1): number[] {
  return [g.N, g.C, g.H, g.W, g.K, g.KH, g.KW, g.P, g.OH, g.OW, splits, 0];
}

export function expectOutput(op: string, what: string, t: Tensor, g: ConvGeometry): void {
  expectShape(op, what, t, [g.N, g.K, g.OH, g.OW]);
}
