/** CPU reference of the 8×8 inverse DCT (T.81 A.3.3) in f64, with level shift and clamping. */
export function idct8x8Ref(coef: Float32Array): Uint8Array {
  const out = new Uint8Array(64);
  const c = (k: number) => (k === 0 ? Math.SQRT1_2 : 1);
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 8; x++) {
      let s = 0;
      for (let v = 0; v < 8; v++) {
        for (let u = 0; u < 8; u++) {
          s += c(u) * c(v) * coef[v * 8 + u] * Math.cos(((2 * x + 1) * u * Math.PI) / 16) * Math.cos(((2 * y + 1) * v * Math.PI) / 16);
        }
      }
      out[y * 8 + x] = Math.min(255, Math.max(0, Math.round(s / 4 + 128)));
    }
  }
  return out;
}
