/**
 * Owner of shaders/train/batchnorm_bwd_data.wgsl: the input gradient of training-mode batch
 * norm. Its element indexing and channel lookup are batchnorm_apply.wgsl's; only those few
 * lines repeat, and a kernel is clearer whole than spliced from shared pieces.
 */
import code from "../../../shaders/train/batchnorm_bwd_data.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape, expectSize } from "./_check.ts";
import { bnGeometry } from "./_batchnorm.ts";

export const batchnormBwdDataKernel = new Kernel({
  name: "train/batchnorm_bwd_data",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "read-only-storage", "read-only-storage", "read-only-storage", "read-only-storage", "storage"],
});

/** Plans dx; dgamma and dbeta come from batchnorm_bwd_reduce of the same x, dy, stats. */
export function batchnormBwdData(
  x: Tensor, dy: Tensor, stats: Tensor, gamma: Tensor, dgamma: Tensor, dbeta: Tensor, dx: Tensor, o: { eps: number },
): Dispatch {
  const { C, I } = bnGeometry("batchnorm_bwd_data", x);
  expectSize("batchnorm_bwd_data", "dy", dy, x.size);
  expectSize("batchnorm_bwd_data", "dx", dx, x.size);
  expectShape("batchnorm_bwd_data", "stats", stats, [2 * C]);
  for (const [what, t] of [["gamma", gamma], ["dgamma", dgamma], ["dbeta", dbeta]] as const) expectShape("batchnorm_bwd_data", what, t, [C]);
  return {
    kernel: batchnormBwdDataKernel,
    bindings: [uniforms([x.size, { f32: o.eps }]), x, dy, stats, gamma, dgamma, dbeta, dx],
    constants: { C, I },
    workgroups: grid(x.size, 256),
  };
}
