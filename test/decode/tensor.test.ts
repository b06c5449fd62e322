import { readFileSync } from "node:fs";
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { preprocessRef } from "../reference/preprocess.ts";
import { cpuTensor, type TensorImage, type PackedImages, type TensorOptions } from "../../src/decode/tensor.ts";
import { type CropPolicy, planImage, planRegion } from "../../src/decode/crop.ts";
import { CassetteError } from "../../src/errors.ts";

// Against the f64 reference: the CPU reckons the source positions in f32, as the kernel does
// (≤ 0.02 grey levels; see test/gpu/preprocess.test.ts), and a one-level error is ≥ 3.9e-3.
const TOL = 1e-3;

function randomImage(next: () => number, width: number, height: number, channels: number): TensorImage {
  return { data: randomBytes(next, width * height * channels), width, height, channels };
}

function randomPolicy(next: () => number): CropPolicy {
  const k = randomInt(next, 0, 2);
  if (k === 0) return { kind: "resize" };
  if (k === 1) return { kind: "center", resize: randomInt(next, 4, 40) };
  return { kind: "random-resized", scale: [0.05 + 0.5 * next(), 1], ratio: [0.5, 2] };
}

function randomOptions(next: () => number): TensorOptions {
  const channels = next() < 0.5 ? 1 : 3;
  return {
    width: randomInt(next, 1, 24), height: randomInt(next, 1, 24), channels,
    layout: next() < 0.5 ? "nchw" : "nhwc", crop: randomPolicy(next), flip: next(), seed: randomInt(next, 0, 1000),
    mean: Array.from({ length: channels }, () => next()), std: Array.from({ length: channels }, () => 0.2 + next()),
    antialiasAbove: [1, 2, 3][randomInt(next, 0, 2)],
  };
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): { max: number; at: number } {
  let max = 0, at = -1;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= max)) max = d, at = i;
  }
  return { max, at };
}

test("cpuTensor equals the CPU reference of the GPU kernel on fresh images, policies, layouts and antialiasing", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 12; round++) {
    const o = randomOptions(next);
    const images = Array.from({ length: randomInt(next, 1, 5) }, () =>
      randomImage(next, randomInt(next, 1, 90), randomInt(next, 1, 90), [1, 3, 4][randomInt(next, 0, 2)]));
    const ids = images.map((_, i) => `id-${seed}-${round}-${i}`);
    const t = cpuTensor(images, o, { epoch: round, ids });
    const C = o.channels ?? 3, per = C * o.width * o.height;
    assert.equal(t.shape, o.layout === "nhwc" ? [images.length, o.height, o.width, C] : [images.length, C, o.height, o.width]);
    assert.is(t.data.length, images.length * per);
    images.forEach((img, i) => {
      assert.equal(t.plans[i], planImage(img.width, img.height, o, round, ids[i]), "the plan is planImage's");
      const want = preprocessRef(img as Parameters<typeof preprocessRef>[0], t.plans[i], {
        width: o.width, height: o.height, channels: C, layout: o.layout!, mean: o.mean!, std: o.std!, antialiasAbove: o.antialiasAbove,
      });
      const d = maxDiff(t.data.subarray(i * per, (i + 1) * per), want);
      assert.ok(d.max <= TOL, `seed ${seed} round ${round} image ${i} (${img.width}×${img.height}×${img.channels}, ${JSON.stringify(o)}): |diff| ${d.max} at ${d.at}`);
    });
  }
});

