/**
 * MixUp and CutMix: batch-level augmentations that blend each sample with its neighbour in the
 * batch (torchvision v2's: the batch rolled by one), images and labels alike. The draw is made
 * here, once a batch, from (seed, epoch, the batch's first id), so that the GPU's executor
 * (src/gpu/mix.ts) and the CPU's (`mixTensor`) do the same; the labels come out as `targets`,
 * n × classes rows that sum to 1.
 *
 * NOTE [ MixUp and CutMix ]
 * As torchvision.transforms.v2's MixUp and CutMix on a batch (x, y) of n samples:
 *   λ ~ Beta(α, α) (default α = 1: uniform), x' = λ·x + (1 − λ)·roll(x, 1), targets =
 *   λ·onehot(y) + (1 − λ)·onehot(roll(y, 1)); sample i is mixed with sample i − 1 (the first
 *   with the last).
 *   CutMix: λ drawn the same way, a box centred at (cx, cy) uniform over the pixels, half-sides
 *   ⌊r·W⌋ and ⌊r·H⌋ with r = ½·√(1 − λ), clipped to the image; inside it x' = roll(x, 1),
 *   outside x; the targets mix with λ' = 1 − box area / image area (the share actually kept).
 *   With both asked for, each batch takes one of them, with probability `cutmixShare` CutMix.
 * The draws use cassette's seeded stream (src/plan/rng.ts): Beta from two Gamma(α) draws
 * (Marsaglia and Tsang's method), the same on every runtime; not torch's generator.
 *
 * @example
 * ```ts
 * import { drawMix, mixTargets } from "cassette/decode";
 * const plan = drawMix({ mixup: { alpha: 0.2 } }, 0, 0, ["a", "b", "c"], 8, 8);
 * const targets = mixTargets(plan, Int32Array.of(0, 1, 2), 3);
 * console.log(targets.length, Math.abs(targets[0] + targets[1] + targets[2] - 1) < 1e-6); // 9 true
 * ```
 */
import { CassetteError } from "../errors.ts";
import { hash32, type Rng, rng } from "../plan/rng.ts";

/** Batch-level mixing: MixUp, CutMix, or each batch one of them. */
export interface BatchMixOptions {
  /** MixUp, λ ~ Beta(alpha, alpha) (default alpha 1). */
  mixup?: { alpha?: number };
  /** CutMix, λ ~ Beta(alpha, alpha) (default alpha 1). */
  cutmix?: { alpha?: number };
  /** With both: the share of batches that take CutMix (default 0.5, torchvision's RandomChoice). */
  cutmixShare?: number;
  /** Probability a batch is mixed at all (default 1). */
  p?: number;
}

/** What one batch's mixing does: each sample i blends with sample i − 1 (mod n). */
export interface BatchMixPlan {
  /** The op, or "none" when the batch is left as it is. */
  kind: "mixup" | "cutmix" | "none";
  /** The weight of each sample's own label in its targets (CutMix: the share of its pixels kept). */
  lambda: number;
  /** MixUp: the weight of each sample's own pixels (= lambda). */
  weight: number;
  /** CutMix: the box taken from the neighbour, in output pixels (x1, y1) to (x2, y2), exclusive. */
  box?: { x1: number; y1: number; x2: number; y2: number };
}

