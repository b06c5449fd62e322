import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, poisonedBuffer, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { preprocessRef } from "../reference/preprocess.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import type { PreprocessOptions, Preprocessor } from "../../src/gpu/preprocess.ts";
import { planImage } from "../../src/gpu/pack.ts";
import type { CropPolicy, DecodedImage, PackedImages } from "../../src/gpu/pack.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";
import { cpuTensor } from "../../src/decode/tensor.ts";

// Tolerance: both sides resample in floating point; the shader's source coordinates are f32
// (relative error 2^-24 on positions below 512 px, times a slope of at most 255 per px) and it
// sums up to a few hundred weighted taps in f32. That is ≤ 0.02 grey levels, which after
// normalization by std ≥ 0.2 is < 4e-4; 1e-3 leaves room and still catches a one-level error
// (1/255/std ≥ 3.9e-3 at std ≤ 1).
const TOL = 1e-3;

function randomImage(next: () => number, width: number, height: number, channels: number): DecodedImage {
  return { data: randomBytes(next, width * height * channels), width, height, channels };
}

/**
 * The images as one table, as read workers' packets carry them (src/read/packet.ts): each on a
 * 4-byte boundary, laid out in an order of their own (decode order), gaps between.
 */
function asTable(next: () => number, images: DecodedImage[]): PackedImages {
  const order = images.map((_, i) => i).sort(() => next() - 0.5);
  const at = new Int32Array(images.length);
  let end = 0;
  for (const i of order) at[i] = end, (end += Math.ceil((images[i].data.length + randomInt(next, 0, 9)) / 4) * 4);
  const pixels = randomBytes(next, end);
  images.forEach((img, i) => pixels.set(img.data, at[i]));
  return { pixels, at, width: Int32Array.from(images, (x) => x.width), height: Int32Array.from(images, (x) => x.height), channels: Int32Array.from(images, (x) => x.channels) };
}

/** Runs a batch into a poisoned buffer and checks every value against the reference; `table`: given as one table of images. */
async function check(device: GPUDevice, pre: Preprocessor, images: DecodedImage[], seed: number, epoch = 0, table?: () => number): Promise<void> {
  const o = pre.options;
  const C = o.channels ?? 3;
  const per = o.width * o.height * C;
  const out = poisonedBuffer(device, images.length * per * 4);
  const ids = images.map((_, i) => `id-${seed}-${i}`);
  try {
    const batch = await pre.run(table ? asTable(table, images) : images, { epoch, ids, output: out });
    assert.equal(batch.shape, o.layout === "nhwc" ? [images.length, o.height, o.width, C] : [images.length, C, o.height, o.width]);
    const got = new Float32Array(await readBuffer(device, out, images.length * per * 4));
    const want = new Float32Array(images.length * per);
    images.forEach((img, i) => {
      want.set(preprocessRef(img, batch.plans[i], {
        width: o.width, height: o.height, channels: C, layout: o.layout ?? "nchw",
        mean: o.mean ?? Array(C).fill(0), std: o.std ?? Array(C).fill(1),
      }), i * per);
    });
    assertClose(got, want, TOL, seed);
  } finally {
    out.destroy();
  }
}

function randomPolicy(next: () => number): CropPolicy {
  const k = randomInt(next, 0, 2);
  if (k === 0) return { kind: "resize" };
  if (k === 1) return { kind: "center", resize: randomInt(next, 4, 40) };
  return { kind: "random-resized", scale: [0.05 + 0.5 * next(), 1], ratio: [0.5, 2] };
}

