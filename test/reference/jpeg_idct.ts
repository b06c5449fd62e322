/**
 * CPU references for the decoder's transforms, in f64 straight from T.81 A.3.3:
 * the 8×8 IDCT (unrounded), and the scaled outputs as means of the full-size samples.
 */

/** s(y,x) + 128 for natural-order dequantized coefficients, unrounded and unclamped. */
export function idctFloat(coef: ArrayLike<number>): Float64Array {
  const out = new Float64Array(64);
  const c = (k: number) => (k === 0 ? Math.SQRT1_2 : 1);
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 8; x++) {
      let s = 0;
      for (let v = 0; v < 8; v++) {
        for (let u = 0; u < 8; u++) {
          s += c(u) * c(v) * coef[v * 8 + u] * Math.cos(((2 * x + 1) * u * Math.PI) / 16) * Math.cos(((2 * y + 1) * v * Math.PI) / 16);
        }
      }
      out[y * 8 + x] = s / 4 + 128;
    }
  }
  return out;
}

/** n×n block (n = 8, 4, 2, 1): means of (8/n)² full samples, rounded and clamped to u8. */
export function idctScaledRef(coef: ArrayLike<number>, n: number): Uint8Array {
  const full = idctFloat(coef);
  const r = 8 / n;
  const out = new Uint8Array(n * n);
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      let s = 0;
      for (let j = 0; j < r; j++) for (let i = 0; i < r; i++) s += full[(y * r + j) * 8 + x * r + i];
      out[y * n + x] = Math.min(255, Math.max(0, Math.round(s / (r * r))));
    }
  }
  return out;
}
