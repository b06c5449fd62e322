/**
 * CPU reference of softmax_xent.wgsl in f64: per-row losses, argmax hits, mean-loss gradient;
 * with `mix`, row r's target is λ·onehot(labels[r]) + (1 − λ)·onehot(others[r]).
 */
export function softmaxXentRef(z: ArrayLike<number>, labels: ArrayLike<number>, B: number, C: number, mix?: { others: ArrayLike<number>; lambda: number }) {
  const dz = new Float64Array(B * C);
  let loss = 0, hits = 0;
  for (let r = 0; r < B; r++) {
    let top = -Infinity, best = 0;
    for (let c = 0; c < C; c++) if (z[r * C + c] > top) top = z[r * C + c], best = c;
    let sum = 0;
    for (let c = 0; c < C; c++) sum += Math.exp(z[r * C + c] - top);
    const target = (c: number) => (mix ? mix.lambda * +(c === labels[r]) + (1 - mix.lambda) * +(c === mix.others[r]) : +(c === labels[r]));
    for (let c = 0; c < C; c++) loss -= target(c) * (z[r * C + c] - top - Math.log(sum));
    if (best === labels[r]) hits++;
    for (let c = 0; c < C; c++) dz[r * C + c] = (Math.exp(z[r * C + c] - top) / sum - target(c)) / B;
  }
  return { loss, hits, dz };
}
