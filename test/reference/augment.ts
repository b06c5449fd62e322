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
import { tapsAt } from "./preprocess.ts";

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

/** torchvision's autocontrast for a float image: each channel's [min, max] stretched to [0, 1] (a flat one left, min 0, scale 1). */
function autocontrast(img: Planes): Planes {
  return img.map((p) => {
    const lo = Math.min(...p), hi = Math.max(...p);
    const scale = 1 / (hi - lo);
    const [m, k] = Number.isFinite(scale) ? [lo, scale] : [0, 1];
    return p.map((v) => Math.min(1, Math.max(0, (v - m) * k)));
  });
}

/**
 * torchvision's adjust_sharpness: the image blended with its "degenerate", the 3×3 kernel
 * [1 1 1; 1 5 1; 1 1 1] / 13 convolved over the inside (a valid convolution) with the border
 * kept from the image; images of ≤ 2 rows or columns returned as they are.
 */
function adjustSharpness(img: Planes, W: number, f: number): Planes {
  const H = img[0].length / W;
  if (W <= 2 || H <= 2) return img;
  const kernel = [1, 1, 1, 1, 5, 1, 1, 1, 1].map((v) => v / 13);
  const degenerate = img.map((p) => p.map((v, i) => {
    const x = i % W, y = Math.floor(i / W);
    if (x === 0 || y === 0 || x === W - 1 || y === H - 1) return v;
    let acc = 0;
    for (let k = 0; k < 9; k++) acc += kernel[k] * p[(y + Math.floor(k / 3) - 1) * W + x + (k % 3) - 1];
    return acc;
  }));
  return blend(img, degenerate, f);
}

/** Applies `steps` in order; `near` collects the indices (into planes[0]) a discontinuity left near its edge. */
function run(img: Planes, W: number, steps: readonly AugmentStep[], near: Set<number>): Planes {
  // The GPU's value before the op may differ from f64's by the resampling's 1e-4 times what the
  // ops before it stretch (each ≤ 2, hue more near grey): a band of 2e-3 holds that.
  const EDGE = 2e-3;
  for (const { op, factor: f } of steps) {
    if (op === "brightness") img = adjustBrightness(img, f);
    else if (op === "contrast") img = adjustContrast(img, f);
    else if (op === "saturation") img = adjustSaturation(img, f);
    else if (op === "hue") img = adjustHue(img, f);
    else if (op === "autocontrast") img = autocontrast(img);
    else if (op === "sharpness") img = adjustSharpness(img, W, f);
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
  let out = run(img.map((p) => p.slice()), W, plan?.steps ?? [], near);
  if (plan?.blur) out = out.map((p) => gaussianBlur2d(p, W, p.length / W, plan.blur!.kernel, plan.blur!.sigma));
  out = out.map((p, c) => p.map((v) => (v - mean[c]) / std[c]));
  const e = plan?.erase;
  if (e) {
    for (let y = e.y; y < e.y + e.h; y++) for (let x = e.x; x < e.x + e.w; x++) out.forEach((p, c) => (p[y * W + x] = e.value[c]));
  }
  return { planes: out, near };
}

/**
 * torchvision's gaussian_blur on one plane, as a 2-D convolution: the kernel the outer product of
 * _get_gaussian_kernel1d (exp(−½·(x/σ)²) at x = −(k−1)/2 … (k−1)/2, normalized) with itself,
 * the plane padded by reflection (torch.nn.functional.pad's "reflect", the edge not repeated).
 */
export function gaussianBlur2d(plane: number[], W: number, H: number, k: number, sigma: number): number[] {
  const half = (k - 1) / 2;
  const g = Array.from({ length: k }, (_, i) => Math.exp(-0.5 * ((-half + i) / sigma) ** 2));
  const total = g.reduce((a, v) => a + v, 0);
  const k1 = g.map((v) => v / total);
  const pad = (i: number, n: number): number => {
    if (n === 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
    return i;
  };
  const out = new Array<number>(W * H).fill(0);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      let acc = 0;
      for (let dy = 0; dy < k; dy++) {
        for (let dx = 0; dx < k; dx++) acc += k1[dy] * k1[dx] * plane[pad(y + dy - half, H) * W + pad(x + dx - half, W)];
      }
      out[y * W + x] = acc;
    }
  }
  return out;
}

/** A 3×3 matrix, row-major, acting on (x, y, 1). */
export type M3 = number[];
const mul = (a: M3, b: M3): M3 => Array.from({ length: 9 }, (_, k) => a[Math.floor(k / 3) * 3] * b[k % 3] + a[Math.floor(k / 3) * 3 + 1] * b[3 + (k % 3)] + a[Math.floor(k / 3) * 3 + 2] * b[6 + (k % 3)]);
const translate = (x: number, y: number): M3 => [1, 0, x, 0, 1, y, 0, 0, 1];

