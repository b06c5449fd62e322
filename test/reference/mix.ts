/**
 * CPU reference of MixUp and CutMix (src/decode/mix.ts's NOTE [ MixUp and CutMix ]), written from
 * torchvision v2's definitions on an [n, …] batch: the batch rolled by one along n, then blended
 * (MixUp) or its box pasted (CutMix), and the one-hot labels mixed with the plan's λ.
 */
import type { BatchMixPlan } from "../../src/decode/mix.ts";

/** roll(x, 1, dim 0): image i of the result is image i − 1 (the first is the last). */
function roll(x: Float64Array, n: number): Float64Array {
  const per = x.length / n;
  const out = new Float64Array(x.length);
  for (let i = 0; i < n; i++) out.set(x.subarray(((i + n - 1) % n) * per, ((i + n - 1) % n + 1) * per), i * per);
  return out;
}

/** The mixed batch, as f64, from `x` laid out [n, c, h, w] ("nchw") or [n, h, w, c]. */
export function mixRef(plan: BatchMixPlan, x: ArrayLike<number>, shape: readonly [number, number, number, number], layout: "nchw" | "nhwc"): Float64Array {
  const n = shape[0];
  const src = Float64Array.from(x as ArrayLike<number>);
  if (plan.kind === "none") return src;
  const rolled = roll(src, n);
  if (plan.kind === "mixup") return src.map((v, k) => plan.lambda * v + (1 - plan.lambda) * rolled[k]);
  const [, a, b, c] = shape;
  const [H, W] = layout === "nchw" ? [b, c] : [a, b];
  const out = src.slice();
  const { x1, y1, x2, y2 } = plan.box!;
  for (let k = 0; k < out.length; k++) {
    const within = k % (a * b * c);
    const [y, xx] = layout === "nchw" ? [Math.floor(within / W) % H, within % W] : [Math.floor(within / (W * c)), Math.floor(within / c) % W];
    if (y >= y1 && y < y2 && xx >= x1 && xx < x2) out[k] = rolled[k];
  }
  return out;
}

/** λ·onehot(y) + (1 − λ)·onehot(roll(y, 1)). */
export function targetsRef(plan: BatchMixPlan, labels: readonly number[], classes: number): Float64Array {
  const n = labels.length;
  const out = new Float64Array(n * classes);
  labels.forEach((y, i) => {
    out[i * classes + y] += plan.lambda;
    out[i * classes + labels[(i + n - 1) % n]] += 1 - plan.lambda;
  });
  return out;
}
