/**
 * Owner of shaders/train/batchnorm_bwd_reduce.wgsl: dgamma = Σ dy·x̂, dbeta = Σ dy per channel.
 * Its per-channel loop and tree sum have batchnorm_stats.wgsl's shape, but it reduces two sums
 * in one tree where that kernel reduces one sum twice, so each keeps its own.
 */
import code from "../../../shaders/train/batchnorm_bwd_reduce.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape, expectSize } from "./_check.ts";
import { bnGeometry } from "./_batchnorm.ts";

export const batchnormBwdReduceKernel = new Kernel({
  name: "train/batchnorm_bwd_reduce",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "read-only-storage", "storage", "storage"],
});

export function batchnormBwdReduce(x: Tensor, dy: Tensor, stats: Tensor, dgamma: Tensor, dbeta: Tensor, o: { eps: number }): Dispatch {
  const { N, C, I } = bnGeometry("batchnorm_bwd_reduce", x);
  expectSize("batchnorm_bwd_reduce", "dy", dy, x.size);
  expectShape("batchnorm_bwd_reduce", "stats", stats, [2 * C]);
  expectShape("batchnorm_bwd_reduce", "dgamma", dgamma, [C]);
  expectShape("batchnorm_bwd_reduce", "dbeta", dbeta, [C]);
  return {
    kernel: batchnormBwdReduceKernel,
    bindings: [uniforms([N, { f32: o.eps }]), x, dy, stats, dgamma, dbeta],
    constants: { C, I },
    workgroups: [C, 1, 1],
  };
}
