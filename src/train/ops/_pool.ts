/** Geometry of non-overlapping max pooling (stride = size, no padding). */
import type { Tensor } from "../tensor.ts";
import { expectRank, invalid } from "./_check.ts";

export function poolGeometry(op: string, x: Tensor, size: number) {
  expectRank(op, "x", x, 4);
  const [N, C, H, W] = x.shape;
  if (!Number.isInteger(size) || size < 1 || size > H || size > W) {
    invalid(`Cannot run ${op} as 'size' must be an integer in 1…${Math.min(H, W)} for a ${H}×${W} input: current value is ${size}`);
  }
  return { N, C, H, W, S: size, OH: Math.floor(H / size), OW: Math.floor(W / size) };
}

/** The override constants maxpool_fwd/bwd.wgsl take (shared declarations): the geometry and `count` invocations. */
export function poolConstants(g: ReturnType<typeof poolGeometry>, count: number): Record<string, number> {
  return { COUNT: count, H: g.H, W: g.W, OH: g.OH, OW: g.OW, S: g.S };
}
