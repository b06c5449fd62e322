/**
 * The augmented preprocessing pass (shaders/preprocess/augment.wgsl) and the CPU's tensor
 * (cpuTensor with augment.ts's applyAugment) against the f64 reference of torchvision's ops
 * (test/reference/augment.ts), on fresh random images, options and factors, and at the edges:
 * factors 0, hue ±0.5, two contrast steps in one chain, zero-area and whole-row erasing.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, poisonedBuffer, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { preprocessRef } from "../reference/preprocess.ts";
import { augmentRef } from "../reference/augment.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import type { PreprocessOptions } from "../../src/gpu/preprocess.ts";
import type { DecodedImage, ImagePlan } from "../../src/gpu/pack.ts";
import type { AugmentOptions } from "../../src/decode/augment.ts";
import { cpuTensor } from "../../src/decode/tensor.ts";
import { runtime } from "../../runtime-adapters/index.ts";

// As test/gpu/preprocess.test.ts's: ≤ 0.02 grey levels of resampling difference, < 4e-4 after
// normalization by std ≥ 0.2; the ops are Lipschitz (≤ 2 per op for factors ≤ 2), so 1e-3
// after a chain of a few still separates from a one-level error only where no discontinuity
// is near: values a solarize threshold or posterize floor left near its edge get a whole step.
const TOL = 2e-3;

function randomImage(next: () => number, width: number, height: number, channels: number): DecodedImage {
  return { data: randomBytes(next, width * height * channels), width, height, channels };
}

/** The reference tensor of a batch: the plain pass's values / 255 (mean 0, std 1), then augmentRef per image. */
function reference(images: DecodedImage[], plans: ImagePlan[], o: PreprocessOptions): { want: Float64Array; tol: Float64Array } {
  const C = o.channels ?? 3, W = o.width, H = o.height, per = C * W * H, layout = o.layout ?? "nchw";
  const want = new Float64Array(images.length * per), tol = new Float64Array(images.length * per).fill(TOL);
  const at = (k: number, c: number) => (layout === "nchw" ? c * W * H + k : k * C + c);
  images.forEach((img, i) => {
    const flat = preprocessRef(img, plans[i], { width: W, height: H, channels: C as 1 | 3, layout, mean: Array(C).fill(0), std: Array(C).fill(1) });
    const planes = Array.from({ length: C }, (_, c) => Array.from({ length: W * H }, (_, k) => flat[at(k, c)]));
    const { planes: out, near } = augmentRef(planes, W, plans[i].augment, o.mean ?? Array(C).fill(0), o.std ?? Array(C).fill(1));
    for (let k = 0; k < W * H; k++) {
      for (let c = 0; c < C; c++) {
        want[i * per + at(k, c)] = out[c][k];
        if (near.has(k)) tol[i * per + at(k, c)] = 1.5 / (o.std?.[c] ?? 1);
      }
    }
  });
  return { want, tol };
}

/** Runs the batch on the GPU (into a poisoned buffer) and on the CPU; both against the reference. */
async function check(device: GPUDevice, o: PreprocessOptions, images: DecodedImage[], seed: number, epoch = 0): Promise<ImagePlan[]> {
  const pre = await createPreprocessor(device, o);
  const C = o.channels ?? 3, per = o.width * o.height * C;
  const out = poisonedBuffer(device, images.length * per * 4);
  const ids = images.map((_, i) => `id-${seed}-${i}`);
  try {
    const batch = await pre.run(images, { epoch, ids, output: out });
    const got = new Float32Array(await readBuffer(device, out, images.length * per * 4));
    const { want, tol } = reference(images, batch.plans, o);
    assertClose(got, want, tol, seed);
    const cpu = cpuTensor(images, o, { epoch, ids });
    assert.equal(cpu.plans, batch.plans);
    assertClose(cpu.data, want, tol, seed);
    return batch.plans;
  } finally {
    out.destroy();
    pre.destroy();
  }
}

function randomAugment(next: () => number, round: number): AugmentOptions {
  const range = (lo: number, hi: number): [number, number] => {
    const a = lo + next() * (hi - lo), b = lo + next() * (hi - lo);
    return [Math.min(a, b), Math.max(a, b)];
  };
  const o: AugmentOptions = {};
  if (round === 0 || next() < 0.5) o.trivial = true;
  if (next() < 0.7) {
    o.jitter = {
      ...(next() < 0.8 && { brightness: range(0, 2) }), ...(next() < 0.8 && { contrast: range(0, 2) }),
      ...(next() < 0.8 && { saturation: range(0, 2) }), ...(next() < 0.8 && { hue: range(-0.5, 0.5) }), p: 0.5 + next() / 2,
    };
  }
  if (next() < 0.4) o.solarize = { p: next(), threshold: next() };
  if (next() < 0.4) o.posterize = { p: next(), bits: randomInt(next, 1, 8) };
  if (next() < 0.6) o.erase = { p: next(), scale: range(0, 0.5), ratio: range(0.2, 5), value: next() * 4 - 2 };
  return o;
}

