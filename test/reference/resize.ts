/**
 * CPU reference of src/decode/crop.ts's resizeBilinear in f64, written from the definition
 * (crop, then bilinear with half-pixel centres as PyTorch's interpolate with
 * align_corners=False, no antialias), not from the code: one output value at a time.
 *
 *   source coordinate of output o:  t = (o + ½) · len / outLen − ½, clamped to [0, len − 1]
 *   value: (1 − ty)·((1 − tx)·p(i, j) + tx·p(i, j + 1)) + ty·(…row i + 1…), neighbours clamped
 *
 * The box may be fractional (x0, y0, w, h in source pixels): the crop is then the continuous
 * rectangle, and only its sample positions are clamped to the image.
 */
export interface RefImage {
  width: number;
  height: number;
  channels: number;
  /** Interleaved, row-major; any numbers (a box-filtered image's are fractional). */
  data: ArrayLike<number>;
}

/** Unrounded values (f64), interleaved as the image is. */
export function resizeBilinearRef(src: RefImage, x0: number, y0: number, w: number, h: number, outW: number, outH: number): Float64Array {
  const C = src.channels;
  const out = new Float64Array(outW * outH * C);
  const at = (x: number, y: number, c: number) => src.data[(y * src.width + x) * C + c];
  for (let oy = 0; oy < outH; oy++) {
    for (let ox = 0; ox < outW; ox++) {
      // Position within the crop, clamped to its first and last sample centres.
      const u = Math.min(Math.max((ox + 0.5) * (w / outW) - 0.5, 0), w - 1);
      const v = Math.min(Math.max((oy + 0.5) * (h / outH) - 0.5, 0), h - 1);
      // In image coordinates; the taps stay inside the crop for an integral box.
      const sx = x0 + u, sy = y0 + v;
      const i = Math.floor(sy), j = Math.floor(sx);
      const ty = sy - i, tx = sx - j;
      const i1 = Math.min(i + 1, src.height - 1), j1 = Math.min(j + 1, src.width - 1);
      for (let c = 0; c < C; c++) {
        const top = (1 - tx) * at(j, i, c) + tx * at(j1, i, c);
        const bottom = (1 - tx) * at(j, i1, c) + tx * at(j1, i1, c);
        out[(oy * outW + ox) * C + c] = (1 - ty) * top + ty * bottom;
      }
    }
  }
  return out;
}

/**
 * The mean of each k×k block (k = 1/scale), the last row and column of blocks cut at the
 * image's edge: what a JPEG decode at 1/k approximates, since its reduced IDCT keeps the
 * block's lowest frequencies, and the DC term alone is the block's mean (T.81 A.3.3).
 */
export function blockMeanRef(src: RefImage, k: number): { width: number; height: number; channels: number; data: Float64Array } {
  const C = src.channels;
  const width = Math.ceil(src.width / k), height = Math.ceil(src.height / k);
  const data = new Float64Array(width * height * C);
  for (let by = 0; by < height; by++) {
    for (let bx = 0; bx < width; bx++) {
      for (let c = 0; c < C; c++) {
        let sum = 0, n = 0;
        for (let y = by * k; y < Math.min((by + 1) * k, src.height); y++) {
          for (let x = bx * k; x < Math.min((bx + 1) * k, src.width); x++, n++) sum += src.data[(y * src.width + x) * C + c];
        }
        data[(by * width + bx) * C + c] = sum / n;
      }
    }
  }
  return { width, height, channels: C, data };
}

/** Largest |a − b| over all values, with its index. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): { max: number; at: number } {
  let max = 0, at = -1;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (d > max) (max = d), (at = i);
  }
  return { max, at };
}