test("a box cut by a planned decode (its frame given) gives the whole image's values, bit for bit; a table gives the list's", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 10; round++) {
    const o = randomOptions(next);
    const whole = Array.from({ length: randomInt(next, 1, 4) }, () =>
      randomImage(next, randomInt(next, 1, 120), randomInt(next, 1, 120), [1, 3][randomInt(next, 0, 1)]));
    const ids = whole.map((_, i) => `${seed}:${round}:${i}`);
    // What decodePlanned hands over: the region the plan reads, with its place in the frame.
    const boxes = whole.map((img, i) => {
      const p = planImage(img.width, img.height, o, 1, ids[i]);
      const r = planRegion(p, img.width, img.height, o.width, o.height, o.antialiasAbove ?? 2);
      const data = new Uint8Array(r.width * r.height * img.channels);
      for (let y = 0; y < r.height; y++) {
        const from = ((r.y + y) * img.width + r.x) * img.channels;
        data.set(img.data.subarray(from, from + r.width * img.channels), y * r.width * img.channels);
      }
      return { data, width: r.width, height: r.height, channels: img.channels, frame: { x: r.x, y: r.y, width: img.width, height: img.height } };
    });
    const a = cpuTensor(whole, o, { epoch: 1, ids });
    const b = cpuTensor(boxes, o, { epoch: 1, ids });
    assert.equal(b.plans, a.plans, "the same plans, drawn on the frames");
    assert.ok(a.data.every((v, i) => Object.is(v, b.data[i])), `seed ${seed} round ${round}: the boxes' tensor differs by ${maxDiff(a.data, b.data).max}`);
    // The same boxes as one buffer, out of order, gaps between (a read workers' batch).
    const order = boxes.map((_, i) => i).sort(() => next() - 0.5);
    const at = new Int32Array(boxes.length);
    let end = randomInt(next, 0, 7);
    for (const i of order) at[i] = end, end += boxes[i].data.length + randomInt(next, 0, 9);
    const pixels = randomBytes(next, end);
    boxes.forEach((x, i) => pixels.set(x.data, at[i]));
    const table: PackedImages = {
      pixels, at, width: Int32Array.from(boxes, (x) => x.width), height: Int32Array.from(boxes, (x) => x.height),
      channels: Int32Array.from(boxes, (x) => x.channels), frameX: Int32Array.from(boxes, (x) => x.frame.x),
      frameY: Int32Array.from(boxes, (x) => x.frame.y), frameWidth: Int32Array.from(boxes, (x) => x.frame.width),
      frameHeight: Int32Array.from(boxes, (x) => x.frame.height),
    };
    const out = new Float32Array(a.data.length + 5).fill(NaN);
    const c = cpuTensor(table, o, { epoch: 1, ids }, out);
    assert.is(c.data, out, "written into the array given");
    assert.ok(a.data.every((v, i) => Object.is(v, out[i])), `seed ${seed} round ${round}: the table's tensor differs`);
    assert.ok(Number.isNaN(out[a.data.length]), "nothing written past the tensor");
  }
});

test("cpuTensor's errors name the option or the image, and the value", () => {
  const img = { data: new Uint8Array(12), width: 2, height: 2, channels: 3 };
  const expect = (fn: () => unknown, pattern: RegExp) => {
    try {
      fn();
      assert.unreachable("should throw");
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
      assert.match((e as Error).message, pattern);
    }
  };
  expect(() => cpuTensor([img], { width: 4, height: 4, flip: 0.5 }), /'ids'.*undefined/);
  expect(() => cpuTensor([{ ...img, channels: 2 }], { width: 4, height: 4 }), /image 0 as 'channels' must be 1, 3 or 4: current value is 2/);
  expect(() => cpuTensor([img, { ...img, data: new Uint8Array(5) }], { width: 4, height: 4 }), /image 1 .* 12 bytes from 0: current value is 5 bytes/);
  expect(() => cpuTensor([img], { width: 4, height: 4 }, {}, new Float32Array(47)), /48 values: current value is 47/);
  expect(() => cpuTensor([], { width: 4, height: 4 }), /no images/);
  expect(() => cpuTensor([img], { width: 0, height: 4 }), /'width'.*current value is 0/);
  expect(() => cpuTensor([img], { width: 4, height: 4, std: [1, 0, 1] }), /'std'/);
  expect(() => cpuTensor([img], { width: 4, height: 4, crop: { kind: "random-resized", scale: [0.5, 0.1] } }), /'crop.scale'/);
});

