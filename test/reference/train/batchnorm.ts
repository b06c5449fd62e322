/** CPU reference of batch norm (batchnorm_stats + batchnorm_apply) in f64, x of shape [N, C, I]. */
export function batchnormStatsRef(x: ArrayLike<number>, N: number, C: number, I: number): { mean: Float64Array; variance: Float64Array } {
  const mean = new Float64Array(C), variance = new Float64Array(C);
  const M = N * I;
  for (let c = 0; c < C; c++) {
    let s = 0;
    for (let n = 0; n < N; n++) for (let i = 0; i < I; i++) s += x[(n * C + c) * I + i];
    mean[c] = s / M;
    let q = 0;
    for (let n = 0; n < N; n++) for (let i = 0; i < I; i++) q += (x[(n * C + c) * I + i] - mean[c]) ** 2;
    variance[c] = q / M;
  }
  return { mean, variance };
}

export function batchnormApplyRef(
  x: ArrayLike<number>, C: number, I: number, mean: ArrayLike<number>, variance: ArrayLike<number>,
  gamma: ArrayLike<number>, beta: ArrayLike<number>, eps: number, relu = false,
): Float64Array {
  return Float64Array.from(x, (v, i) => {
    const c = Math.floor(i / I) % C;
    const y = ((v - mean[c]) / Math.sqrt(variance[c] + eps)) * gamma[c] + beta[c];
    return relu ? Math.max(0, y) : y;
  });
}

/** Training mode: normalized with the batch's own statistics. */
export function batchnormTrainRef(
  x: ArrayLike<number>, N: number, C: number, I: number, gamma: ArrayLike<number>, beta: ArrayLike<number>, eps: number,
): Float64Array {
  const { mean, variance } = batchnormStatsRef(x, N, C, I);
  return batchnormApplyRef(x, C, I, mean, variance, gamma, beta, eps);
}
