/** Owner of shaders/train/avgpool_bwd.wgsl: dx[n,c,h,w] = dy[n,c] / (H·W). */
import code from "../../../shaders/train/avgpool_bwd.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, expectShape } from "./_check.ts";

export const avgpoolBwdKernel = new Kernel({ name: "train/avgpool_bwd", code, bindings: ["uniform", "read-only-storage", "storage"] });

export function avgpoolBwd(dy: Tensor, dx: Tensor): Dispatch {
  expectRank("avgpool_bwd", "dx", dx, 4);
  const [N, C, H, W] = dx.shape;
  expectShape("avgpool_bwd", "dy", dy, [N, C]);
  return { kernel: avgpoolBwdKernel, bindings: [uniforms([dx.size]), dy, dx], workgroups: grid(dx.size, 256), constants: { HW: H * W } };
}