test("a Loader's batches with decode: { plan }, read in 2 read workers, in a decode pool or in its thread, each decoding only the box, give each sample the same tensor as the whole image's, augmentations (warps too) included", async () => {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { fashionMnistStore } = await import("../_support/fashion_mnist.ts");
  const { Loader } = await import("../../src/loader.ts");
  const dir = mkdtempSync(join(tmpdir(), "cassette-cpu-tensor-"));
  try {
    const path = join(dir, "fm.sqlite");
    const { store, ids } = await fashionMnistStore(path, "fm", 40);
    await store.close();
    const seed = freshSeed();
    // TrivialAugment's warps widen the box a plan reads to its crop's edge (crop.ts planRegion).
    const augment = { trivial: { ops: ["identity", "rotate", "shearX", "translateY"] as const }, jitter: { brightness: 0.3, hue: 0.1 }, erase: { p: 0.5 } };
    const o: TensorOptions = { width: 20, height: 18, channels: 3, crop: { kind: "random-resized", scale: [0.2, 1] }, flip: 0.5, seed, mean: [0.5, 0.4, 0.3], std: [0.2, 0.3, 0.4], augment };
    const per = 3 * 20 * 18;
    const reads = { "read workers": { workers: 2 }, "a decode pool": { workers: 0, decodeWorkers: 2 }, "its thread": { workers: 0, decodeWorkers: 0 } };
    const byRead = new Map<string, Map<string, Float32Array>>();
    for (const [name, how] of Object.entries(reads)) {
      const loader = new Loader({ store: `sqlite:${path}`, dataset: "fm", ids, batchSize: 16, seed, decode: { plan: o }, ...how });
      const got = new Map<string, Float32Array>();
      let boxes = 0;
      for await (const b of loader.epoch(1)) {
        const images = b.images ?? b.items.map((s) => s.image!);
        boxes += b.images?.frameWidth ? Array.from(b.images.frameWidth).filter((w) => w > 0).length : b.items.filter((s) => (s.image as { frame?: unknown }).frame).length;
        const t = cpuTensor(images, o, { epoch: 1, ids: b.ids });
        b.ids.forEach((id, i) => got.set(id, t.data.slice(i * per, (i + 1) * per)));
        b.release?.();
      }
      await loader.close();
      assert.is(got.size, ids.length, `${name}: every sample once`);
      assert.is(boxes, ids.length, `${name}: every image decoded as the box its plan reads`);
      byRead.set(name, got);
    }
    // The whole image's tensor, decoded here.
    const { createJpegDecoder } = await import("../../src/decode/jpeg.ts");
    const { openStore } = await import("../../src/source/open.ts");
    const jpeg = await createJpegDecoder();
    const reader = await openStore(`sqlite:${path}`);
    const rows = await reader.get("fm", ids);
    await reader.close();
    const whole = cpuTensor(rows.map((r) => jpeg.decode(r.data)), o, { epoch: 1, ids });
    assert.ok(whole.plans.some((p) => p.augment?.warp) && whole.plans.some((p) => !p.augment?.warp), "warped samples and others");
    ids.forEach((id, k) => {
      const want = whole.data.subarray(k * per, (k + 1) * per);
      for (const [name, got] of byRead) {
        const a = got.get(id)!;
        assert.ok(a.every((v, i) => Object.is(v, want[i])), `seed ${seed}: sample ${id}'s tensor read by ${name} differs from the whole image's by ${maxDiff(a, want).max}`);
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the resampler's module stays small enough for a page's main thread to compile synchronously (browsers refuse over 4 kB there)", () => {
  const bytes = readFileSync(new URL("../../wasm/build/tensor.wasm", import.meta.url)).length;
  assert.ok(bytes > 0 && bytes < 4096, `wasm/build/tensor.wasm is ${bytes} bytes`);
});
