/** Owner of shaders/train/bias_add.wgsl: y[o, c, i] += bias[c], in place. */
import code from "../../../shaders/train/bias_add.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, invalid } from "./_check.ts";

export const biasAddKernel = new Kernel({ name: "train/bias_add", code, bindings: ["uniform", "read-only-storage", "storage"] });

/** Plans y += bias along axis 1 of y ([N, C] or [N, C, H, W]). */
export function biasAdd(bias: Tensor, y: Tensor): Dispatch {
  expectRank("bias_add", "bias", bias, 1);
  if (y.shape.length < 2 || y.shape[1] !== bias.size) {
    invalid(`Cannot run bias_add as 'y' must have ${bias.size} channels on axis 1: current shape is [${y.shape}]`);
  }
  const inner = y.shape.slice(2).reduce((a, b) => a * b, 1);
  return { kernel: biasAddKernel, bindings: [uniforms([y.size]), bias, y], workgroups: grid(y.size, 256), constants: { C: bias.size, I: inner } };
}
