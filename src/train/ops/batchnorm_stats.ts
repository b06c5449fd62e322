/** Owner of shaders/train/batchnorm_stats.wgsl: batch mean/variance per channel, running update. */
import code from "../../../shaders/train/batchnorm_stats.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape } from "./_check.ts";
import { bnGeometry } from "./_batchnorm.ts";

export const batchnormStatsKernel = new Kernel({
  name: "train/batchnorm_stats",
  code,
  bindings: ["uniform", "read-only-storage", "storage", "storage"],
});

/** Plans stats = [mean | var] (2C) of x [N, C, …] and moves running [2C] towards it. */
export function batchnormStats(x: Tensor, stats: Tensor, running: Tensor, momentum: number): Dispatch {
  const { N, C, I } = bnGeometry("batchnorm_stats", x);
  expectShape("batchnorm_stats", "stats", stats, [2 * C]);
  expectShape("batchnorm_stats", "running", running, [2 * C]);
  return { kernel: batchnormStatsKernel, bindings: [uniforms([N, { f32: momentum }]), x, stats, running], workgroups: [C, 1, 1], constants: { C, I } };
}
