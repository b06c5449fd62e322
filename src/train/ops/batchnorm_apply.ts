/** Owner of shaders/train/batchnorm_apply.wgsl: normalize with given stats, scale, shift (ReLU). */
import code from "../../../shaders/train/batchnorm_apply.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape, expectSize } from "./_check.ts";
import { bnGeometry } from "./_batchnorm.ts";

export const batchnormApplyKernel = new Kernel({
  name: "train/batchnorm_apply",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "read-only-storage", "read-only-storage", "storage"],
});

/** Plans y = (x − mean)/√(var + eps)·gamma + beta (ReLU) with stats = [mean | var] (batch or running). */
export function batchnormApply(
  x: Tensor, stats: Tensor, gamma: Tensor, beta: Tensor, y: Tensor, o: { eps: number; relu?: boolean },
): Dispatch {
  const { C, I } = bnGeometry("batchnorm_apply", x);
  expectShape("batchnorm_apply", "stats", stats, [2 * C]);
  expectShape("batchnorm_apply", "gamma", gamma, [C]);
  expectShape("batchnorm_apply", "beta", beta, [C]);
  expectSize("batchnorm_apply", "y", y, x.size);
  return {
    kernel: batchnormApplyKernel,
    bindings: [uniforms([x.size, { f32: o.eps }]), x, stats, gamma, beta, y],
    workgroups: grid(x.size, 256),
    constants: { RELU: o.relu ? 1 : 0, C, I },
  };
}
