/**
 * Augmentations of the preprocessing pass: colour ops and random erasing drawn per sample from
 * (seed, epoch, sample id), as the crop and flip are (crop.ts `planImage`), and run by either
 * executor: the GPU's pass (shaders/preprocess/augment.wgsl, src/gpu/augment.ts) or the CPU's
 * tensor (tensor.ts `cpuTensor`, with `applyAugment` below). The draws are made here only, so a
 * sample gets the same ops on every runtime and adapter, fused or not.
 *
 * NOTE [ Augmentations ]
 * Each op is torchvision's on a float image in [0, 1] (its tensor path: no rounding to 8 bits
 * between ops), applied to the resampled crop, in this order: the geometric ops (the policy's,
 * then RandomAffine's or RandomRotation's), the policy's colour op (TrivialAugment), the colour
 * jitter's four in their drawn order, solarize, posterize; then Normalize; then random erasing
 * on the normalized tensor (where torchvision's recipes put RandomErasing).
 *   affine         torchvision's affine on the crop (its _get_inverse_affine_matrix: angle
 *                  clockwise in degrees, translate in output pixels, scale, shear in degrees,
 *                  about the centre; rotate(a) is affine(−a): counter-clockwise): each output
 *                  pixel's position mapped back through the ops; one that falls outside the
 *                  crop (at or past half a pixel beyond its edge pixels, as nearest sampling
 *                  finds it) gets `fill` (default 0, black; in [0, 1], before the colour ops).
 *   brightness f   v ← clamp(f·v, 0, 1)                                  adjust_brightness
 *   contrast f     v ← clamp(f·v + (1 − f)·m, 0, 1), m the mean over the image of the grey
 *                  0.2989 r + 0.587 g + 0.114 b (one channel: its mean)  adjust_contrast
 *   saturation f   v ← clamp(f·v + (1 − f)·grey(v), 0, 1); one channel: unchanged
 *                                                                        adjust_saturation
 *   hue f          RGB → HSV, h ← (h + f) mod 1, back (torchvision's _rgb2hsv/_hsv2rgb);
 *                  one channel: unchanged                                adjust_hue
 *   solarize t     v ← 1 − v where v ≥ t                                 solarize (float)
 *   posterize b    v ← min(⌊v·2^b⌋, 2^b − 1) / 2^b                       v2 posterize (float)
 *   autocontrast   per channel v ← clamp((v − min) / (max − min), 0, 1) over the image; a flat
 *                  channel as it is                                      autocontrast
 *   sharpness f    v ← clamp(f·v + (1 − f)·s, 0, 1), s the image smoothed by [1 1 1; 1 5 1;
 *                  1 1 1] / 13, its border pixels their own (an image of ≤ 2 rows or columns
 *                  as it is)                                             adjust_sharpness
 *   blur k σ       after the colour ops: a k-tap Gaussian, w_i ∝ exp(−½·((i − (k−1)/2) / σ)²),
 *                  along rows then columns, the image extended by reflection  gaussian_blur
 *   erase          a box of the normalized tensor set to `value` (default 0, the mean colour)
 * Draws, each from its own stream so that one option never moves another's draws (and the
 * crops stay those of the same seed without augmentation: streams 1 and 2 are crop.ts's):
 *   3  ColorJitter.get_params: applied with probability p (default 1), then a permutation of
 *      the four ops, then the factors of those set, uniform in their ranges
 *   4  TrivialAugmentWide: an op uniform among TRIVIAL_OPS, a magnitude bin uniform in 0…30,
 *      and for signed ops a sign
 *   5  RandomSolarize, 6 RandomPosterize: applied with probability p (default 0.5)
 *   8  RandomAffine.get_params: applied with probability p (default 1): angle, then translation
 *      (whole pixels, rounded half to even), scale, shear x, shear y; 9 RandomRotation: the angle
 *   11 GaussianBlur.get_params: applied with probability p (default 1), σ uniform in `sigma`
 *   7  RandomErasing.get_params on the output size: applied with probability p (default 0.5),
 *      up to ten tries of an area share uniform in `scale` and an aspect (h / w) log-uniform in
 *      `ratio`, sides rounded half to even; the first that fits (h < H, w < W) placed uniformly.
 *      A side of 0 erases nothing.
 * What differs from torchvision, and why:
 *   - a geometric op is fused into the crop's resampling: each output pixel samples the source
 *     once, at its mapped position, with the pass's filter (bilinear; antialiased when the crop
 *     shrinks), where torchvision resizes first and then resamples the result (nearest by
 *     default): one interpolation instead of two
 *   - the ops act on the resampled crop in f32 (the GPU) or f64 (the CPU), not on 8-bit PIL
 *     images: no rounding between ops; results agree with the f64 reference within 1e-3 after
 *     normalization (test/gpu/augment.test.ts)
 *   - TrivialAugment chooses among the ops built so far (TRIVIAL_OPS): all of TrivialAugmentWide's
 *     but equalize (a histogram of 8-bit values), 13 of its 14
 *   - random erasing fills with a constant, not per-pixel noise (`value="random"`)
 *   - a blur kernel wider than the image reflects again where torch's padding refuses it
 *   - the random numbers are cassette's seeded stream (src/plan/rng.ts), not torch's generator:
 *     the same distributions, not the same draws
 *
 * @example
 * ```ts
 * import { drawAugment } from "cassette/decode";
 * const a = drawAugment({ jitter: { brightness: 0.4, hue: 0.1 }, erase: { p: 1 } }, 7, 0, 42, 32, 32);
 * const b = drawAugment({ jitter: { brightness: 0.4, hue: 0.1 }, erase: { p: 1 } }, 7, 0, 42, 32, 32);
 * console.assert(JSON.stringify(a) === JSON.stringify(b));
 * console.log(a!.steps.map((s) => s.op).sort().join(" ")); // brightness hue
 * ```
 */
