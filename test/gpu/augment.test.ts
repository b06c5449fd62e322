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
import { affineForward, augmentRef, invert, type M3, sourceOf, warpedRef } from "../reference/augment.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import type { PreprocessOptions } from "../../src/gpu/preprocess.ts";
import type { DecodedImage, ImagePlan } from "../../src/gpu/pack.ts";
import { type AugmentOptions, inverseAffine, type Warp } from "../../src/decode/augment.ts";
import { planRegion } from "../../src/decode/crop.ts";
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
    const warp = plans[i].augment?.warp;
    let planes: number[][], edges = new Set<number>();
    if (warp) {
      // The forward maps, from the plan's inverse matrices (inverseAffine is checked on its own below).
      const forwards = warp.ops.map((m) => invert([...m, 0, 0, 1]));
      ({ planes, near: edges } = warpedRef(img, plans[i], forwards, warp.fill, W, H, C));
    } else {
      const flat = preprocessRef(img, plans[i], { width: W, height: H, channels: C as 1 | 3, layout, mean: Array(C).fill(0), std: Array(C).fill(1) });
      planes = Array.from({ length: C }, (_, c) => Array.from({ length: W * H }, (_, k) => flat[at(k, c)]));
    }
    const { planes: out, near } = augmentRef(planes, W, plans[i].augment, o.mean ?? Array(C).fill(0), o.std ?? Array(C).fill(1));
    for (const k of edges) near.add(k);
    // An op that reads other pixels (a contrast's mean, an autocontrast's range, sharpness, blur)
    // carries a value near a discontinuity to the rest: then the whole image may differ by a step.
    const a = plans[i].augment;
    const spreads = !!a?.blur || !!a?.steps.some((s) => s.op === "contrast" || s.op === "autocontrast" || s.op === "sharpness");
    if (near.size && spreads) for (let k = 0; k < W * H; k++) near.add(k);
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
  if (next() < 0.5) {
    o.affine = { degrees: range(-180, 180), translate: [next() * 0.5, next() * 0.5], scale: range(0.5, 1.5), shear: [...range(-40, 40), ...range(-40, 40)] as [number, number, number, number], p: 0.5 + next() / 2 };
  } else if (next() < 0.5) o.rotate = next() * 180;
  if (next() < 0.5) o.fill = next();
  if (next() < 0.4) o.blur = { kernel: 2 * randomInt(next, 0, 5) + 1, sigma: range(0.1, 3), p: 0.5 + next() / 2 };
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
    { trivial: { ops: ["autoContrast"] } }, { trivial: { ops: ["sharpness"] } },
  ];
  for (const augment of cases) {
    for (const channels of [1, 3] as const) {
      const plans = await check(device, { width: 9, height: 7, channels, mean: Array(channels).fill(0.5), std: Array(channels).fill(0.25), augment }, images, seed);
      // Every image got exactly the one op asked for (TrivialAugment's sharpness: possibly of factor 1).
      for (const p of plans) assert.equal(p.augment?.steps.length, 1, JSON.stringify(augment));
    }
  }
});

test("inverseAffine is the inverse of torchvision's affine (R·S·SHy·SHx about the centre, then the shift) on random parameters", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let i = 0; i < 200; i++) {
    const args = [next() * 720 - 360, [next() * 40 - 20, next() * 40 - 20], 0.3 + next() * 2, [next() * 140 - 70, next() * 140 - 70], [next() * 30 - 15, next() * 30 - 15]] as const;
    const m: Warp = inverseAffine(...args);
    const want = invert(affineForward(...args));
    const got: M3 = [...m, 0, 0, 1];
    for (let k = 0; k < 9; k++) assert.ok(Math.abs(got[k] - want[k]) < 1e-9, `entry ${k}: ${got[k]} vs ${want[k]} (seed ${seed}, ${JSON.stringify(args)})`);
  }
});