/** Checks mixing options, naming what is wrong. */
export function checkMix(o: BatchMixOptions | undefined, what: string): void {
  if (o === undefined) return;
  const bad = (why: string, value: unknown): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ${what} as ${why}: current value is ${JSON.stringify(value)}`);
  };
  if (typeof o !== "object" || o === null) bad("'mix' must be an object", o);
  for (const k of Object.keys(o)) if (!["mixup", "cutmix", "cutmixShare", "p"].includes(k)) bad(`'mix' has no option '${k}' (it has mixup, cutmix, cutmixShare, p)`, k);
  if (!o.mixup && !o.cutmix) bad("'mix' must ask for 'mixup', 'cutmix' or both", o);
  for (const k of ["mixup", "cutmix"] as const) {
    const a = o[k]?.alpha;
    if (a !== undefined && !(typeof a === "number" && a > 0 && Number.isFinite(a))) bad(`'mix.${k}.alpha' must be a number > 0`, a);
  }
  for (const k of ["cutmixShare", "p"] as const) {
    const v = o[k];
    if (v !== undefined && !(typeof v === "number" && v >= 0 && v <= 1)) bad(`'mix.${k}' must be a probability from 0 to 1`, v);
  }
}

/** Gamma(a, 1) by Marsaglia and Tsang (a < 1 boosted by U^(1/a)); normals by Box–Muller. */
function gamma(a: number, r: Rng): number {
  if (a < 1) return gamma(a + 1, r) * Math.pow(1 - r.next(), 1 / a);
  const d = a - 1 / 3, c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number, v: number;
    do {
      x = Math.sqrt(-2 * Math.log(1 - r.next())) * Math.cos(2 * Math.PI * r.next());
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - r.next();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** Beta(a, a) from two Gamma(a) draws. */
function beta(a: number, r: Rng): number {
  const x = gamma(a, r), y = gamma(a, r);
  return x + y > 0 ? x / (x + y) : 0.5;
}

/**
 * The mixing of one batch of `ids` at `epoch`, a pure function of the options, the seed, the
 * epoch and the batch's first id; `W` × `H` is the tensor's image size (CutMix's box).
 */
export function drawMix(o: BatchMixOptions, seed: number, epoch: number, ids: readonly (string | number)[], W: number, H: number): BatchMixPlan {
  const first = ids[0] ?? 0;
  const r = rng(seed, epoch, typeof first === "number" ? first : hash32(first), 10);
  if (ids.length < 2 || r.next() >= (o.p ?? 1)) return { kind: "none", lambda: 1, weight: 1 };
  const cut = o.cutmix && (!o.mixup || r.next() < (o.cutmixShare ?? 0.5));
  const lambda = beta((cut ? o.cutmix!.alpha : o.mixup!.alpha) ?? 1, r);
  if (!cut) return { kind: "mixup", lambda, weight: lambda };
  const cx = r.int(W), cy = r.int(H);
  const half = 0.5 * Math.sqrt(1 - lambda);
  const hw = Math.floor(half * W), hh = Math.floor(half * H);
  const box = { x1: Math.max(cx - hw, 0), y1: Math.max(cy - hh, 0), x2: Math.min(cx + hw, W), y2: Math.min(cy + hh, H) };
  const kept = 1 - ((box.x2 - box.x1) * (box.y2 - box.y1)) / (W * H);
  return { kind: "cutmix", lambda: kept, weight: 1, box };
}

/** The batch's targets under `plan`: row i is λ·onehot(labels[i]) + (1 − λ)·onehot(labels[i − 1 mod n]). */
export function mixTargets(plan: BatchMixPlan, labels: ArrayLike<number>, classes: number): Float32Array<ArrayBuffer> {
  const n = labels.length;
  const out = new Float32Array(n * classes);
  for (let i = 0; i < n; i++) {
    const own = labels[i], other = labels[(i + n - 1) % n];
    for (const [y, name] of [[own, "its"], [other, "its neighbour's"]] as const) {
      if (!(Number.isInteger(y) && y >= 0 && y < classes)) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot mix the labels of sample ${i} as ${name} label must be a class from 0 to ${classes - 1}: current value is ${y}`);
      }
    }
    out[i * classes + own] += plan.lambda;
    out[i * classes + other] += 1 - plan.lambda;
  }
  return out;
}

/**
 * Mixes a batch tensor in place on the CPU (the `cpuTensor` of n images, C·H·W values each in
 * `layout`): MixUp blends each image with the one before it, CutMix pastes that one's box.
 */
export function mixTensor(plan: BatchMixPlan, data: Float32Array, shape: readonly [number, number, number, number], layout: "nchw" | "nhwc"): void {
  if (plan.kind === "none") return;
  const [n] = shape;
  const per = shape[1] * shape[2] * shape[3];
  const H = layout === "nchw" ? shape[2] : shape[1], W = layout === "nchw" ? shape[3] : shape[2], C = layout === "nchw" ? shape[1] : shape[3];
  // Sample i mixes with sample i − 1 as it was: keep the last one's values for the first.
  const last = data.slice((n - 1) * per, n * per);
  for (let i = n - 1; i >= 0; i--) {
    const other = i === 0 ? last : data.subarray((i - 1) * per, i * per), own = data.subarray(i * per, (i + 1) * per);
    if (plan.kind === "mixup") {
      for (let k = 0; k < per; k++) own[k] = plan.weight * own[k] + (1 - plan.weight) * other[k];
      continue;
    }
    const { x1, y1, x2, y2 } = plan.box!;
    for (let y = y1; y < y2; y++) {
      for (let x = x1; x < x2; x++) {
        for (let c = 0; c < C; c++) {
          const k = layout === "nchw" ? (c * H + y) * W + x : (y * W + x) * C + c;
          own[k] = other[k];
        }
      }
    }
  }
}

/**
 * A batch's mixing under the preprocessing options (`augment.mix`), its plan and targets, or
 * undefined when they ask for none; `run` must give the batch's ids, labels and class count.
 * Both executors take it from here (Preprocessor.run, cpuTensor).
 */
export function batchMix(
  o: { augment?: { mix?: BatchMixOptions }; seed?: number; width: number; height: number },
  run: { epoch?: number; ids?: readonly (string | number)[]; labels?: ArrayLike<number>; classes?: number },
  n: number,
): { plan: BatchMixPlan; targets: Float32Array<ArrayBuffer> } | undefined {
  const mix = o.augment?.mix;
  if (!mix) return undefined;
  if (!run.labels || run.labels.length !== n || !(Number.isInteger(run.classes) && run.classes! >= 1)) {
    throw new CassetteError(
      "ERR_INVALID_OPTION",
      `Cannot mix a batch (augment.mix) as 'labels' must give one class per image and 'classes' how many there are: current value is ${run.labels ? `${run.labels.length} labels for ${n} images` : "no labels"}, classes ${run.classes}`,
    );
  }
  const plan = drawMix(mix, o.seed ?? 0, run.epoch ?? 0, run.ids ?? [], o.width, o.height);
  return { plan, targets: mixTargets(plan, run.labels, run.classes!) };
}
