/**
 * CPU reference of the f16 GEMM (src/train/ops/gemm_f16.ts): the exact (f64)
 * C = op(A)·op(B) (+ bias) (ReLU) of operands already rounded to f16, with a per-element error
 * bound for either accumulation.
 *
 * The bound. The GPU sums K products in order k = 0 … K-1; step k computes
 * ŝ_k = fl(a_k·b_k + ŝ_{k-1}), each rounding off by at most u·|result| (u = 2^-11 for f16,
 * 2^-24 for f32). With a fused fma that is one rounding per step; an implementation that rounds
 * the product first adds u·|a_k·b_k|. Summed over the steps, with the exact partial sums s_k in
 * place of the computed ones (off by at most K·u relative, hence the 1/(1 − K·u)):
 *
 *   |ŝ_K − s_K| ≤ u/(1 − K·u) · Σ_k (|s_k| + |a_k·b_k|)  +  K·flush
 *
 * where flush = 2^-14 (f16's smallest normal) in f16 accumulation, since WGSL lets an
 * implementation flush subnormal results to zero, and 0 in f32 (the products of normal f16 are
 * normal f32; the tests keep f16-subnormal operands out). Widening to f32 is exact; adding the
 * bias rounds once more, by at most 2^-24·(|s_K| + |bias|) (doubled below for the second-order
 * terms); ReLU does not increase a difference.
 * This is a worst case, and still tight enough to catch a wrong operand: Σ|s_k| grows like
 * K^1.5 while a wrong value is off by ~√K.
 */
import { F16_EPS, F16_MIN_NORMAL } from "./cast_f16.ts";

export function gemmF16Ref(
  a: ArrayLike<number>, b: ArrayLike<number>, M: number, N: number, K: number,
  o: { transA?: boolean; transB?: boolean; bias?: ArrayLike<number>; relu?: boolean; accumulate?: "f32" | "f16" } = {},
): { c: Float64Array; tol: Float64Array } {
  const f16 = o.accumulate === "f16";
  const u = f16 ? F16_EPS : 2 ** -24;
  const gamma = u / (1 - K * u);
  const flush = f16 ? F16_MIN_NORMAL : 0;
  const c = new Float64Array(M * N), tol = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0, bound = 0;
      for (let k = 0; k < K; k++) {
        const p = (o.transA ? a[k * M + i] : a[i * K + k]) * (o.transB ? b[j * K + k] : b[k * N + j]);
        s += p;
        bound += Math.abs(s) + Math.abs(p);
      }
      const bias = o.bias ? o.bias[j] : 0;
      const v = s + bias;
      c[i * N + j] = o.relu ? Math.max(0, v) : v;
      tol[i * N + j] = gamma * bound + K * flush + 2 ** -23 * (Math.abs(s) + Math.abs(bias));
    }
  }
  return { c, tol };
}