test("rotations by 90 and 180 degrees move pixels exactly; 0 leaves the tensor as it was; the fill is where the rotation brings nothing", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const images = Array.from({ length: 3 }, () => randomImage(next, 12, 12, 3));
  const run = async (augment: AugmentOptions | undefined, W = 12, H = 12) => {
    const pre = await createPreprocessor(device, { width: W, height: H, ...(augment && { augment }) });
    const out = poisonedBuffer(device, images.length * 3 * W * H * 4);
    try {
      await pre.run(images, { ids: images.map((_, i) => i), output: out });
      return new Float32Array(await readBuffer(device, out, images.length * 3 * W * H * 4));
    } finally {
      out.destroy();
      pre.destroy();
    }
  };
  const plain = await run(undefined), turned = await run({ rotate: [90, 90] }), half = await run({ rotate: [180, 180] }), none = await run({ rotate: [0, 0] });
  const n = 12, per = 3 * n * n;
  let worst = 0;
  for (let i = 0; i < images.length; i++) {
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < n; y++) {
        for (let x = 0; x < n; x++) {
          const v = (t: Float32Array, xx: number, yy: number) => t[i * per + c * n * n + yy * n + xx];
          // Counter-clockwise by 90: output (x, y) is input (n − 1 − y, x); by 180: (n − 1 − x, n − 1 − y).
          worst = Math.max(worst, Math.abs(v(turned, x, y) - v(plain, n - 1 - y, x)), Math.abs(v(half, x, y) - v(plain, n - 1 - x, n - 1 - y)), Math.abs(v(none, x, y) - v(plain, x, y)));
        }
      }
    }
  }
  assert.ok(worst < 1e-5, `largest difference from the moved pixels: ${worst} (seed ${seed})`);
  // A 45° turn of a square brings the corners in from outside: fill 1 (white) there, normalized by mean 0, std 1.
  const corner = await run({ rotate: [45, 45], fill: 1 });
  assert.is(corner[0], 1);
  assert.ok(Math.abs(corner[per / 3 / 2 + n / 2] - plain[per / 3 / 2 + n / 2]) < 0.5, "the middle is the image's");
});

test("a planned decode of a warped sample holds every pixel it reads: the tensor of the region is the whole image's, bit for bit", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const o: PreprocessOptions = { width: 24, height: 20, crop: { kind: "random-resized", scale: [0.05, 0.5] }, flip: 0.5, seed: 4, augment: { trivial: { ops: ["rotate", "shearX", "translateY"] }, affine: { degrees: 40, scale: [0.7, 1.3], translate: [0.2, 0.2] } } };
  const pre = await createPreprocessor(device, o);
  const images = Array.from({ length: 6 }, () => randomImage(next, randomInt(next, 60, 200), randomInt(next, 60, 200), 3));
  const ids = images.map((_, i) => `warp-${i}`);
  const plans = pre.plan(images, { ids });
  const boxes = images.map((img, i) => {
    const r = planRegion(plans[i], img.width, img.height, o.width, o.height);
    const data = new Uint8Array(r.width * r.height * 3);
    for (let y = 0; y < r.height; y++) data.set(img.data.subarray(((r.y + y) * img.width + r.x) * 3, ((r.y + y) * img.width + r.x + r.width) * 3), y * r.width * 3);
    return { data, width: r.width, height: r.height, channels: 3, frame: { x: r.x, y: r.y, width: img.width, height: img.height } };
  });
  assert.ok(plans.every((p) => p.augment?.warp), "every sample warped");
  const bytes = images.length * 3 * 24 * 20 * 4;
  const whole = poisonedBuffer(device, bytes), part = poisonedBuffer(device, bytes);
  try {
    await pre.run(images, { ids, output: whole });
    await pre.run(boxes, { ids, output: part });
    const a = new Float32Array(await readBuffer(device, whole, bytes)), b = new Float32Array(await readBuffer(device, part, bytes));
    const i = a.findIndex((v, k) => !Object.is(v, b[k]));
    assert.is(i, -1, `differs at ${i}: ${a[i]} vs ${b[i]} (seed ${seed})`);
    assert.ok(boxes.some((bx, k) => bx.width * bx.height < images[k].width * images[k].height), "some region smaller than its image");
  } finally {
    whole.destroy();
    part.destroy();
    pre.destroy();
  }
});

