/** Owner of shaders/train/relu_bwd.wgsl: dx = dy where ReLU's output y > 0. */
import code from "../../../shaders/train/relu_bwd.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectSize } from "./_check.ts";

export const reluBwdKernel = new Kernel({
  name: "train/relu_bwd",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"],
});

/** Plans dx from dy and ReLU's output y (all the same size). */
export function reluBwd(y: Tensor, dy: Tensor, dx: Tensor): Dispatch {
  expectSize("relu_bwd", "dy", dy, y.size);
  expectSize("relu_bwd", "dx", dx, y.size);
  return { kernel: reluBwdKernel, bindings: [uniforms([y.size]), y, dy, dx], workgroups: grid(y.size, 256) };
}