import { CassetteError } from "../errors.ts";
import { type Rng, rng, shuffle } from "../plan/rng.ts";
import { roundHalfEven } from "../util/round.ts";
import { checkMix, type BatchMixOptions } from "./mix.ts";

/** A factor's range: [lo, hi], or v for torchvision's [max(0, 1 − v), 1 + v] (hue: [−v, v]). */
export type FactorRange = number | readonly [number, number];

/** torchvision's ColorJitter: each factor drawn uniformly from its range, the four applied in a random order. */
export interface ColourJitter {
  /** Brightness factor range. */
  brightness?: FactorRange;
  /** Contrast factor range. */
  contrast?: FactorRange;
  /** Saturation factor range. */
  saturation?: FactorRange;
  /** Hue shift range, within [−0.5, 0.5] (a number h: [−h, h]). */
  hue?: FactorRange;
  /** Probability the jitter applies to a sample (default 1, as torchvision's). */
  p?: number;
}

/** torchvision's RandomErasing on the normalized tensor. */
export interface Erasing {
  /** Probability per sample (default 0.5). */
  p?: number;
  /** Share of the image's area erased (default [0.02, 0.33]). */
  scale?: readonly [number, number];
  /** Aspect ratio (height / width) range, drawn log-uniformly (default [0.3, 3.3]). */
  ratio?: readonly [number, number];
  /** Value written, in normalized units: one for all channels or one per channel (default 0). */
  value?: number | readonly number[];
}

/** A TrivialAugmentWide op name. */
export type TrivialOp =
  | "identity" | "shearX" | "shearY" | "translateX" | "translateY" | "rotate" | "brightness" | "color" | "contrast" | "sharpness"
  | "posterize" | "solarize" | "autoContrast";

/** The ops TrivialAugment chooses among, each with its magnitudes (torchvision's TrivialAugmentWide, 31 bins), in its order. */
export const TRIVIAL_OPS: readonly TrivialOp[] = [
  "identity", "shearX", "shearY", "translateX", "translateY", "rotate", "brightness", "color", "contrast", "sharpness", "posterize", "solarize",
  "autoContrast",
];

/** What augmentations the preprocessing pass applies (see NOTE [ Augmentations ]). */
export interface AugmentOptions {
  /** TrivialAugmentWide: one op per sample, of random kind and magnitude; `ops` narrows the choice. */
  trivial?: boolean | { ops?: readonly TrivialOp[] };
  /** Colour jitter. */
  jitter?: ColourJitter;
  /** torchvision's RandomSolarize: pixels at or above `threshold` (default 0.5) inverted, with probability p (default 0.5). */
  solarize?: { p?: number; threshold?: number };
  /** torchvision's RandomPosterize: `bits` (default 4) kept, with probability p (default 0.5). */
  posterize?: { p?: number; bits?: number };
  /** Random erasing. */
  erase?: Erasing;
  /** torchvision's RandomAffine. */
  affine?: RandomAffine;
  /** torchvision's RandomRotation: the angle's range in degrees, counter-clockwise (a number d: [−d, d]). */
  rotate?: FactorRange;
  /** What a geometric op brings in from outside the image, in [0, 1] (one value, or one per output channel; default 0). */
  fill?: number | readonly number[];
  /** torchvision's GaussianBlur: `kernel` taps (odd), σ drawn uniformly from `sigma` (default [0.1, 2]), with probability p (default 1). */
  blur?: { kernel: number; sigma?: readonly [number, number]; p?: number };
  /**
   * MixUp and CutMix, once a batch (src/decode/mix.ts): a run given the batch's `labels` and
   * `classes` mixes its tensor and returns the mixed `targets`.
   */
  mix?: BatchMixOptions;
}

/** torchvision's RandomAffine: the parameters drawn per sample from these ranges. */
export interface RandomAffine {
  /** Angle range in degrees, clockwise (a number d: [−d, d]). */
  degrees?: FactorRange;
  /** Largest shift as a share of the width and of the height. */
  translate?: readonly [number, number];
  /** Scale range. */
  scale?: readonly [number, number];
  /** Shear in degrees: s ([−s, s] along x), [lo, hi] along x, or [xlo, xhi, ylo, yhi]. */
  shear?: number | readonly [number, number] | readonly [number, number, number, number];
  /** Probability per sample (default 1). */
  p?: number;
}

/**
 * One geometric op as the sampler runs it: torchvision's inverse affine matrix [a, b, c, d, e, f],
 * which maps an output pixel's centre (x, y), measured from the image's centre, to the position
 * it is taken from: (a·x + b·y + c, d·x + e·y + f).
 */