for (const backend of runtime.gpuBackends) {
  test(`crop_resize_normalize matches the CPU reference on random images, policies and layouts, given as a list or as one table (${backend})`, async () => {
    const device = await testDevice(backend);
    const seed = freshSeed();
    const next = rng(seed);
    for (let round = 0; round < 3; round++) {
      const channels = next() < 0.5 ? 1 : 3;
      const options: PreprocessOptions = {
        width: randomInt(next, 1, 24),
        height: randomInt(next, 1, 24),
        channels,
        layout: next() < 0.5 ? "nchw" : "nhwc",
        crop: randomPolicy(next),
        flip: next(),
        seed: randomInt(next, 0, 1000),
        mean: Array.from({ length: channels }, () => next()),
        std: Array.from({ length: channels }, () => 0.2 + next()),
      };
      const pre = await createPreprocessor(device, options);
      const images = Array.from({ length: randomInt(next, 1, 6) }, () =>
        randomImage(next, randomInt(next, 1, 120), randomInt(next, 1, 120), [1, 3, 4][randomInt(next, 0, 2)]));
      await check(device, pre, images, seed, round);
      await check(device, pre, images, seed, round, next); // the same images as one table (Batch.images)
      pre.destroy();
    }
  });
}

test("edge cases: 1×1 images, upscaling, antialiased downscaling, gray input, a batch of one", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const rgb = await createPreprocessor(device, { width: 20, height: 12, mean: [0.5, 0.5, 0.5], std: [0.25, 0.25, 0.25] });
  // 1×1 source; 1×1 to 20×12; a tiny gray image upscaled; > 2× shrink on both axes (the
  // triangle filter widens) and on one axis only; a batch of one.
  await check(device, rgb, [randomImage(next, 1, 1, 3)], seed);
  await check(device, rgb, [randomImage(next, 3, 2, 1), randomImage(next, 1, 1, 1)], seed);
  await check(device, rgb, [randomImage(next, 150, 97, 3), randomImage(next, 21, 200, 1), randomImage(next, 41, 25, 4)], seed);
  rgb.destroy();
  const one = await createPreprocessor(device, { width: 1, height: 1, channels: 1 });
  await check(device, one, [randomImage(next, 1, 1, 1), randomImage(next, 64, 33, 3)], seed);
  one.destroy();
});

test("crops that touch or pass the border: full-image random crops, a centre crop larger than the image", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  // Square images and scale = ratio = 1: every random box is the whole image.
  const full = await createPreprocessor(device, { width: 9, height: 7, crop: { kind: "random-resized", scale: [1, 1], ratio: [1, 1] }, flip: 0.5, seed });
  const images = Array.from({ length: 4 }, () => {
    const side = randomInt(next, 1, 40);
    return randomImage(next, side, side, 3);
  });
  const plans = full.plan(images, { epoch: 0, ids: images.map((_, i) => `id-${seed}-${i}`) });
  for (const [i, p] of plans.entries()) assert.equal([p.x, p.y, p.w, p.h], [0, 0, images[i].width, images[i].height]);
  await check(device, full, images, seed);
  full.destroy();
  // Resize(4) of a 30×20 image is 6×4; CenterCrop(8×8) reaches past it: edge pixels repeat.
  const center = await createPreprocessor(device, { width: 8, height: 8, crop: { kind: "center", resize: 4 } });
  await check(device, center, [randomImage(next, 30, 20, 3), randomImage(next, 5, 50, 1)], seed);
  center.destroy();
});

test("the maximum batch (65535 images, one dispatch) is right and one more is refused", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const pre = await createPreprocessor(device, { width: 2, height: 1, channels: 1 });
  const images = Array.from({ length: 65535 }, () => randomImage(next, randomInt(next, 1, 3), 1, 1));
  await check(device, pre, images, seed);
  try {
    await pre.run([...images, images[0]]);
    assert.unreachable("should throw");
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
    assert.match((e as Error).message, /65536/);
  }
  pre.destroy();
}, { timeoutMs: 240_000 });

