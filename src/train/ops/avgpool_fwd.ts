/** Owner of shaders/train/avgpool_fwd.wgsl: global average pooling [N, C, H, W] → [N, C]. */
import code from "../../../shaders/train/avgpool_fwd.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, expectShape } from "./_check.ts";

export const avgpoolFwdKernel = new Kernel({ name: "train/avgpool_fwd", code, bindings: ["uniform", "read-only-storage", "storage"] });

export function avgpoolFwd(x: Tensor, y: Tensor): Dispatch {
  expectRank("avgpool_fwd", "x", x, 4);
  const [N, C, H, W] = x.shape;
  expectShape("avgpool_fwd", "y", y, [N, C]);
  return { kernel: avgpoolFwdKernel, bindings: [uniforms([N * C, H * W]), x, y], workgroups: grid(N * C, 64) };
}
