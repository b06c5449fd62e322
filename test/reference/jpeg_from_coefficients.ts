/**
 * Pixels from a coefficient-mode result, in plain f64 TS: dequantize, IDCT (T.81 A.3.3), JFIF
 * YCbCr → RGB. For unsubsampled images only (4:4:4 or grey): enough to check coefficient mode
 * against djpeg without sharing any code with the wasm decoder.
 */
import type { JpegCoefficients } from "../../src/decode/jpeg.ts";
import { idctFloat } from "./jpeg_idct.ts";

export function pixelsFromCoefficients(c: JpegCoefficients): Uint8Array {
  const { width: W, height: H } = c;
  const planes = c.components.map((comp) => {
    if (comp.h !== c.components[0].h || comp.v !== c.components[0].v) throw new Error("subsampled: not handled by this reference");
    const plane = new Float64Array(comp.blocksW * 8 * comp.blocksH * 8);
    const stride = comp.blocksW * 8;
    const deq = new Float64Array(64);
    for (let by = 0; by < comp.blocksH; by++) {
      for (let bx = 0; bx < comp.blocksW; bx++) {
        const o = (by * comp.blocksW + bx) * 64;
        for (let i = 0; i < 64; i++) deq[i] = comp.coefficients[o + i] * comp.quant[i];
        const s = idctFloat(deq);
        for (let y = 0; y < 8; y++) for (let x = 0; x < 8; x++) plane[(by * 8 + y) * stride + bx * 8 + x] = s[y * 8 + x];
      }
    }
    return { plane, stride };
  });
  const ch = planes.length === 1 ? 1 : 3;
  const out = new Uint8Array(W * H * ch);
  const clamp = (v: number) => Math.min(255, Math.max(0, Math.round(v)));
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const s = planes.map((p) => Math.min(255, Math.max(0, p.plane[y * p.stride + x])));
      if (ch === 1) {
        out[y * W + x] = clamp(s[0]);
        continue;
      }
      const [Y, cb, cr] = [s[0], s[1] - 128, s[2] - 128];
      const o = (y * W + x) * 3;
      out[o] = clamp(Y + 1.402 * cr);
      out[o + 1] = clamp(Y - 0.344136 * cb - 0.714136 * cr);
      out[o + 2] = clamp(Y + 1.772 * cb);
    }
  }
  return out;
}