test("plans are a pure function of (seed, epoch, id): not of batch position or runtime", () => {
  const o = { width: 32, height: 32, crop: { kind: "random-resized" }, flip: 0.5, seed: 11 } as const;
  const a = planImage(400, 300, o, 2, "0d8b0c2e-1111-5222-8333-444455556666");
  assert.equal(planImage(400, 300, o, 2, "0d8b0c2e-1111-5222-8333-444455556666"), a);
  assert.not.equal(planImage(400, 300, o, 3, "0d8b0c2e-1111-5222-8333-444455556666"), a);
  assert.not.equal(planImage(400, 300, { ...o, seed: 12 }, 2, "0d8b0c2e-1111-5222-8333-444455556666"), a);
  // A value fixed here guards against silent changes of the plan across versions and runtimes.
  assert.equal(a, { x: 40, y: 61, w: 175, h: 226, mirror: true });
  // Changing the flip probability leaves the crop boxes as they were.
  const b = planImage(400, 300, { ...o, flip: 0 }, 2, "0d8b0c2e-1111-5222-8333-444455556666");
  assert.equal([b.x, b.y, b.w, b.h, b.mirror], [a.x, a.y, a.w, a.h, false]);
});

test("random-resized crops keep within scale and ratio, and mirror about p of the images", () => {
  const o = { width: 8, height: 8, crop: { kind: "random-resized", scale: [0.2, 0.6], ratio: [0.5, 2] }, flip: 0.3, seed: 5 } as const;
  let mirrored = 0;
  const n = 4000;
  for (let i = 0; i < n; i++) {
    const p = planImage(500, 400, o, 0, i);
    assert.ok(Number.isInteger(p.x) && Number.isInteger(p.y) && p.x >= 0 && p.y >= 0 && p.x + p.w <= 500 && p.y + p.h <= 400);
    const area = (p.w * p.h) / (500 * 400);
    assert.ok(area > 0.19 && area < 0.61, `area ${area}`);
    assert.ok(p.w / p.h > 0.49 && p.w / p.h < 2.05, `ratio ${p.w / p.h}`);
    mirrored += p.mirror ? 1 : 0;
  }
  assert.ok(Math.abs(mirrored / n - 0.3) < 0.03, `mirrored ${mirrored / n}`);
});

test("centre crop follows torchvision's Resize + CenterCrop (truncated long side, round-half-even offsets)", () => {
  // Resize(256) of 500×375 is 341×256; CenterCrop(224) starts at round(58.5) = 58, round(16) = 16.
  const p = planImage(500, 375, { width: 224, height: 224, crop: { kind: "center", resize: 256 } }, 0, 0);
  const s = 375 / 256;
  assert.equal([p.x, p.y, p.w, p.h].map((v) => +v.toFixed(9)), [58 * (500 / 341), 16 * s, 224 * (500 / 341), 224 * s].map((v) => +v.toFixed(9)));
});

test("the staging ring allocates nothing once warm, and batches in flight do not disturb each other", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const pre = await createPreprocessor(device, { width: 6, height: 5, depth: 3, mean: [0.4, 0.5, 0.6], std: [0.3, 0.3, 0.3] });
  const batch = () => Array.from({ length: randomInt(next, 1, 4) }, () => randomImage(next, randomInt(next, 1, 30), randomInt(next, 1, 30), 3));
  // Warm up with the largest batch this test will see, on every slot.
  const big = Array.from({ length: 4 }, () => randomImage(next, 30, 30, 3));
  for (let i = 0; i < 3; i++) await pre.run(big);
  await device.queue.onSubmittedWorkDone();
  const warm = pre.allocations;
  // Three batches submitted back to back, none awaited in between, then all read.
  const inputs = [batch(), batch(), batch()];
  const outs = [];
  for (const imgs of inputs) outs.push(await pre.run(imgs));
  assert.is(pre.allocations, warm, "no GPU buffer created after warm-up");
  for (const [k, out] of outs.entries()) {
    const got = new Float32Array(await readBuffer(device, out.buffer, out.bytes));
    const per = 3 * 6 * 5;
    const want = new Float32Array(inputs[k].length * per);
    inputs[k].forEach((img, i) => want.set(preprocessRef(img, out.plans[i], { width: 6, height: 5, channels: 3, layout: "nchw", mean: [0.4, 0.5, 0.6], std: [0.3, 0.3, 0.3] }), i * per));
    assertClose(got, want, TOL, seed);
  }
  pre.destroy();
});

