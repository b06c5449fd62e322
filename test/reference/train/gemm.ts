/** CPU reference of shaders/train/gemm.wgsl in f64: C = op(A)·op(B) (+ bias) (ReLU). */
export function gemmRef(
  a: ArrayLike<number>, b: ArrayLike<number>, M: number, N: number, K: number,
  o: { transA?: boolean; transB?: boolean; bias?: ArrayLike<number>; relu?: boolean } = {},
): Float64Array {
  const c = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += (o.transA ? a[k * M + i] : a[i * K + k]) * (o.transB ? b[j * K + k] : b[k * N + j]);
      if (o.bias) s += o.bias[j];
      c[i * N + j] = o.relu ? Math.max(0, s) : s;
    }
  }
  return c;
}
