/**
 * Owner of shaders/train/gemm.wgsl: C = op(A)·op(B) (+ bias) (ReLU), the dense layer's forward
 * (NN), input gradient (NT) and weight gradient (TN).
 */
import code from "../../../shaders/train/gemm.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, expectShape, invalid, tileSize } from "./_check.ts";

export const gemmKernel = new Kernel({
  name: "train/gemm",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "read-only-storage", "storage"],
});

const WG = 16, MAX_R = 8;

export interface GemmOptions {
  /** A is stored [K, M] (default: [M, K]). */
  transA?: boolean;
  /** B is stored [N, K] (default: [K, N]). */
  transB?: boolean;
  /** Adds bias[N] to every row. */
  bias?: Tensor;
  /** Applies max(0, ·) after the bias. */
  relu?: boolean;
}

/** Plans C[M,N] = op(A)·op(B) (+ bias) (ReLU). */
export function gemm(a: Tensor, b: Tensor, c: Tensor, o: GemmOptions = {}): Dispatch {
  expectRank("gemm", "a", a, 2);
  expectRank("gemm", "b", b, 2);
  expectRank("gemm", "c", c, 2);
  const [M, K] = o.transA ? [a.shape[1], a.shape[0]] : [a.shape[0], a.shape[1]];
  const [Kb, N] = o.transB ? [b.shape[1], b.shape[0]] : [b.shape[0], b.shape[1]];
  if (Kb !== K) {
    invalid(`Cannot run gemm as the inner sizes differ: op(a) is [${M}, ${K}], op(b) is [${Kb}, ${N}] (transA ${!!o.transA}, transB ${!!o.transB})`);
  }
  expectShape("gemm", "c", c, [M, N]);
  if (o.bias) expectShape("gemm", "bias", o.bias, [N]);
  // Narrow outputs (a 10-class head) use fewer columns per invocation instead of idle lanes.
  const rn = tileSize(Math.ceil(N / WG), MAX_R);
  const rm = tileSize(M, MAX_R);
  return {
    kernel: gemmKernel,
    bindings: [uniforms([M, N, K]), a, b, o.bias ?? null, c],
    workgroups: [Math.ceil(N / (WG * rn)), Math.ceil(M / rm), 1],
    constants: { TRANS_A: o.transA ? 1 : 0, TRANS_B: o.transB ? 1 : 0, BIAS: o.bias ? 1 : 0, RELU: o.relu ? 1 : 0, WG, RM: rm, RN: rn },
  };
}