test("clear errors: random policy without ids, bad channels, short data, bad options", async () => {
  const device = await testDevice();
  const expect = async (fn: () => unknown, pattern: RegExp) => {
    try {
      await fn();
      assert.unreachable("should throw");
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
      assert.match((e as Error).message, pattern);
    }
  };
  const img = { data: new Uint8Array(12), width: 2, height: 2, channels: 3 };
  const pre = await createPreprocessor(device, { width: 4, height: 4, flip: 0.5 });
  await expect(() => pre.run([img]), /'ids'.*undefined/);
  await expect(() => pre.run([{ ...img, channels: 2 }], { ids: [1] }), /'channels' must be 1, 3 or 4: current value is 2/);
  await expect(() => pre.run([{ ...img, data: new Uint8Array(5) }], { ids: [1] }), /12 bytes: current value is 5/);
  await expect(() => pre.run([img], { ids: [1], output: device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE }) }), /192 bytes: current value is 16/);
  // The ring survives a failed batch.
  const ok = await pre.run([img], { ids: [1] });
  assert.is(ok.bytes, 192);
  pre.destroy();
  await expect(() => createPreprocessor(device, { width: 0, height: 4 }), /'width'.*current value is 0/);
  await expect(() => createPreprocessor(device, { width: 4, height: 4, std: [1, 0, 1] }), /'std'/);
  await expect(() => createPreprocessor(device, { width: 4, height: 4, crop: { kind: "random-resized", scale: [0.5, 0.1] } }), /'crop.scale'/);
});

for (const backend of runtime.gpuBackends) {
  test(`the CPU's cpuTensor (src/decode/tensor.ts) equals the GPU's tensor from the same plans, within f32 rounding (${backend})`, async () => {
    const device = await testDevice(backend);
    const seed = freshSeed();
    const next = rng(seed);
    let worst = 0;
    for (let round = 0; round < 3; round++) {
      const channels = next() < 0.5 ? 1 : 3;
      const options: PreprocessOptions = {
        width: randomInt(next, 1, 24), height: randomInt(next, 1, 24), channels, layout: next() < 0.5 ? "nchw" : "nhwc",
        crop: randomPolicy(next), flip: next(), seed: randomInt(next, 0, 1000),
        mean: Array.from({ length: channels }, () => next()), std: Array.from({ length: channels }, () => 0.2 + next()),
      };
      const pre = await createPreprocessor(device, options);
      const images = Array.from({ length: randomInt(next, 1, 6) }, () =>
        randomImage(next, randomInt(next, 1, 120), randomInt(next, 1, 120), [1, 3, 4][randomInt(next, 0, 2)]));
      const ids = images.map((_, i) => `id-${seed}-${round}-${i}`);
      const out = await pre.run(images, { epoch: round, ids });
      const gpu = new Float32Array(await readBuffer(device, out.buffer, out.bytes));
      const cpu = cpuTensor(images, options, { epoch: round, ids });
      assert.equal(cpu.plans, out.plans);
      assert.equal(cpu.shape, out.shape);
      for (let i = 0; i < gpu.length; i++) {
        const d = Math.abs(gpu[i] - cpu.data[i]);
        if (!(d <= worst)) worst = d;
      }
      pre.destroy();
    }
    // f32 sums of a few hundred taps on either side, in another order: ~1e-6 of values below ~5.
    assert.ok(worst <= 1e-5, `seed ${seed}: CPU and GPU differ by ${worst}`);
  });
}
