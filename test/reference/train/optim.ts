/** CPU references of sgd.wgsl and adamw.wgsl in f64 (torch.optim.SGD / AdamW semantics). */
export function sgdRef(w: Float64Array, g: ArrayLike<number>, v: Float64Array, lr: number, momentum: number, wd: number): void {
  for (let i = 0; i < w.length; i++) {
    v[i] = momentum * v[i] + g[i] + wd * w[i];
    w[i] -= lr * v[i];
  }
}

export function adamwRef(
  w: Float64Array, g: ArrayLike<number>, m: Float64Array, v: Float64Array, t: number,
  h: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number },
): void {
  for (let i = 0; i < w.length; i++) {
    w[i] *= 1 - h.lr * h.weightDecay;
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g[i];
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g[i] * g[i];
    const mhat = m[i] / (1 - h.beta1 ** t), vhat = v[i] / (1 - h.beta2 ** t);
    w[i] -= (h.lr * mhat) / (Math.sqrt(vhat) + h.eps);
  }
}
