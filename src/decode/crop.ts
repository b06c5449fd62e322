/**
 * CPU crops and resizes for per-sample transforms (transforms/random_resized_crop.ts): a
 * bilinear resize of one rectangle of an image, and the random box of torchvision's
 * RandomResizedCrop. The GPU does the same on a batch; its plans are drawn here too
 * (`planImage`, from the seed, epoch and sample id), with the region of pixels each plan reads
 * (`planRegion`), so that the box is known before decoding, wherever the decoding runs, and
 * only the box is decoded (src/gpu/decode_planned.ts).
 *
 * @example
 * ```ts
 * import { randomCropBox, resizeBilinear } from "./crop.ts";
 * const src = { width: 4, height: 2, channels: 1 as const, data: Uint8Array.of(0, 10, 20, 30, 40, 50, 60, 70), orientation: 1 };
 * const half = resizeBilinear(src, 0, 0, 4, 2, 2, 1);
 * console.assert(half.data[0] === 25 && half.data[1] === 45);
 * const box = randomCropBox(640, 480, Math.random);
 * console.assert(box.x >= 0 && box.x + box.w <= 640 && box.y + box.h <= 480);
 * ```
 */
import { CassetteError } from "../errors.ts";
import { hash32, rng } from "../plan/rng.ts";
import { roundHalfEven } from "../util/round.ts";
import { type DecodeOptions, type DecodeRegion, describe, type Image } from "./decoder.ts";
import { frameSize } from "./header.ts";
import { type AugmentOptions, type AugmentPlan, drawAugment, hasAugment } from "./augment.ts";

/** A rectangle in pixels: left, top, width, height. */
export interface CropBox {
  /** Left edge. */
  x: number;
  /** Top edge. */
  y: number;
  /** Width. */
  w: number;
  /** Height. */
  h: number;
}

/**
 * The rectangle (x0, y0, w, h) of `src`, resized to outW × outH by bilinear interpolation,
 * as torchvision's `resized_crop` on a uint8 tensor does without antialias: the crop first,
 * then half-pixel centres (output pixel o samples the crop at (o + ½)·w/outW − ½, PyTorch's
 * align_corners=False), coordinates clamped to the crop's edges, rounded to the nearest value.
 * Downscaling by more than 2 skips source pixels (no antialias): decode at a reduced scale
 * first where that matters (transforms/random_resized_crop.ts does).
 */
export function resizeBilinear(src: Image, x0: number, y0: number, w: number, h: number, outW: number, outH: number): Image {
  checkImage(src);
  const W = src.width, H = src.height, C = src.channels;
  checkInt("x0", x0, 0, W - 1);
  checkInt("y0", y0, 0, H - 1);
  checkInt("w", w, 1, W - x0);
  checkInt("h", h, 1, H - y0);
  checkInt("outW", outW, 1, 1 << 16);
  checkInt("outH", outH, 1, 1 << 16);
  // Per output column: the two source samples' byte offsets within a row and the right one's
  // weight, computed once rather than per pixel (outH rows share them).
  const xa = new Int32Array(outW), xb = new Int32Array(outW), fx = new Float64Array(outW);
  axis(x0, w, outW, (o, a, b, f) => {
    xa[o] = a * C;
    xb[o] = b * C;
    fx[o] = f;
  });
  const ya = new Int32Array(outH), yb = new Int32Array(outH), fy = new Float64Array(outH);
  axis(y0, h, outH, (o, a, b, f) => {
    ya[o] = a * W * C;
    yb[o] = b * W * C;
    fy[o] = f;
  });
  const s = src.data;
  const out = new Uint8Array(outW * outH * C);
  let k = 0;
  for (let oy = 0; oy < outH; oy++) {
    const r0 = ya[oy], r1 = yb[oy], wy = fy[oy];
    for (let ox = 0; ox < outW; ox++) {
      const a = r0 + xa[ox], b = r0 + xb[ox], c = r1 + xa[ox], d = r1 + xb[ox], wx = fx[ox];
      for (let ch = 0; ch < C; ch++) {
        const top = s[a + ch] + (s[b + ch] - s[a + ch]) * wx;
        const bottom = s[c + ch] + (s[d + ch] - s[c + ch]) * wx;
        // Values lie in [0, 255], so + ½ and truncation round to nearest (halves up).
        out[k++] = top + (bottom - top) * wy + 0.5;
      }
    }
  }
  return { width: outW, height: outH, channels: C, data: out, orientation: src.orientation };
}

/**
 * For each output index along one axis: the two source indices (absolute) and the weight of
 * the second. A position before the first sample centre is clamped to it (PyTorch's
 * area_pixel_compute_source_index clamps negatives to 0); past the last, both taps are the last.
 */
