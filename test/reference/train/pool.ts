/** CPU references of maxpool_fwd.wgsl (S×S windows, stride S) and avgpool_fwd.wgsl (global). */
export function maxpoolRef(x: ArrayLike<number>, N: number, C: number, H: number, W: number, S: number): { y: Float64Array; arg: Uint32Array } {
  const OH = Math.floor(H / S), OW = Math.floor(W / S);
  const y = new Float64Array(N * C * OH * OW), arg = new Uint32Array(y.length);
  for (let nc = 0; nc < N * C; nc++) {
    for (let oh = 0; oh < OH; oh++) {
      for (let ow = 0; ow < OW; ow++) {
        let best = -Infinity, at = 0;
        for (let dh = 0; dh < S; dh++) {
          for (let dw = 0; dw < S; dw++) {
            const i = (nc * H + oh * S + dh) * W + ow * S + dw;
            if (x[i] > best) best = x[i], at = i;
          }
        }
        const o = (nc * OH + oh) * OW + ow;
        y[o] = best;
        arg[o] = at;
      }
    }
  }
  return { y, arg };
}

export function avgpoolRef(x: ArrayLike<number>, NC: number, HW: number): Float64Array {
  const y = new Float64Array(NC);
  for (let o = 0; o < NC; o++) {
    let s = 0;
    for (let i = 0; i < HW; i++) s += x[o * HW + i];
    y[o] = s / HW;
  }
  return y;
}