export type Warp = [number, number, number, number, number, number];

/** A per-pixel colour op of a sample's chain. */
export type ColourOp = "brightness" | "contrast" | "saturation" | "hue" | "solarize" | "posterize" | "autocontrast" | "sharpness";

/** Codes of the ops in the GPU's table (src/gpu/augment.ts), 0 meaning none. */
export const OP_CODES: Readonly<Record<ColourOp, number>> = { brightness: 1, contrast: 2, saturation: 3, hue: 4, solarize: 5, posterize: 6, autocontrast: 7, sharpness: 8 };

/** One op of a sample's chain and its factor (posterize: bits; solarize: threshold). */
export interface AugmentStep {
  /** The op. */
  op: ColourOp;
  /** Its factor. */
  factor: number;
}

/** A box of the output erased, in output pixels, and the normalized values it gets. */
export interface EraseBox {
  /** Left column. */
  x: number;
  /** Top row. */
  y: number;
  /** Width (0: nothing erased). */
  w: number;
  /** Height. */
  h: number;
  /** Value per output channel (a single value given: three copies). */
  value: number[];
}

/** What is done to one sample: its geometric ops, its colour ops in order, and its erased box. */
export interface AugmentPlan {
  /** Geometric ops, applied in this order (at most MAX_WARPS), and what they bring in from outside. */
  warp?: { ops: Warp[]; fill: number[] };
  /** Colour ops, applied in this order. */
  steps: AugmentStep[];
  /** The erased box, if any. */
  erase?: EraseBox;
  /** The Gaussian blur after the colour ops, if any: its taps and σ. */
  blur?: { kernel: number; sigma: number };
}

/** Most ops in one sample's chain: a policy op, the jitter's four, solarize, posterize. */
export const MAX_STEPS = 7;
/** Most contrast or autocontrast steps in one chain (the policy's and the jitter's): each needs figures of its whole image. */
export const MAX_MEANS = 2;
/** Most geometric ops in one sample's chain: the policy's and RandomAffine's or RandomRotation's. */
export const MAX_WARPS = 2;

/** Whether the options ask for any augmentation (and so need sample ids). */
export function hasAugment(o: AugmentOptions | undefined): boolean {
  return !!o && (!!o.trivial || !!o.jitter || !!o.solarize || !!o.posterize || !!o.erase || !!o.affine || o.rotate !== undefined || !!o.mix || !!o.blur);
}

/** [lo, hi] of a jitter factor (torchvision's ColorJitter._check_input); undefined when it is the identity. */
function factorRange(v: FactorRange | undefined, hue: boolean): [number, number] | undefined {
  if (v === undefined) return undefined;
  const [lo, hi] = typeof v === "number" ? (hue ? [-v, v] : [Math.max(0, 1 - v), 1 + v]) : v;
  const centre = hue ? 0 : 1;
  return lo === centre && hi === centre ? undefined : [lo, hi];
}

/**
 * Checks augmentation options, naming what is wrong (`what`: e.g. "create a preprocessor");
 * `channels` is the output's, for a per-channel erase value.
 */