function axis(start: number, len: number, outLen: number, each: (o: number, a: number, b: number, f: number) => void): void {
  const step = len / outLen;
  for (let o = 0; o < outLen; o++) {
    const t = Math.max(0, (o + 0.5) * step - 0.5);
    const i = Math.min(Math.floor(t), len - 1);
    const j = Math.min(i + 1, len - 1);
    each(o, start + i, start + j, i === j ? 0 : t - i);
  }
}

/**
 * torchvision's RandomResizedCrop box (`get_params`), from its documented behaviour: up to ten
 * tries of an area drawn uniformly from `scale` (fractions of the image's area) and an aspect
 * ratio (width / height) drawn log-uniformly from `ratio`, sides rounded as Python's round();
 * the first that fits is placed uniformly at random. When none fits, the whole image, cut to
 * the nearest ratio bound if its own ratio is outside `ratio` (but never under 1 pixel, where
 * torchvision would give 0), centred.
 */
export function randomCropBox(
  width: number,
  height: number,
  random: () => number,
  scale: readonly [number, number] = [0.08, 1],
  ratio: readonly [number, number] = [3 / 4, 4 / 3],
): CropBox {
  checkInt("width", width, 1, Number.MAX_SAFE_INTEGER);
  checkInt("height", height, 1, Number.MAX_SAFE_INTEGER);
  if (typeof random !== "function") {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot pick a crop as 'random' must be a function: current value is ${show(random)}`);
  }
  checkRange("scale", scale, 1);
  checkRange("ratio", ratio, Infinity);
  const area = width * height;
  const lo = Math.log(ratio[0]), hi = Math.log(ratio[1]);
  for (let attempt = 0; attempt < 10; attempt++) {
    const target = area * (scale[0] + random() * (scale[1] - scale[0]));
    const aspect = Math.exp(lo + random() * (hi - lo));
    const w = roundHalfEven(Math.sqrt(target * aspect));
    const h = roundHalfEven(Math.sqrt(target / aspect));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const y = Math.floor(random() * (height - h + 1));
      const x = Math.floor(random() * (width - w + 1));
      return { x, y, w, h };
    }
  }
  let w = width, h = height;
  if (width / height < ratio[0]) h = roundHalfEven(width / ratio[0]);
  else if (width / height > ratio[1]) w = roundHalfEven(height * ratio[1]);
  w = Math.max(1, Math.min(width, w));
  h = Math.max(1, Math.min(height, h));
  return { x: Math.floor((width - w) / 2), y: Math.floor((height - h) / 2), w, h };
}

/** How each image becomes an output of fixed size. */
export type CropPolicy =
  /** The whole image, stretched to the output size. */
  | { kind: "resize" }
  /**
   * torchvision `Resize(resize)` then `CenterCrop(output)`: the shorter side is scaled to
   * `resize` (default: the output's shorter side), the centre cut out.
   */
  | { kind: "center"; resize?: number }
  /**
   * torchvision `RandomResizedCrop(output, scale, ratio)`: a box of random area (fraction of the
   * image in `scale`) and aspect ratio (log-uniform in `ratio`), at a random place, resized.
   */
  | { kind: "random-resized"; scale?: readonly [number, number]; ratio?: readonly [number, number] };

/** Where each image's pixels are taken from and how they are sized: output size, crop policy, mirror probability and seed. */
export interface PlanOptions {
  /** Output width and height in pixels. */
  width: number;
  /** Output height in pixels. */
  height: number;
  /** Default `{ kind: "resize" }`. */
  crop?: CropPolicy;
  /** Probability of a left–right mirror per image (default 0). */
  flip?: number;
  /** Seed of every random choice (default 0). */
  seed?: number;
  /** Colour ops and erasing drawn per sample (augment.ts, NOTE [ Augmentations ]). */
  augment?: AugmentOptions;
}

/** What the GPU does to one image: the source box to sample, and whether to mirror it. */
export interface ImagePlan {
  /** Left of the crop box, in source pixels (the box may be fractional). */
  x: number;
  /** Top of the crop box, in source pixels. */
  y: number;
  /** Width of the crop box, in source pixels. */
  w: number;
  /** Height of the crop box, in source pixels. */
  h: number;
  /** Whether the crop is mirrored left–right. */
  mirror: boolean;
  /** The sample's colour ops and erased box, when the options augment and any applies to it. */
  augment?: AugmentPlan;
}

/** A sample id: the UUID string of the store, or any number. */
export type SampleKey = string | number;

/** Whether a policy draws random numbers (and so needs sample ids). */
export function isRandom(o: PlanOptions): boolean {
  return (o.crop?.kind === "random-resized") || (o.flip ?? 0) > 0 || hasAugment(o.augment);
}

/**
 * The plan of one image, a pure function of its size, the options and (seed, epoch, id):
 * the same arguments give the same box on every runtime.
 *
 * @example
 * ```ts
 * import { planImage } from "cassette/gpu";
 * const opts = { width: 224, height: 224, crop: { kind: "random-resized" }, flip: 0.5, seed: 7 } as const;
 * const a = planImage(640, 480, opts, 3, "6ceecba5-0000-5000-8000-000000000000");
 * const b = planImage(640, 480, opts, 3, "6ceecba5-0000-5000-8000-000000000000");
 * console.assert(JSON.stringify(a) === JSON.stringify(b));
 * console.log(a.w <= 640 && a.h <= 480); // true
 * ```
 */
export function planImage(width: number, height: number, o: PlanOptions, epoch: number, id: SampleKey): ImagePlan {
  const crop = o.crop ?? { kind: "resize" };
  const key = typeof id === "number" ? id : hash32(id);
  // Two independent streams, so that changing the flip probability keeps the crops.
  const r = rng(o.seed ?? 0, epoch, key, 1);
  const [x, y, w, h] = planBox(crop, width, height, o.width, o.height, r.next);
  const p = o.flip ?? 0;
  const mirror = p > 0 && rng(o.seed ?? 0, epoch, key, 2).next() < p;
  // Augmentations draw from streams 3 on (augment.ts), leaving the crops and flips as they were.
  const augment = o.augment && drawAugment(o.augment, o.seed ?? 0, epoch, key, o.width, o.height);
  return augment ? { x, y, w, h, mirror, augment } : { x, y, w, h, mirror };
}

/**
 * Resize so the shorter side is `resize`, then centre-crop outW × outH, expressed as a box in
 * source pixels. torchvision's Resize truncates the longer side (int(long · resize / short))
 * and CenterCrop offsets by round((size − crop) / 2); the box follows both exactly.
 */
function centerBox(w: number, h: number, outW: number, outH: number, resize: number): [number, number, number, number] {
  const [rw, rh] = w <= h ? [resize, Math.floor((h * resize) / w)] : [Math.floor((w * resize) / h), resize];
  const sx = w / rw, sy = h / rh;
  const left = roundHalfEven((rw - outW) / 2), top = roundHalfEven((rh - outH) / 2);
  return [left * sx, top * sy, outW * sx, outH * sy];
}

/**
 * The box of one image under a policy, in its pixels (fractional for "center"): the one place
 * boxes are drawn, for the GPU's plans (planImage) and the CPU's transforms
 * (transforms/random_resized_crop.ts) alike; "random-resized" is `randomCropBox` on `random`.
 */
export function planBox(
  crop: CropPolicy, width: number, height: number, outW: number, outH: number, random: () => number,
): [number, number, number, number] {
  if (crop.kind === "resize") return [0, 0, width, height];
  if (crop.kind === "center") return centerBox(width, height, outW, outH, crop.resize ?? Math.min(outW, outH));
  const b = randomCropBox(width, height, random, crop.scale ?? [0.08, 1], crop.ratio ?? [3 / 4, 4 / 3]);
  return [b.x, b.y, b.w, b.h];
}

/** Pixels cut from a larger image: their place in it (x, y) and its size (the frame's). */
export interface FrameBox {
  /** Column of the pixels' left edge in the frame. */
  x: number;
  /** Row of the pixels' top edge in the frame. */
  y: number;
  /** The frame's width (what the plan was drawn on). */
  width: number;
  /** The frame's height. */
  height: number;
}

/**
 * The whole-pixel box of a `width` × `height` image that resampling `plan`'s box to
 * outW × outH reads (shaders/preprocess/crop_resize_normalize.wgsl: per axis, output o is
 * centred at t = x + (o + ½)·s − ½, s = w / outW, and takes the pixels j with |j − t| < r,
 * r = 1, or s past `antialiasAbove`), one pixel wider each side for the shader's f32 rounding,
 * clipped to the image: decode this region, and the shader reads the same pixels as from the
 * whole image. A box wholly outside the image reads the nearest edge pixel, which it keeps.
 */
export function planRegion(
  plan: { x: number; y: number; w: number; h: number; augment?: AugmentPlan }, width: number, height: number, outW: number, outH: number, antialiasAbove = 2,
): { x: number; y: number; width: number; height: number } {
  // A geometric op samples anywhere in the crop, up to half a pixel past its edge pixels.
  const warped = !!plan.augment?.warp;
  const [x0, x1] = taps(plan.x, plan.w, outW, width, antialiasAbove, warped);
  const [y0, y1] = taps(plan.y, plan.h, outH, height, antialiasAbove, warped);
  return { x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1 };
}

/** A GPU preprocessor's plan as decoding takes it: its options (output size, crop, flip, seed) and how far resampling reaches. */
export interface PlannedDecodeOptions extends PlanOptions {
  /** The preprocessor's `antialiasAbove` (default 2): it sets how far each output pixel reads. */
  antialiasAbove?: number;
}

/**
 * Decode options that decode only what a GPU plan reads (the Loader's `decode`, in read
 * workers): `plan` is the preprocessor's options (`pre.options`); each sample's box is drawn
 * from its header's size and (seed, epoch, id) as the preprocessor draws it.
 */
export interface PlannedDecode extends DecodeOptions {
  /** The preprocessor's options. */
  plan: PlannedDecodeOptions;
}

/** Whether decode options ask for a planned decode. */
export function isPlannedDecode(o: unknown): o is PlannedDecode {
  return typeof o === "object" && o !== null && typeof (o as PlannedDecode).plan === "object" && (o as PlannedDecode).plan !== null;
}

/**
 * The region to decode for sample `id` of `epoch` under `plan`, and where it lies in the
 * image (its frame): undefined when the header gives no size (decode it whole).
 */
export function planDecode(bytes: Uint8Array, plan: PlannedDecodeOptions, epoch: number, id: SampleKey): { region: DecodeRegion; frame: FrameBox } | undefined {
  const size = frameSize(bytes);
  if (!size) return undefined;
  const p = planImage(size.width, size.height, plan, epoch, id);
  const region = planRegion(p, size.width, size.height, plan.width, plan.height, plan.antialiasAbove ?? 2);
  return { region, frame: { x: region.x, y: region.y, width: size.width, height: size.height } };
}

/**
 * One sample's decode options under a planned decode: the region its plan reads, with the frame
 * it lies in, or the options without the plan where that box is not known for sure (a random
 * plan and no `epoch`: the tensor then plans the whole image). Other options pass as they are.
 */
export function planFor(options: DecodeOptions | undefined, bytes: Uint8Array, epoch: number | undefined, id: SampleKey): { options?: DecodeOptions; frame?: FrameBox } {
  if (!isPlannedDecode(options)) return { options };
  const { plan, ...rest } = options;
  const planned = isRandom(plan) && epoch === undefined ? undefined : planDecode(bytes, plan, epoch ?? 0, id);
  return planned ? { options: { ...rest, region: planned.region }, frame: planned.frame } : { options: rest };
}

/** First and last pixel one axis's resampling reads (see planRegion), within [0, n − 1]. */
function taps(start: number, len: number, outLen: number, n: number, antialiasAbove: number, warped: boolean): [number, number] {
  const s = len / outLen, r = s > antialiasAbove ? s : 1;
  const first = warped ? start - 0.5 : start + 0.5 * s - 0.5, last = warped ? start + len - 0.5 : start + (outLen - 0.5) * s - 0.5;
  // The taps run from floor(first − r) + 1 to ceil(last + r) − 1; one more each side.
  const lo = Math.min(Math.max(Math.floor(first - r), 0), n - 1);
  const hi = Math.max(Math.min(Math.ceil(last + r), n - 1), 0);
  return [Math.min(lo, hi), Math.max(lo, hi)];
}

function checkImage(src: Image): void {
  const ok = typeof src === "object" && src !== null && Number.isInteger(src.width) && Number.isInteger(src.height) &&
    src.width > 0 && src.height > 0 && [1, 2, 3, 4].includes(src.channels) && src.data instanceof Uint8Array &&
    src.data.length === src.width * src.height * src.channels;
  if (!ok) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resize as 'src' must be an image (width, height, channels 1…4, data of width × height × channels bytes): current value is ${show(src)}`);
  }
}