test("masks move with their images' geometric ops, by nearest neighbour, 0 where the ops bring in pixels from outside", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const W = 18, H = 14;
  const pre = await createPreprocessor(device, { width: W, height: H, crop: { kind: "random-resized" }, flip: 0.5, seed: 2, augment: { trivial: { ops: ["rotate", "shearX", "translateY"] }, affine: { degrees: 60, scale: [0.6, 1.2], p: 0.7 } } });
  const images = Array.from({ length: 5 }, () => randomImage(next, randomInt(next, 20, 80), randomInt(next, 20, 80), 3));
  // Masks at half size, values 1…255 so that the fill's 0 is told apart.
  const masks = images.map((img) => {
    const m = randomImage(next, Math.max(1, img.width >> 1), Math.max(1, img.height >> 1), 1);
    m.data.forEach((v, k) => (m.data[k] = 1 + (v % 255)));
    return m;
  });
  const ids = images.map((_, i) => `mask-${seed}-${i}`);
  try {
    const batch = await pre.run(images, { ids, masks });
    const got = new Uint32Array(await readBuffer(device, batch.masks!.buffer, batch.masks!.bytes));
    let checked = 0, filled = 0;
    batch.masks!.plans.forEach((mp, i) => {
      const forwards = (batch.plans[i].augment?.warp?.ops ?? []).map((m) => invert([...m, 0, 0, 1]));
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          let q: [number, number] = [x, y], outside = false, near = false;
          for (let k = forwards.length - 1; k >= 0 && !outside; k--) {
            q = sourceOf(forwards[k], q[0], q[1], W, H);
            near ||= Math.min(Math.abs(q[0] + 0.5), Math.abs(q[0] - (W - 0.5)), Math.abs(q[1] + 0.5), Math.abs(q[1] - (H - 0.5))) < 1e-3;
            outside = q[0] < -0.5 || q[0] >= W - 0.5 || q[1] < -0.5 || q[1] >= H - 0.5;
          }
          const u = mp.mirror ? W - 1 - q[0] : q[0];
          const tx = mp.x + (u + 0.5) * (mp.w / W), ty = mp.y + (q[1] + 0.5) * (mp.h / H);
          const frac = (t: number) => Math.min(t - Math.floor(t), Math.ceil(t) - t);
          if (near || (!outside && (frac(tx) < 1e-3 || frac(ty) < 1e-3))) continue;
          const m = masks[i];
          const want = outside ? 0 : m.data[Math.min(Math.max(Math.floor(ty), 0), m.height - 1) * m.width + Math.min(Math.max(Math.floor(tx), 0), m.width - 1)];
          assert.is(got[i * W * H + y * W + x], want, `mask ${i} pixel (${x}, ${y}) (seed ${seed})`);
          checked++;
          filled += outside ? 1 : 0;
        }
      }
    });
    assert.ok(checked > 0.8 * images.length * W * H, `checked ${checked}`);
    assert.ok(filled > 0, "some pixels brought in from outside");
  } finally {
    pre.destroy();
  }
});

test("two geometric ops: a pixel the later op brings in from outside is filled, though the earlier would map it back inside", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const images = Array.from({ length: 8 }, () => randomImage(next, randomInt(next, 20, 60), randomInt(next, 20, 60), 3));
  const augment: AugmentOptions = { trivial: { ops: ["translateX", "translateY"] }, affine: { degrees: [45, 45] }, fill: 0.5 };
  const plans = await check(device, { width: 20, height: 16, seed: 5, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], augment }, images, seed);
  assert.ok(plans.every((p) => p.augment?.warp?.ops.length === 2));
});

test("Gaussian blur: kernels of 1 to 23 taps on images smaller and larger than the kernel (reflection at both edges), the erased box written after it", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (const [kernel, W, H] of [[1, 6, 5], [3, 9, 7], [7, 4, 3], [23, 30, 26], [5, 1, 9]] as const) {
    const images = Array.from({ length: 3 }, () => randomImage(next, randomInt(next, 10, 50), randomInt(next, 10, 50), 3));
    for (const layout of ["nchw", "nhwc"] as const) {
      const plans = await check(device, { width: W, height: H, layout, seed: 8, mean: [0.4, 0.5, 0.6], std: [0.3, 0.3, 0.3], augment: { jitter: { contrast: 0.5 }, blur: { kernel, sigma: [0.2, 4] }, erase: { p: 0.7, scale: [0.05, 0.3] } } }, images, seed);
      assert.ok(plans.every((p) => p.augment?.blur?.kernel === kernel));
    }
  }
});

test("sharpness and autocontrast inside a chain: the neighbours run through the steps before, and a contrast after takes the figures of the image as it then is", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const images = Array.from({ length: 4 }, () => randomImage(next, randomInt(next, 12, 50), randomInt(next, 12, 50), 3));
  for (const ops of [["sharpness"], ["autoContrast"]] as const) {
    for (const [W, H] of [[11, 9], [2, 5], [3, 3]] as const) {
      const augment: AugmentOptions = { trivial: { ops }, jitter: { brightness: [0.5, 1.5], contrast: [0.3, 1.7], hue: 0.2 }, affine: { degrees: 20, p: 0.5 } };
      await check(device, { width: W, height: H, seed: randomInt(next, 0, 99), mean: [0.5, 0.5, 0.5], std: [0.3, 0.3, 0.3], augment }, images, seed);
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
