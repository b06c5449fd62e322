/** Owner of shaders/train/relu.wgsl: y = max(x, 0). */
import code from "../../../shaders/train/relu.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectSize } from "./_check.ts";

export const reluKernel = new Kernel({ name: "train/relu", code, bindings: ["uniform", "read-only-storage", "storage"] });

export function relu(x: Tensor, y: Tensor): Dispatch {
  expectSize("relu", "y", y, x.size);
  return { kernel: reluKernel, bindings: [uniforms([x.size]), x, y], workgroups: grid(x.size, 256) };
}