function checkInt(name: string, x: number, lo: number, hi: number): void {
  if (!Number.isInteger(x) || x < lo || x > hi) {
    const what = name === "width" || name === "height" ? "pick a crop" : "resize";
    const range = hi === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${lo}` : `an integer in [${lo}, ${hi}]`;
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ${what} as '${name}' must be ${range}: current value is ${show(x)}`);
  }
}

/** `[lo, hi]` with 0 < lo ≤ hi ≤ max, finite. */
function checkRange(name: string, r: readonly [number, number], max: number): void {
  const ok = Array.isArray(r) && r.length === 2 && r.every((v) => typeof v === "number" && Number.isFinite(v)) &&
    r[0] > 0 && r[0] <= r[1] && r[1] <= max;
  if (!ok) {
    const bound = max === Infinity ? "0 < lo ≤ hi" : `0 < lo ≤ hi ≤ ${max}`;
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot pick a crop as '${name}' must be [lo, hi] with ${bound}: current value is ${show(r)}`);
  }
}

/** A value as a message shows it: numbers and pairs as written, others by type. */
export function show(x: unknown): string {
  if (typeof x === "number") return String(x);
  if (Array.isArray(x) && x.length <= 4) return `[${x.map(show).join(", ")}]`;
  return describe(x);
}