for (const backend of runtime.gpuBackends) {
  test(`augmented pass and CPU tensor match torchvision's ops (f64 reference) on random images, options and layouts (${backend})`, async () => {
    const device = await testDevice(backend);
    const seed = freshSeed();
    const next = rng(seed);
    let steps = 0;
    for (let round = 0; round < 4; round++) {
      const channels = next() < 0.3 ? 1 : 3;
      const o: PreprocessOptions = {
        width: randomInt(next, 1, 20), height: randomInt(next, 1, 20), channels,
        layout: next() < 0.5 ? "nchw" : "nhwc",
        crop: { kind: "random-resized" }, flip: 0.5, seed: randomInt(next, 0, 1000),
        mean: Array.from({ length: channels }, () => next()), std: Array.from({ length: channels }, () => 0.2 + next()),
        augment: randomAugment(next, round),
      };
      const images = Array.from({ length: randomInt(next, 1, 6) }, () => randomImage(next, randomInt(next, 1, 60), randomInt(next, 1, 60), [1, 3, 4][randomInt(next, 0, 2)]));
      const plans = await check(device, o, images, seed, round);
      steps += plans.reduce((a, p) => a + (p.augment?.steps.length ?? 0), 0);
    }
    assert.ok(steps > 0, "no sample drew an op");
  });
}

test("each op alone, at its edges: factors 0 and 2, hue ±0.5, solarize at 0 and 1, posterize 1 and 8 bits", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const images = Array.from({ length: 3 }, () => randomImage(next, randomInt(next, 8, 40), randomInt(next, 8, 40), 3));
  const cases: AugmentOptions[] = [
    { jitter: { brightness: [0, 0] } }, { jitter: { brightness: [2, 2] } },
    { jitter: { contrast: [0, 0] } }, { jitter: { contrast: [2, 2] } },
    { jitter: { saturation: [0, 0] } }, { jitter: { saturation: [2, 2] } },
    { jitter: { hue: [0.5, 0.5] } }, { jitter: { hue: [-0.5, -0.5] } }, { jitter: { hue: [0.25, 0.25] } },
    { solarize: { p: 1, threshold: 0 } }, { solarize: { p: 1, threshold: 1 } },
    { posterize: { p: 1, bits: 1 } }, { posterize: { p: 1, bits: 8 } },
  ];
  for (const augment of cases) {
    for (const channels of [1, 3] as const) {
      const plans = await check(device, { width: 9, height: 7, channels, mean: Array(channels).fill(0.5), std: Array(channels).fill(0.25), augment }, images, seed);
      // Every image got exactly the one op asked for.
      for (const p of plans) assert.equal(p.augment?.steps.length, 1, JSON.stringify(augment));
    }
  }
});

test("a chain with two contrast steps takes two means, each of the image as it reaches that step", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const images = Array.from({ length: 4 }, () => randomImage(next, randomInt(next, 10, 50), randomInt(next, 10, 50), 3));
  const augment: AugmentOptions = { trivial: { ops: ["contrast"] }, jitter: { brightness: [0.3, 1.8], contrast: [0.2, 1.9] } };
  const plans = await check(device, { width: 16, height: 12, mean: [0.4, 0.4, 0.4], std: [0.3, 0.3, 0.3], seed: 3, augment }, images, seed);
  for (const p of plans) assert.equal(p.augment!.steps.filter((s) => s.op === "contrast").length, 2);
});

test("erasing: inside the image, p = 1 always, zero area erases nothing, per-channel values", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const images = Array.from({ length: 5 }, () => randomImage(next, randomInt(next, 5, 40), randomInt(next, 5, 40), 3));
  const plans = await check(device, { width: 20, height: 16, seed: 9, augment: { erase: { p: 1, value: [-1, 0.5, 2] } } }, images, seed);
  for (const p of plans) {
    const e = p.augment?.erase;
    assert.ok(e && e.x >= 0 && e.y >= 0 && e.x + e.w <= 20 && e.y + e.h <= 16 && e.w * e.h > 0, JSON.stringify(e));
  }
  const none = await check(device, { width: 20, height: 16, seed: 9, augment: { erase: { p: 1, scale: [0, 0] } } }, images, seed);
  for (const p of none) assert.equal(p.augment?.erase && p.augment.erase.w * p.augment.erase.h, 0);
});
