/** Geometry shared by the batch norm ops: x is [N, C] or [N, C, H, W], statistics per channel. */
import type { Tensor } from "../tensor.ts";
import { invalid } from "./_check.ts";

export function bnGeometry(op: string, x: Tensor): { N: number; C: number; I: number } {
  if (x.shape.length !== 2 && x.shape.length !== 4) {
    invalid(`Cannot run ${op} as 'x' must be [N, C] or [N, C, H, W]: current shape is [${x.shape}]`);
  }
  const [N, C] = x.shape;
  if (C > 65535) invalid(`Cannot run ${op} as it takes at most 65535 channels: 'x' has ${C}`);
  return { N, C, I: x.size / (N * C) };
}
