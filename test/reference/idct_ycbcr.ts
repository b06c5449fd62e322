/**
 * CPU reference of the hybrid JPEG path (shaders/preprocess/idct_planes.wgsl then
 * ycbcr_rgb.wgsl), written from the standards where they define the arithmetic:
 *   dequantization (products kept to 16 bits, as the decoders keep them) and the 8×8 IDCT in
 *   libjpeg's integer "islow" flow, the one the WASM decoder and the GPU kernel compute
 *   (idctIslowRef, test/reference/jpeg_idct.ts: the scalar version from the published flow,
 *   whose own test compares it with the f64 double sum of T.81 A.3.3), with the level shift
 *   A.3.1 and clamping;
 *   chroma upsampling: T.81 leaves it to the application (A.1.1); cassette's decoder uses
 *   libjpeg-turbo's triangle ("fancy") filter for 2×1, 1×2 and 2×2 and replication otherwise,
 *   and, as libjpeg's jdsample.c, for 2×1 and 2×2 only when the component is over 2 samples
 *   wide, with the component's own size ceil(X·Hi/Hmax) for edges, so the reference does too;
 *   YCbCr→RGB, JFIF 1.02 §7, products rounded as libjpeg's fixed-point tables round them.
 */
import type { JpegCoefficients, JpegComponentCoefficients } from "../../src/decode/jpeg.ts";
import { idctIslowRef } from "./jpeg_idct.ts";

/** One component's padded plane (blocksW·8 × blocksH·8 samples). */
export function idctPlaneRef(c: JpegComponentCoefficients): Uint8Array {
  const stride = c.blocksW * 8;
  const out = new Uint8Array(stride * c.blocksH * 8);
  const natural = new Array<number>(64);
  for (let b = 0; b < c.blocksW * c.blocksH; b++) {
    const bx = b % c.blocksW, by = Math.floor(b / c.blocksW);
    for (let k = 0; k < 64; k++) natural[k] = ((c.coefficients[b * 64 + k] * c.quant[k]) << 16) >> 16;
    const s = idctIslowRef(natural);
    for (let y = 0; y < 8; y++) out.set(s.subarray(y * 8, y * 8 + 8), (by * 8 + y) * stride + bx * 8);
  }
  return out;
}

/** Component `c` (plane from idctPlaneRef) at full-resolution pixel (x, y). */
function upsampledRef(c: JpegComponentCoefficients, plane: Uint8Array, rx: number, ry: number, x: number, y: number): number {
  const stride = c.blocksW * 8;
  const S = (i: number, j: number) => plane[j * stride + i];
  const cx = (i: number) => Math.min(c.width - 1, Math.max(0, i));
  const cy = (j: number) => Math.min(c.height - 1, Math.max(0, j));
  if (rx === 1 && ry === 1) return S(x, y);
  const fancyX = rx === 2 && c.width > 2;
  if (fancyX && ry === 1) {
    const i = x >> 1;
    return x & 1 ? (3 * S(i, y) + S(cx(i + 1), y) + 2) >> 2 : (3 * S(i, y) + S(cx(i - 1), y) + 1) >> 2;
  }
  if (ry === 2 && (rx === 1 || fancyX)) {
    const j = y >> 1, odd = (y & 1) === 1;
    const far = cy(odd ? j + 1 : j - 1);
    const col = (i: number) => 3 * S(i, j) + S(i, far);
    if (rx === 1) return (col(x) + (odd ? 2 : 1)) >> 2;
    const i = x >> 1;
    return x & 1 ? (3 * col(i) + col(cx(i + 1)) + 7) >> 4 : (3 * col(i) + col(cx(i - 1)) + 8) >> 4;
  }
  return S(Math.min(c.width - 1, Math.floor(x / rx)), Math.min(c.height - 1, Math.floor(y / ry)));
}

/** Decoded pixels (1 channel for gray, else 3) of a coefficient image. */
export function idctYcbcrRef(img: JpegCoefficients): { data: Uint8Array; width: number; height: number; channels: number } {
  const { width, height } = img;
  const hmax = Math.max(...img.components.map((c) => c.h)), vmax = Math.max(...img.components.map((c) => c.v));
  const planes = img.components.map(idctPlaneRef);
  const at = (k: number, x: number, y: number) => {
    const c = img.components[k];
    return upsampledRef(c, planes[k], hmax / c.h, vmax / c.v, x, y);
  };
  const channels = img.colorSpace === "gray" ? 1 : 3;
  const data = new Uint8Array(width * height * channels);
  // JFIF: R = Y + 1.402 Cr', G = Y − 0.344136 Cb' − 0.714136 Cr', B = Y + 1.772 Cb'; the
  // fractional parts rounded to 1/2^15 and each product rounded half up, as libjpeg does.
  const q = (a: number, k: number) => Math.floor((a * Math.round(k * 32768) + 16384) / 32768);
  const clamp = (v: number) => Math.min(255, Math.max(0, v));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const p = (y * width + x) * channels;
      const Y = at(0, x, y);
      if (channels === 1) {
        data[p] = Y;
        continue;
      }
      const b = at(1, x, y), c = at(2, x, y);
      if (img.colorSpace === "rgb") {
        data.set([Y, b, c], p);
        continue;
      }
      const cb = b - 128, cr = c - 128;
      data[p] = clamp(Y + cr + q(cr, 0.402));
      data[p + 1] = clamp(Y - q(cb, 0.344136) - q(cr, 0.714136));
      data[p + 2] = clamp(Y + cb + q(cb, 0.772));
    }
  }
  return { data, width, height, channels };
}