export function checkAugment(o: AugmentOptions | undefined, what: string, channels: number): void {
  if (o === undefined) return;
  const bad = (why: string, value: unknown): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ${what} as ${why}: current value is ${JSON.stringify(value)}`);
  };
  if (typeof o !== "object" || o === null) bad("'augment' must be an object", o);
  const known = ["trivial", "jitter", "solarize", "posterize", "erase", "affine", "rotate", "fill", "mix", "blur"];
  for (const k of Object.keys(o)) if (!known.includes(k)) bad(`'augment' has no option '${k}' (it has ${known.join(", ")})`, k);
  const prob = (name: string, p: unknown) => p !== undefined && !(typeof p === "number" && p >= 0 && p <= 1) && bad(`'${name}' must be a probability from 0 to 1`, p);
  const pair = (name: string, r: unknown, ok: (lo: number, hi: number) => boolean, rule: string) => {
    if (r === undefined) return;
    if (!(Array.isArray(r) && r.length === 2 && r.every((x) => typeof x === "number" && Number.isFinite(x)) && r[0] <= r[1] && ok(r[0], r[1]))) bad(`'${name}' must be [lo, hi] with ${rule}`, r);
  };
  if (o.trivial !== undefined && typeof o.trivial !== "boolean") {
    const ops = o.trivial.ops;
    if (ops !== undefined && !(Array.isArray(ops) && ops.length > 0 && ops.every((x) => (TRIVIAL_OPS as readonly string[]).includes(x)))) {
      bad(`'augment.trivial.ops' must name some of ${TRIVIAL_OPS.join(", ")}`, ops);
    }
  }
  const j = o.jitter;
  if (j !== undefined) {
    for (const k of ["brightness", "contrast", "saturation"] as const) {
      const v = j[k];
      if (typeof v === "number") !(v >= 0 && Number.isFinite(v)) && bad(`'augment.jitter.${k}' must be a number ≥ 0`, v);
      else pair(`augment.jitter.${k}`, v, (lo) => lo >= 0, "0 ≤ lo ≤ hi");
    }
    if (typeof j.hue === "number") !(j.hue >= 0 && j.hue <= 0.5) && bad("'augment.jitter.hue' must be a number from 0 to 0.5", j.hue);
    else pair("augment.jitter.hue", j.hue, (lo, hi) => lo >= -0.5 && hi <= 0.5, "−0.5 ≤ lo ≤ hi ≤ 0.5");
    prob("augment.jitter.p", j.p);
  }
  if (o.solarize !== undefined) {
    prob("augment.solarize.p", o.solarize.p);
    const t = o.solarize.threshold;
    if (t !== undefined && !(typeof t === "number" && t >= 0 && t <= 1)) bad("'augment.solarize.threshold' must be a number from 0 to 1", t);
  }
  if (o.posterize !== undefined) {
    prob("augment.posterize.p", o.posterize.p);
    const b = o.posterize.bits;
    if (b !== undefined && !(Number.isInteger(b) && b >= 1 && b <= 8)) bad("'augment.posterize.bits' must be a whole number from 1 to 8", b);
  }
  const e = o.erase;
  if (e !== undefined) {
    prob("augment.erase.p", e.p);
    pair("augment.erase.scale", e.scale, (lo, hi) => lo >= 0 && hi <= 1, "0 ≤ lo ≤ hi ≤ 1");
    pair("augment.erase.ratio", e.ratio, (lo) => lo > 0, "0 < lo ≤ hi");
    const v = e.value;
    const okValue = v === undefined || (typeof v === "number" && Number.isFinite(v)) ||
      (Array.isArray(v) && v.length === channels && v.every((x) => typeof x === "number" && Number.isFinite(x)));
    if (!okValue) bad(`'augment.erase.value' must be a number or ${channels} numbers (one per output channel)`, v);
  }
  if (o.affine && o.rotate !== undefined) bad("'augment.rotate' and 'augment.affine' are one op: give the rotation as 'augment.affine.degrees'", o.rotate);
  const degrees = (name: string, d: unknown) => {
    if (typeof d === "number") !(d >= 0 && d <= 360) && bad(`'${name}' must be a number of degrees from 0 to 360`, d);
    else pair(name, d, (lo, hi) => lo >= -360 && hi <= 360, "−360 ≤ lo ≤ hi ≤ 360");
  };
  degrees("augment.rotate", o.rotate);
  const a = o.affine;
  if (a !== undefined) {
    if (typeof a !== "object" || a === null) bad("'augment.affine' must be an object", a);
    degrees("augment.affine.degrees", a.degrees);
    const t = a.translate;
    if (t !== undefined && !(Array.isArray(t) && t.length === 2 && t.every((x) => typeof x === "number" && x >= 0 && x <= 1))) bad("'augment.affine.translate' must be [x, y], shares of the width and height from 0 to 1", t);
    pair("augment.affine.scale", a.scale, (lo) => lo > 0, "0 < lo ≤ hi");
    const sh = a.shear;
    if (typeof sh === "number") !(sh >= 0 && sh < 90) && bad("'augment.affine.shear' must be degrees from 0 to 90", sh);
    else if (sh !== undefined && !(Array.isArray(sh) && (sh.length === 2 || sh.length === 4) && sh.every((x) => typeof x === "number" && x > -90 && x < 90) && sh[0] <= sh[1] && (sh.length === 2 || sh[2] <= sh[3]))) {
      bad("'augment.affine.shear' must be s, [lo, hi] or [xlo, xhi, ylo, yhi] in degrees within (−90, 90)", sh);
    }
    prob("augment.affine.p", a.p);
  }
  const f = o.fill;
  const okFill = f === undefined || (typeof f === "number" && f >= 0 && f <= 1) ||
    (Array.isArray(f) && f.length === channels && f.every((x) => typeof x === "number" && x >= 0 && x <= 1));
  if (!okFill) bad(`'augment.fill' must be a number from 0 to 1 or ${channels} of them (one per output channel)`, f);
  const bl = o.blur;
  if (bl !== undefined) {
    if (typeof bl !== "object" || bl === null || !(Number.isInteger(bl.kernel) && bl.kernel >= 1 && bl.kernel % 2 === 1 && bl.kernel <= 255)) {
      bad("'augment.blur.kernel' must be an odd whole number of taps from 1 to 255", bl?.kernel);
    }
    pair("augment.blur.sigma", bl.sigma, (lo) => lo > 0, "0 < lo ≤ hi");
    prob("augment.blur.p", bl.p);
  }
  checkMix(o.mix, what);
}

/**
 * The augmentation of one sample, a pure function of the options and (seed, epoch, key): the
 * same arguments give the same plan on every runtime. `outW` × `outH` is the tensor's image
 * size (erasing is drawn on it). Undefined when nothing applies.
 */
export function drawAugment(o: AugmentOptions, seed: number, epoch: number, key: number, outW: number, outH: number): AugmentPlan | undefined {
  const steps: AugmentStep[] = [], warps: Warp[] = [];
  if (o.trivial) trivialStep(o.trivial === true ? TRIVIAL_OPS : o.trivial.ops ?? TRIVIAL_OPS, rng(seed, epoch, key, 4), steps, warps, outW, outH);
  if (o.affine) affineWarp(o.affine, rng(seed, epoch, key, 8), outW, outH, warps);
  if (o.rotate !== undefined) {
    const [lo, hi] = typeof o.rotate === "number" ? [-o.rotate, o.rotate] : o.rotate;
    warps.push(inverseAffine(-(lo + rng(seed, epoch, key, 9).next() * (hi - lo)), [0, 0], 1, [0, 0]));
  }
  if (o.jitter) jitterSteps(o.jitter, rng(seed, epoch, key, 3), steps);
  if (o.solarize && rng(seed, epoch, key, 5).next() < (o.solarize.p ?? 0.5)) steps.push({ op: "solarize", factor: o.solarize.threshold ?? 0.5 });
  if (o.posterize && rng(seed, epoch, key, 6).next() < (o.posterize.p ?? 0.5)) steps.push({ op: "posterize", factor: o.posterize.bits ?? 4 });
  const erase = o.erase ? eraseBox(o.erase, rng(seed, epoch, key, 7), outW, outH) : undefined;
  let blur: AugmentPlan["blur"];
  if (o.blur) {
    const r = rng(seed, epoch, key, 11);
    const [lo, hi] = o.blur.sigma ?? [0.1, 2];
    if (r.next() < (o.blur.p ?? 1)) blur = { kernel: o.blur.kernel, sigma: lo + r.next() * (hi - lo) };
  }
  if (steps.length === 0 && !erase && warps.length === 0 && !blur) return undefined;
  const plan: AugmentPlan = { steps };
  if (blur) plan.blur = blur;
  if (warps.length) {
    const f = o.fill ?? 0;
    plan.warp = { ops: warps, fill: typeof f === "number" ? [f, f, f] : [...f] };
  }
  if (erase) plan.erase = erase;
  return plan;
}

/**
 * torchvision's _get_inverse_affine_matrix: the matrix that takes an output pixel (from the
 * centre) to where affine(angle, translate, scale, shear) about `center` (from the centre)
 * takes it from. Angles and shears in degrees; the angle clockwise.
 */
export function inverseAffine(angle: number, translate: readonly [number, number], scale: number, shear: readonly [number, number], center: readonly [number, number] = [0, 0]): Warp {
  const rad = Math.PI / 180;
  const rot = angle * rad, sx = shear[0] * rad, sy = shear[1] * rad;
  const [cx, cy] = center, [tx, ty] = translate;
  // The rotation and shear, without the scale (determinant 1), then its inverse over the scale.
  const a = Math.cos(rot - sy) / Math.cos(sy);
  const b = (-Math.cos(rot - sy) * Math.tan(sx)) / Math.cos(sy) - Math.sin(rot);
  const c = Math.sin(rot - sy) / Math.cos(sy);
  const d = (-Math.sin(rot - sy) * Math.tan(sx)) / Math.cos(sy) + Math.cos(rot);
  const m: Warp = [d / scale, -b / scale, 0, -c / scale, a / scale, 0];
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx;
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy;
  return m;
}

/** RandomAffine.get_params on a W × H image, as one warp. */
function affineWarp(a: RandomAffine, r: Rng, W: number, H: number, warps: Warp[]): void {
  if (r.next() >= (a.p ?? 1)) return;
  const uniform = (lo: number, hi: number) => lo + r.next() * (hi - lo);
  const [d0, d1] = a.degrees === undefined ? [0, 0] : typeof a.degrees === "number" ? [-a.degrees, a.degrees] : a.degrees;
  const angle = uniform(d0, d1);
  let tx = 0, ty = 0;
  if (a.translate) {
    const mx = a.translate[0] * W, my = a.translate[1] * H;
    tx = roundHalfEven(uniform(-mx, mx));
    ty = roundHalfEven(uniform(-my, my));
  }
  const scale = a.scale ? uniform(a.scale[0], a.scale[1]) : 1;
  const sh = a.shear === undefined ? undefined : typeof a.shear === "number" ? [-a.shear, a.shear] : a.shear;
  const shx = sh ? uniform(sh[0], sh[1]) : 0, shy = sh && sh.length === 4 ? uniform(sh[2], sh[3]) : 0;
  warps.push(inverseAffine(angle, [tx, ty], scale, [shx, shy]));
}

function jitterSteps(j: ColourJitter, r: Rng, steps: AugmentStep[]): void {
  if (r.next() >= (j.p ?? 1)) return;
  const order = shuffle([0, 1, 2, 3], r);
  const ranges = [factorRange(j.brightness, false), factorRange(j.contrast, false), factorRange(j.saturation, false), factorRange(j.hue, true)];
  // Drawn in torchvision's order (b, c, s, h), applied in the permutation's.
  const factors = ranges.map((range) => (range ? range[0] + r.next() * (range[1] - range[0]) : undefined));
  const ops: ColourOp[] = ["brightness", "contrast", "saturation", "hue"];
  for (const i of order) if (factors[i] !== undefined) steps.push({ op: ops[i], factor: factors[i]! });
}

/**
 * TrivialAugmentWide's magnitudes, 31 bins (torchvision's _augmentation_space), and its
 * _apply_op: shears about the top-left corner by atan(m) in degrees, translations by whole
 * pixels, rotations counter-clockwise.
 */
function trivialStep(ops: readonly TrivialOp[], r: Rng, steps: AugmentStep[], warps: Warp[], W: number, H: number): void {
  const op = ops[r.int(ops.length)], bin = r.int(31);
  const signed = (m: number) => (r.int(2) ? -m : m);
  const corner: [number, number] = [-W / 2, -H / 2];
  switch (op) {
    case "shearX":
      return void warps.push(inverseAffine(0, [0, 0], 1, [Math.atan(signed((0.99 * bin) / 30)) * (180 / Math.PI), 0], corner));
    case "shearY":
      return void warps.push(inverseAffine(0, [0, 0], 1, [0, Math.atan(signed((0.99 * bin) / 30)) * (180 / Math.PI)], corner));
    case "translateX":
      return void warps.push(inverseAffine(0, [Math.trunc(signed((32 * bin) / 30)), 0], 1, [0, 0]));
    case "translateY":
      return void warps.push(inverseAffine(0, [0, Math.trunc(signed((32 * bin) / 30))], 1, [0, 0]));
    case "rotate":
      return void warps.push(inverseAffine(-signed((135 * bin) / 30), [0, 0], 1, [0, 0]));
    case "brightness":
    case "contrast":
      return void steps.push({ op, factor: 1 + signed((0.99 * bin) / 30) });
    case "color":
      return void steps.push({ op: "saturation", factor: 1 + signed((0.99 * bin) / 30) });
    case "sharpness":
      return void steps.push({ op, factor: 1 + signed((0.99 * bin) / 30) });
    case "autoContrast":
      return void steps.push({ op: "autocontrast", factor: 0 });
    case "posterize":
      return void steps.push({ op, factor: 8 - roundHalfEven(bin / 5) });
    case "solarize":
      return void steps.push({ op, factor: 1 - bin / 30 });
  }
}

function eraseBox(e: Erasing, r: Rng, W: number, H: number): EraseBox | undefined {
  if (r.next() >= (e.p ?? 0.5)) return undefined;
  const [s0, s1] = e.scale ?? [0.02, 0.33];
  const [r0, r1] = e.ratio ?? [0.3, 3.3];
  const lo = Math.log(r0), hi = Math.log(r1);
  const v = e.value ?? 0;
  const value = typeof v === "number" ? [v, v, v] : [...v];
  for (let attempt = 0; attempt < 10; attempt++) {
    const area = W * H * (s0 + r.next() * (s1 - s0));
    const aspect = Math.exp(lo + r.next() * (hi - lo));
    const h = roundHalfEven(Math.sqrt(area * aspect));
    const w = roundHalfEven(Math.sqrt(area / aspect));
    if (!(h < H && w < W)) continue;
    const y = r.int(H - h + 1), x = r.int(W - w + 1);
    return { x, y, w, h, value };
  }
  return undefined;
}

/** The grey a contrast or saturation step blends towards: torchvision's rgb_to_grayscale. */
const GREY = [0.2989, 0.587, 0.114] as const;

/**
 * Runs `plan` on one image of a tensor in place: `data` holds its values in [0, 1] (the
 * resampled crop / 255) from `base`, C channels of W·H in `layout`; the ops run in order, then
 * (v − mean) / std per channel, then the erase. The CPU's executor (tensor.ts); the GPU's is
 * shaders/preprocess/augment.wgsl.
 */
export function applyAugment(
  data: Float32Array, base: number, W: number, H: number, C: number, layout: "nchw" | "nhwc",
  plan: AugmentPlan | undefined, mean: readonly number[], std: readonly number[],
): void {
  const n = W * H;
  // Channel c of pixel k lives at base + k·ks + c·cs.
  const ks = layout === "nchw" ? 1 : C, cs = layout === "nchw" ? n : 1;
  const steps = plan?.steps ?? [];
  if (steps.length || plan?.blur) {
    // The ops read a pixel's channels together: interleaved, in f64, one channel repeated.
    const px = new Float64Array(n * 3);
    for (let c = 0; c < 3; c++) {
      const from = base + (C === 1 ? 0 : c) * cs;
      for (let k = 0, at = from; k < n; k++, at += ks) px[k * 3 + c] = data[at];
    }
    for (const s of steps) runStep(px, n, H, C, s);
    if (plan?.blur) blurPixels(px, W, H, plan.blur.kernel, plan.blur.sigma);
    for (let c = 0; c < C; c++) {
      const m = mean[c] ?? 0, d = std[c] ?? 1;
      for (let k = 0, at = base + c * cs; k < n; k++, at += ks) data[at] = (px[k * 3 + c] - m) / d;
    }
  } else {
    for (let c = 0; c < C; c++) {
      const m = mean[c] ?? 0, d = std[c] ?? 1;
      for (let k = 0, at = base + c * cs; k < n; k++, at += ks) data[at] = (data[at] - m) / d;
    }
  }
  const e = plan?.erase;
  if (!e) return;
  for (let y = e.y; y < e.y + e.h; y++) {
    for (let x = e.x; x < e.x + e.w; x++) for (let c = 0; c < C; c++) data[base + (y * W + x) * ks + c * cs] = e.value[c];
  }
}

/** adjust_sharpness over interleaved r, g, b: each inside pixel blended with (5·itself + its 8 neighbours) / 13. */
function sharpen(px: Float64Array, W: number, H: number, f: number): void {
  if (W <= 2 || H <= 2) return;
  const src = px.slice();
  for (let y = 1; y < H - 1; y++) {
    for (let x = 1; x < W - 1; x++) {
      for (let c = 0; c < 3; c++) {
        const at = (y * W + x) * 3 + c;
        let sum = 4 * src[at];
        for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) sum += src[at + (dy * W + dx) * 3];
        px[at] = Math.min(1, Math.max(0, f * src[at] + (1 - f) * (sum / 13)));
      }
    }
  }
}

/** GaussianBlur over interleaved r, g, b: rows, then columns, reflected at the edges (torch's "reflect"). */
function blurPixels(px: Float64Array, W: number, H: number, k: number, sigma: number): void {
  const w = new Float64Array(k), mid = (k - 1) / 2;
  let sum = 0;
  for (let i = 0; i < k; i++) sum += w[i] = Math.exp(-0.5 * ((i - mid) / sigma) ** 2);
  for (let i = 0; i < k; i++) w[i] /= sum;
  const reflect = (i: number, n: number) => {
    if (n === 1) return 0;
    const period = 2 * (n - 1);
    const j = ((i % period) + period) % period;
    return j >= n ? period - j : j;
  };
  const tmp = new Float64Array(px.length);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      let r = 0, g = 0, b = 0;
      for (let i = 0; i < k; i++) {
        const at = (y * W + reflect(x + i - mid, W)) * 3;
        r += w[i] * px[at];
        g += w[i] * px[at + 1];
        b += w[i] * px[at + 2];
      }
      const o = (y * W + x) * 3;
      tmp[o] = r, tmp[o + 1] = g, tmp[o + 2] = b;
    }
  }
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      let r = 0, g = 0, b = 0;
      for (let i = 0; i < k; i++) {
        const at = (reflect(y + i - mid, H) * W + x) * 3;
        r += w[i] * tmp[at];
        g += w[i] * tmp[at + 1];
        b += w[i] * tmp[at + 2];
      }
      const o = (y * W + x) * 3;
      px[o] = r, px[o + 1] = g, px[o + 2] = b;
    }
  }
}

/** One op over every pixel (r, g, b; one channel repeated in all three), loops written out per op. */
function runStep(px: Float64Array, n: number, H: number, C: number, s: AugmentStep): void {
  const f = s.factor, len = n * 3;
  const [gr, gg, gb] = C === 1 ? [1, 0, 0] : GREY;
  switch (s.op) {
    case "brightness":
      for (let i = 0; i < len; i++) px[i] = Math.min(1, Math.max(0, f * px[i]));
      return;
    case "contrast": {
      let sum = 0;
      for (let i = 0; i < len; i += 3) sum += gr * px[i] + gg * px[i + 1] + gb * px[i + 2];
      const m = (1 - f) * (sum / n);
      for (let i = 0; i < len; i++) px[i] = Math.min(1, Math.max(0, f * px[i] + m));
      return;
    }
    case "saturation":
      if (C === 1) return;
      for (let i = 0; i < len; i += 3) {
        const g = (1 - f) * (gr * px[i] + gg * px[i + 1] + gb * px[i + 2]);
        px[i] = Math.min(1, Math.max(0, f * px[i] + g));
        px[i + 1] = Math.min(1, Math.max(0, f * px[i + 1] + g));
        px[i + 2] = Math.min(1, Math.max(0, f * px[i + 2] + g));
      }
      return;
    case "hue":
      if (C === 1) return;
      for (let i = 0; i < len; i += 3) shiftHue(px, i, f);
      return;
    case "solarize":
      for (let i = 0; i < len; i++) if (px[i] >= f) px[i] = 1 - px[i];
      return;
    case "autocontrast":
      for (let c = 0; c < 3; c++) {
        let lo = Infinity, hi = -Infinity;
        for (let i = c; i < len; i += 3) (lo = Math.min(lo, px[i])), (hi = Math.max(hi, px[i]));
        const flat = !(hi > lo), from = flat ? 0 : lo, scale = flat ? 1 : 1 / (hi - lo);
        for (let i = c; i < len; i += 3) px[i] = Math.min(1, Math.max(0, (px[i] - from) * scale));
      }
      return;
    case "sharpness":
      return sharpen(px, n / H, H, f);
    case "posterize": {
      const levels = 2 ** f;
      for (let i = 0; i < len; i++) px[i] = Math.min(Math.max(Math.floor(px[i] * levels), 0), levels - 1) / levels;
      return;
    }
  }
}

/** torchvision's adjust_hue on one pixel: its _rgb2hsv, h shifted mod 1, its _hsv2rgb. */
function shiftHue(px: Float64Array, at: number, f: number): void {
  const r = px[at], g = px[at + 1], b = px[at + 2];
  const max = r > g ? (r > b ? r : b) : (g > b ? g : b), min = r < g ? (r < b ? r : b) : (g < b ? g : b);
  const chroma = max - min, flat = max === min;
  const s = chroma / (flat ? 1 : max), d = flat ? 1 : chroma;
  const rc = (max - r) / d, gc = (max - g) / d, bc = (max - b) / d;
  let h = max === r ? bc - gc : max === g ? 2 + rc - bc : 4 + gc - rc;
  // fmod(h / 6 + 1, 1), then (h + f) mod 1, as x − ⌊x⌋ (both positive there; % is slow on floats).
  h = h / 6 + 1;
  h -= Math.floor(h);
  h += f;
  h -= Math.floor(h);
  const i = Math.floor(h * 6), fr = h * 6 - i;
  const p = Math.min(1, Math.max(0, max * (1 - s))), q = Math.min(1, Math.max(0, max * (1 - s * fr))), t = Math.min(1, Math.max(0, max * (1 - s * (1 - fr))));
  const k = i % 6;
  px[at] = k === 0 || k === 5 ? max : k === 1 ? q : k === 4 ? t : p;
  px[at + 1] = k === 1 || k === 2 ? max : k === 0 ? t : k === 3 ? q : p;
  px[at + 2] = k === 3 || k === 4 ? max : k === 2 ? t : k === 5 ? q : p;
}

/** The presets `--augment` names: `photos`, TrivialAugment with random erasing at 0.25 (timm's recipe for ImageNet). */
const PRESETS: Readonly<Record<string, string>> = { photos: "trivial,erase=0.25", none: "" };

/**
 * Augmentation options from a policy as `--augment` writes it: comma-separated ops and
 * magnitudes, e.g. `trivial,erase=0.25` or `brightness=0.4,contrast=0.4,saturation=0.4,hue=0.1`.
 *   trivial                  TrivialAugment over TRIVIAL_OPS
 *   brightness|contrast|saturation|hue=V or LO:HI   ColorJitter's factor (V as torchvision reads it)
 *   jitter=V                 brightness, contrast and saturation V each
 *   solarize=P               RandomSolarize(0.5, p=P);  posterize=P: RandomPosterize(4, p=P)
 *   erase=P                  RandomErasing(p=P)
 *   rotate=D or LO:HI        RandomRotation(D)
 *   degrees=D, translate=F, scale=LO:HI, shear=S    RandomAffine's (any of them makes one)
 *   fill=V                   what the geometric ops bring in from outside, in [0, 1]
 *   blur=K                   GaussianBlur(K, σ in [0.1, 2])
 *   mixup[=A], cutmix[=A]    MixUp, CutMix, Beta(A, A) (default A 1); both: each batch one of them
 *   photos                   trivial,erase=0.25;  none: nothing
 * A bad term throws ERR_INVALID_OPTION naming it.
 *
 * @example
 * ```ts
 * import { parseAugment } from "cassette/decode";
 * console.log(JSON.stringify(parseAugment("hue=0.1,erase=0.25"))); // {"jitter":{"hue":0.1},"erase":{"p":0.25}}
 * ```
 */
export function parseAugment(spec: string): AugmentOptions {
  const o: AugmentOptions = {};
  const bad = (term: string, why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot read the augmentation policy as its term '${term}' ${why}: current value is ${JSON.stringify(spec)}`);
  };
  const terms = spec.split(",").map((t) => t.trim()).filter((t) => t !== "").flatMap((t) => (t in PRESETS ? PRESETS[t].split(",").filter(Boolean) : [t]));
  for (const term of terms) {
    const [name, value, ...extra] = term.split("=");
    if (extra.length) bad(term, "has more than one '='");
    const number = (): number => {
      const x = Number(value);
      if (value === undefined || value === "" || !Number.isFinite(x)) bad(term, "needs a number after '='");
      return x;
    };
    const range = (): FactorRange => {
      if (value?.includes(":")) {
        const [lo, hi] = value.split(":").map(Number);
        if (!(Number.isFinite(lo) && Number.isFinite(hi))) bad(term, "needs V or LO:HI after '='");
        return [lo, hi];
      }
      return number();
    };
    if (name === "trivial") {
      if (value !== undefined) bad(term, "takes no value");
      o.trivial = true;
    } else if (name === "brightness" || name === "contrast" || name === "saturation" || name === "hue") {
      o.jitter = { ...o.jitter, [name]: range() };
    } else if (name === "jitter") {
      const v = number();
      o.jitter = { ...o.jitter, brightness: v, contrast: v, saturation: v };
    } else if (name === "solarize" || name === "posterize" || name === "erase") {
      o[name] = { p: number() };
    } else if (name === "rotate") {
      o.rotate = range();
    } else if (name === "degrees" || name === "shear") {
      o.affine = { ...o.affine, [name]: range() };
    } else if (name === "translate") {
      const v = number();
      o.affine = { ...o.affine, translate: [v, v] };
    } else if (name === "scale") {
      const r = range();
      o.affine = { ...o.affine, scale: typeof r === "number" ? [1 - r, 1 + r] : r };
    } else if (name === "fill") {
      o.fill = number();
    } else if (name === "blur") {
      o.blur = { kernel: number() };
    } else if (name === "mixup" || name === "cutmix") {
      o.mix = { ...o.mix, [name]: value === undefined ? {} : { alpha: number() } };
    } else {
      bad(term, `is not an op (there are trivial, brightness, contrast, saturation, hue, jitter, solarize, posterize, erase, rotate, degrees, translate, scale, shear, fill, blur, mixup, cutmix, ${Object.keys(PRESETS).join(", ")})`);
    }
  }
  checkAugment(o, "use the augmentation policy", 3);
  return o;
}