/** The inverse of a 3×3 matrix, by cofactors. */
export function invert(m: M3): M3 {
  const [a, b, c, d, e, f, g, h, i] = m;
  const A = e * i - f * h, B = -(d * i - f * g), C = d * h - e * g;
  const det = a * A + b * B + c * C;
  return [A, -(b * i - c * h), b * f - c * e, B, a * i - c * g, -(a * f - c * d), C, -(a * h - b * g), a * e - b * d].map((x) => x / det);
}

/**
 * torchvision's affine as a forward map of pixel positions measured from the image's centre
 * (y down): about `center`, shear x then shear y, scale, rotation by `angle` degrees clockwise,
 * then the translation; its docs' RSS = R(a)·S(s)·SHy(sy)·SHx(sx).
 */
export function affineForward(angle: number, shift: readonly [number, number], scale: number, shear: readonly [number, number], center: readonly [number, number] = [0, 0]): M3 {
  const rad = Math.PI / 180;
  const a = angle * rad;
  const R = [Math.cos(a), -Math.sin(a), 0, Math.sin(a), Math.cos(a), 0, 0, 0, 1];
  const S = [scale, 0, 0, 0, scale, 0, 0, 0, 1];
  const shy = [1, 0, 0, -Math.tan(shear[1] * rad), 1, 0, 0, 0, 1];
  const shx = [1, -Math.tan(shear[0] * rad), 0, 0, 1, 0, 0, 0, 1];
  const rss = mul(mul(mul(R, S), shy), shx);
  return mul(mul(translate(center[0] + shift[0], center[1] + shift[1]), rss), translate(-center[0], -center[1]));
}

/** Where output pixel (x, y) is taken from under a forward map, in pixel indices of a W × H image. */
export function sourceOf(forward: M3, x: number, y: number, W: number, H: number): [number, number] {
  const inv = invert(forward);
  const cx = x - (W - 1) / 2, cy = y - (H - 1) / 2;
  return [inv[0] * cx + inv[1] * cy + inv[2] + (W - 1) / 2, inv[3] * cx + inv[4] * cy + inv[5] + (H - 1) / 2];
}

/**
 * The crop resized to W × H, mirrored, then each geometric op's forward map in turn (fill where a
 * pixel comes from outside), as planes in [0, 1]: the resized crop evaluated at the one
 * position each output pixel comes from. `near` gets the pixels whose position is within 1e-3
 * of an edge of the image at some op, where f32 and f64 may fill differently.
 */
export function warpedRef(
  img: { width: number; height: number; channels: number; data: Uint8Array }, plan: { x: number; y: number; w: number; h: number; mirror: boolean },
  forwards: readonly M3[], fill: readonly number[], W: number, H: number, C: number, above = 2,
): { planes: Planes; near: Set<number> } {
  const planes: Planes = Array.from({ length: C }, () => new Array<number>(W * H).fill(0));
  const near = new Set<number>();
  const sx = plan.w / W, sy = plan.h / H;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const k = y * W + x;
      let q: [number, number] = [x, y], outside = false;
      for (let i = forwards.length - 1; i >= 0 && !outside; i--) {
        q = sourceOf(forwards[i], q[0], q[1], W, H);
        const edge = Math.min(Math.abs(q[0] + 0.5), Math.abs(q[0] - (W - 0.5)), Math.abs(q[1] + 0.5), Math.abs(q[1] - (H - 0.5)));
        if (edge < 1e-3) near.add(k);
        outside = q[0] < -0.5 || q[0] >= W - 0.5 || q[1] < -0.5 || q[1] >= H - 0.5;
      }
      if (outside) {
        for (let c = 0; c < C; c++) planes[c][k] = fill[c];
        continue;
      }
      const u = plan.mirror ? W - 1 - q[0] : q[0];
      const xs = tapsAt(plan.x + (u + 0.5) * sx - 0.5, sx, img.width, above);
      const ys = tapsAt(plan.y + (q[1] + 0.5) * sy - 0.5, sy, img.height, above);
      const rgb = [0, 0, 0];
      for (const [j, wy] of ys) {
        for (const [i, wx] of xs) {
          const at = (j * img.width + i) * img.channels;
          for (let c = 0; c < 3; c++) rgb[c] += wy * wx * img.data[at + (img.channels === 1 ? 0 : c)];
        }
      }
      if (C === 1) planes[0][k] = (img.channels === 1 ? rgb[0] : 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255;
      else for (let c = 0; c < 3; c++) planes[c][k] = rgb[c] / 255;
    }
  }
  return { planes, near };
}
