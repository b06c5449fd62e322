/** CPU reference of softmax_xent.wgsl in f64: per-row losses, argmax hits, mean-loss gradient. */
export function softmaxXentRef(z: ArrayLike<number>, labels: ArrayLike<number>, B: number, C: number) {
  const dz = new Float64Array(B * C);
  let loss = 0, hits = 0;
  for (let r = 0; r < B; r++) {
    let top = -Infinity, best = 0;
    for (let c = 0; c < C; c++) if (z[r * C + c] > top) top = z[r * C + c], best = c;
    let sum = 0;
    for (let c = 0; c < C; c++) sum += Math.exp(z[r * C + c] - top);
    loss += Math.log(sum) - (z[r * C + labels[r]] - top);
    if (best === labels[r]) hits++;
    for (let c = 0; c < C; c++) dz[r * C + c] = (Math.exp(z[r * C + c] - top) / sum - (c === labels[r] ? 1 : 0)) / B;
  }
  return { loss, hits, dz };
}
