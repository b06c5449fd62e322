/**
 * CPU reference of the augmentations (src/decode/augment.ts's NOTE [ Augmentations ]), in f64,
 * written from torchvision's functional ops on a float CHW tensor, not from cassette's code:
 * each op a function of the whole image, as adjust_brightness, adjust_contrast (a mean of
 * rgb_to_grayscale over the image), adjust_saturation, adjust_hue (_rgb2hsv, _hsv2rgb),
 * solarize and posterize are, then Normalize, then RandomErasing's box.
 *
 * It also marks the values a discontinuous op (solarize's threshold, posterize's floor) put
 * near their edge: there f32 and f64 may land on either side, and a test allows a whole step.
 */
import type { AugmentPlan, AugmentStep } from "../../src/decode/augment.ts";

/** A float image, channel-major: planes[c][y·W + x] in [0, 1]. */
export type Planes = number[][];

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

/** torchvision's _blend: ratio·a + (1 − ratio)·b, clamped to [0, 1]. */
function blend(a: Planes, b: Planes, ratio: number): Planes {
  return a.map((plane, c) => plane.map((v, i) => clamp01(ratio * v + (1 - ratio) * b[c][i])));
}

/** rgb_to_grayscale for a float image, one plane (a one-channel image is its own). */
function grayscale(img: Planes): number[] {
  if (img.length === 1) return img[0].slice();
  const [r, g, b] = img;
  return r.map((_, i) => 0.2989 * r[i] + 0.587 * g[i] + 0.114 * b[i]);
}

function adjustBrightness(img: Planes, f: number): Planes {
  return blend(img, img.map((p) => p.map(() => 0)), f);
}

function adjustContrast(img: Planes, f: number): Planes {
  const g = grayscale(img);
  const mean = g.reduce((a, v) => a + v, 0) / g.length;
  return blend(img, img.map((p) => p.map(() => mean)), f);
}

function adjustSaturation(img: Planes, f: number): Planes {
  if (img.length === 1) return img;
  const g = grayscale(img);
  return blend(img, [g, g, g], f);
}

/** _rgb2hsv then _hsv2rgb, one pixel at a time, h moved by f (mod 1). */
function adjustHue(img: Planes, f: number): Planes {
  if (img.length === 1) return img;
  const out: Planes = [[], [], []];
  for (let i = 0; i < img[0].length; i++) {
    const r = img[0][i], g = img[1][i], b = img[2][i];
    const maxc = Math.max(r, g, b), minc = Math.min(r, g, b);
    const eqc = maxc === minc;
    const cr = maxc - minc;
    const s = cr / (eqc ? 1 : maxc);
    const crDivisor = eqc ? 1 : cr;
    const rc = (maxc - r) / crDivisor, gc = (maxc - g) / crDivisor, bc = (maxc - b) / crDivisor;
    const hr = maxc === r ? bc - gc : 0;
    const hg = maxc === g && maxc !== r ? 2 + rc - bc : 0;
    const hb = maxc !== g && maxc !== r ? 4 + gc - rc : 0;
    let h = ((hr + hg + hb) / 6 + 1) % 1;
    h = h + f - Math.floor(h + f);
    const v = maxc;
    const i6 = Math.floor(h * 6), fr = h * 6 - i6;
    const p = clamp01(v * (1 - s)), q = clamp01(v * (1 - s * fr)), t = clamp01(v * (1 - s * (1 - fr)));
    const k = i6 % 6;
    out[0].push([v, q, p, p, t, v][k]);
    out[1].push([t, v, v, q, p, p][k]);
    out[2].push([p, p, t, v, v, q][k]);
  }
  return out;
}

/** Applies `steps` in order; `near` collects the indices (into planes[0]) a discontinuity left near its edge. */
function run(img: Planes, steps: readonly AugmentStep[], near: Set<number>): Planes {
  const EDGE = 1e-4;
  for (const { op, factor: f } of steps) {
    if (op === "brightness") img = adjustBrightness(img, f);
    else if (op === "contrast") img = adjustContrast(img, f);
    else if (op === "saturation") img = adjustSaturation(img, f);
    else if (op === "hue") img = adjustHue(img, f);
    else if (op === "solarize") {
      img.forEach((p) => p.forEach((v, i) => Math.abs(v - f) < EDGE && near.add(i)));
      img = img.map((p) => p.map((v) => (v >= f ? 1 - v : v)));
    } else if (op === "posterize") {
      const levels = 2 ** f;
      img.forEach((p) => p.forEach((v, i) => {
        const x = v * levels;
        if (Math.abs(x - Math.round(x)) < EDGE * levels) near.add(i);
      }));
      img = img.map((p) => p.map((v) => Math.min(Math.max(Math.floor(v * levels), 0), levels - 1) / levels));
    }
  }
  return img;
}

/**
 * The augmented, normalized image: `img` the resampled crop in [0, 1] (planes), the plan's
 * ops, Normalize(mean, std), the erased box. Returns the planes and the pixels near an edge.
 */
export function augmentRef(img: Planes, W: number, plan: AugmentPlan | undefined, mean: readonly number[], std: readonly number[]): { planes: Planes; near: Set<number> } {
  const near = new Set<number>();
  let out = run(img.map((p) => p.slice()), plan?.steps ?? [], near);
  out = out.map((p, c) => p.map((v) => (v - mean[c]) / std[c]));
  const e = plan?.erase;
  if (e) {
    for (let y = e.y; y < e.y + e.h; y++) for (let x = e.x; x < e.x + e.w; x++) out.forEach((p, c) => (p[y * W + x] = e.value[c]));
  }
  return { planes: out, near };
}
