/**
 * CPU reference of shaders/preprocess/crop_resize_normalize.wgsl in f64, written from the
 * definitions (PIL's triangle filter, torchvision's Normalize), not from the shader: one output
 * pixel at a time, separable weights, edge taps dropped and the rest renormalized.
 */
import type { DecodedImage, ImagePlan } from "../../src/gpu/pack.ts";

export interface RefOptions {
  width: number;
  height: number;
  channels: 1 | 3;
  layout: "nchw" | "nhwc";
  mean: readonly number[];
  std: readonly number[];
  antialiasAbove?: number;
}

/** Source taps and weights (summing to 1) for output index o along one axis. */
export function taps(o: number, crop0: number, cropLen: number, outLen: number, n: number, above = 2): Array<[number, number]> {
  const s = cropLen / outLen;
  return tapsAt(crop0 + (o + 0.5) * s - 0.5, s, n, above);
}

/**
 * Source taps and weights (summing to 1) around source position t for a shrink factor s: PIL's
 * triangle filter of support r = 1, or s past `above`, within [0, n − 1]; none there: the
 * nearest edge pixel.
 */
export function tapsAt(t: number, s: number, n: number, above = 2): Array<[number, number]> {
  const r = s > above ? s : 1;
  const out: Array<[number, number]> = [];
  for (let j = Math.max(0, Math.floor(t - r) + 1); j <= Math.min(n - 1, Math.ceil(t + r) - 1); j++) {
    const w = 1 - Math.abs(j - t) / r;
    if (w > 0) out.push([j, w]);
  }
  if (out.length === 0) out.push([Math.min(n - 1, Math.max(0, Math.round(t))), 1]);
  const sum = out.reduce((a, [, w]) => a + w, 0);
  return out.map(([j, w]) => [j, w / sum]);
}

/** One image's output, laid out as the batch tensor would hold it (C·H·W or H·W·C values). */
export function preprocessRef(img: DecodedImage, plan: ImagePlan, o: RefOptions): Float32Array {
  const { width: W, height: H, channels: C } = o;
  const out = new Float32Array(W * H * C);
  const ic = img.channels;
  const xs = Array.from({ length: W }, (_, ox) => taps(plan.mirror ? W - 1 - ox : ox, plan.x, plan.w, W, img.width, o.antialiasAbove));
  for (let oy = 0; oy < H; oy++) {
    const ys = taps(oy, plan.y, plan.h, H, img.height, o.antialiasAbove);
    for (let ox = 0; ox < W; ox++) {
      const rgb = [0, 0, 0];
      for (const [y, wy] of ys) {
        for (const [x, wx] of xs[ox]) {
          const at = (y * img.width + x) * ic;
          for (let c = 0; c < 3; c++) rgb[c] += wy * wx * img.data[at + (ic === 1 ? 0 : c)];
        }
      }
      const values = C === 1 ? [ic === 1 ? rgb[0] : 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]] : rgb;
      for (let c = 0; c < C; c++) {
        const v = (values[c] / 255 - o.mean[c]) / o.std[c];
        out[o.layout === "nchw" ? c * W * H + oy * W + ox : (oy * W + ox) * C + c] = v;
      }
    }
  }
  return out;
}
