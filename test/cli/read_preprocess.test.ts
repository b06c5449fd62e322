/**
 * `cassette read --preprocess`: the tensor the CLI makes is the one the training path makes
 * (train's loaderBatches, called here on the same samples with the options a trainer passes),
 * on real Fashion-MNIST JPEGs in a SQLite store.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cassette } from "../_support/cli.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { testDevice } from "../_support/gpu.ts";
import { preprocessRef } from "../reference/preprocess.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { Loader } from "../../src/loader.ts";
import { openStore } from "../../src/source/open.ts";
import { createDecoder } from "../../src/decode/decoders.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import type { PreprocessOptions } from "../../src/gpu/preprocess.ts";
import type { DecodedImage } from "../../src/gpu/pack.ts";
import { loaderBatches } from "../../src/train/loader_batches.ts";
import { FASHION_MNIST_MEAN, FASHION_MNIST_STD } from "../../src/dataset/fashion_mnist.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-read-pre-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DATASET = "fm";
// 120 of each split: 240 images, a few batches, quick on lavapipe.
const ready = fashionMnistStore(join(dir, "fm.sqlite"), DATASET, 120).then(async ({ store, ids }) => (await store.close(), ids));
const STORE = `sqlite:${join(dir, "fm.sqlite")}`;

/** A .npy file (format 1.0, '<f4', C order) as its shape and values. */
function readNpy(path: string): { shape: number[]; data: Float32Array } {
  const bytes = readFileSync(path);
  assert.is(String.fromCharCode(...bytes.subarray(1, 6)), "NUMPY");
  const headerLen = bytes[8] | (bytes[9] << 8);
  const header = new TextDecoder().decode(bytes.subarray(10, 10 + headerLen));
  assert.match(header, "'descr': '<f4', 'fortran_order': False");
  assert.is((10 + headerLen) % 64, 0, "the data starts on a 64-byte boundary");
  const shape = /'shape': \(([^)]*)\)/.exec(header)![1].split(",").filter((s) => s.trim()).map(Number);
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset + 10 + headerLen, bytes.byteOffset + bytes.byteLength));
  return { shape, data };
}

/**
 * What the training path makes of `ids` (in that order, one batch, epoch 0): a Loader whose
 * transform decodes as train.ts does, loaderBatches, the tensor read back.
 */
async function trainingTensor(ids: string[], o: PreprocessOptions, grey: boolean): Promise<{ x: Float32Array; images: DecodedImage[] }> {
  const store = await openStore(STORE, { create: false });
  const decoder = await createDecoder();
  const byId = new Map<string, DecodedImage>();
  const loader = new Loader<DecodedImage>({
    store, dataset: DATASET, ids, batchSize: ids.length, shuffle: false, order: "strict",
    transform: (s) => {
      const img = decoder.decode(s.data, grey ? { grey: true } : {});
      byId.set(s.id, img);
      return img;
    },
  });
  const device = await testDevice();
  const pre = await createPreprocessor(device, o);
  try {
    let x: Float32Array | undefined;
    for await (const b of loaderBatches(loader, pre, 0, { classes: 10 })) {
      assert.equal(b.ids, ids);
      x = new Float32Array(await readBuffer(device, b.x, ids.length * (o.channels ?? 3) * o.width * o.height * 4));
    }
    return { x: x!, images: ids.map((id) => byId.get(id)!) };
  } finally {
    pre.destroy();
    await loader.close();
    await store.close();
  }
}

/** What `--size 20x16 --crop random-resized --scale 0.3,1 --flip 0.5 --seed 7` asks for (RGB, ImageNet's statistics). */
const RGB_CROPS: PreprocessOptions = {
  width: 20, height: 16, channels: 3, crop: { kind: "random-resized", scale: [0.3, 1] }, flip: 0.5, seed: 7,
  mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225],
};

/** Exact equality (the same kernel on the same adapter), else the first index that differs. */
function assertSame(got: Float32Array, want: Float32Array, what: string): void {
  assert.is(got.length, want.length, `${what}: length`);
  const i = got.findIndex((v, k) => !Object.is(v, want[k]));
  assert.is(i, -1, `${what}: differs at ${i}: got ${got[i]}, want ${want[i]}`);
}

test("read --preprocess --size 28 --grey --json: every image through the GPU, the first batch the tensor train's loaderBatches makes", async () => {
  await ready;
  const dump = join(dir, "grey.npy");
  const r = cassette("read", "--store", STORE, "--dataset", DATASET, "--preprocess", "--size", "28", "--grey", "--batch", "64", "--order", "strict", "--dump", dump, "--json");
  assert.is(r.code, 0, r.err);
  const doc = JSON.parse(r.out);
  assert.is(doc.samples, 240);
  assert.is(doc.decode, true, "--preprocess decodes");
  const p = doc.preprocess;
  assert.is(p.images, 240);
  assert.equal(p.tensorShape, [64, 1, 28, 28]);
  assert.equal([p.mean, p.std, p.readback], [[FASHION_MNIST_MEAN], [FASHION_MNIST_STD], false]);
  assert.ok(p.share > 0 && p.share <= 1, `share ${p.share}`);
  assert.equal(p.dump.shape, [64, 1, 28, 28]);
  assert.is(p.dump.ids.length, 64);

  const { shape, data } = readNpy(dump);
  assert.equal(shape, [64, 1, 28, 28]);
  // train.ts's options for a one-channel model.
  const want = await trainingTensor(p.dump.ids, { width: 28, height: 28, channels: 1, mean: [FASHION_MNIST_MEAN], std: [FASHION_MNIST_STD] }, true);
  assertSame(data, want.x, "the CLI's tensor vs loaderBatches'");
  // Not zeros on both sides: the first image is its pixels, normalized.
  const img = want.images[0];
  for (const k of [0, 400, 783]) assert.ok(Math.abs(data[k] - (img.data[k] / 255 - FASHION_MNIST_MEAN) / FASHION_MNIST_STD) < 1e-5, `pixel ${k}`);
}, { timeoutMs: 120_000 });

test("read --preprocess with random-resized crops, flips and RGB, read back: the same tensor as the training path, and the CPU reference's", async () => {
  await ready;
  const dump = join(dir, "rgb.npy");
  const r = cassette(
    "read", "--store", STORE, "--dataset", DATASET, "--preprocess", "--size", "20x16", "--crop", "random-resized", "--scale", "0.3,1",
    "--flip", "0.5", "--seed", "7", "--readback", "--batch", "48", "--dump", dump, "--json",
  );
  assert.is(r.code, 0, r.err);
  const p = JSON.parse(r.out).preprocess;
  assert.equal([p.images, p.readback, p.tensorShape], [240, true, [48, 3, 16, 20]]);
  const { shape, data } = readNpy(dump);
  assert.equal(shape, [48, 3, 16, 20]);
  const o = RGB_CROPS;
  const want = await trainingTensor(p.dump.ids, o, false);
  assertSame(data, want.x, "the CLI's tensor vs loaderBatches'");
  // The reference recomputes from the plans, so a flip or crop the two GPU runs both skipped shows.
  const device = await testDevice();
  const pre = await createPreprocessor(device, o);
  const plans = pre.plan(want.images, { epoch: 0, ids: p.dump.ids });
  pre.destroy();
  assert.ok(plans.some((q) => q.mirror) && plans.some((q) => !q.mirror), "both mirrored and plain images");
  const per = 3 * 16 * 20;
  want.images.forEach((img, i) => {
    const ref = preprocessRef(img, plans[i], { width: 20, height: 16, channels: 3, layout: "nchw", mean: o.mean!, std: o.std! });
    for (let k = 0; k < per; k++) {
      if (!(Math.abs(data[i * per + k] - ref[k]) < 1e-3)) throw new Error(`image ${i} value ${k}: got ${data[i * per + k]}, reference ${ref[k]}`);
    }
  });
}, { timeoutMs: 120_000 });

test("read --preprocess --device cpu, with no WebGPU driver: the tensor the GPU path makes (1e-5), from the read workers' planned boxes", async () => {
  await ready;
  const dump = join(dir, "cpu.npy");
  // The driver hidden as in the test below: the CPU path must not ask for an adapter.
  const [cmd, ...args] = runtime.scriptCommand("src/cli/main.ts", [
    "read", "--store", STORE, "--dataset", DATASET, "--preprocess", "--device", "cpu", "--size", "20x16", "--crop", "random-resized",
    "--scale", "0.3,1", "--flip", "0.5", "--seed", "7", "--workers", "2", "--batch", "48", "--dump", dump, "--json",
  ]);
  const r = spawnSync(cmd, args, {
    encoding: "utf8", timeout: 120_000,
    env: { ...process.env, VK_ICD_FILENAMES: "/nonexistent/icd.json", VK_DRIVER_FILES: "/nonexistent/icd.json", DENO_WEBGPU_BACKEND: "vulkan" },
  });
  assert.is(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.is(doc.workers, 2);
  const p = doc.preprocess;
  assert.equal([p.images, p.device, p.readback, p.tensorShape], [240, "cpu", false, [48, 3, 16, 20]]);
  const { shape, data } = readNpy(dump);
  assert.equal(shape, [48, 3, 16, 20]);
  const o = RGB_CROPS;
  const want = await trainingTensor(p.dump.ids, o, false);
  let worst = 0;
  for (let i = 0; i < data.length; i++) worst = Math.max(worst, Math.abs(data[i] - want.x[i]));
  assert.ok(worst <= 1e-5, `the CPU's tensor vs the GPU's: ${worst}`);
}, { timeoutMs: 180_000 });

test("read --preprocess --augment: the GPU's tensor is the training path's with the same policy, the CPU's within 1e-4", async () => {
  await ready;
  const policy = "trivial,jitter=0.4,hue=0.1,erase=0.5";
  const dumps: Float32Array[] = [];
  let ids: string[] = [];
  for (const device of ["gpu", "cpu"]) {
    const dump = join(dir, `augment-${device}.npy`);
    const r = cassette(
      "read", "--store", STORE, "--dataset", DATASET, "--preprocess", "--device", device, "--size", "20x16", "--crop", "random-resized",
      "--scale", "0.3,1", "--flip", "0.5", "--augment", policy, "--seed", "7", "--workers", "0", "--order", "strict", "--batch", "48", "--dump", dump, "--json",
    );
    assert.is(r.code, 0, r.err);
    const p = JSON.parse(r.out).preprocess;
    if (device === "cpu") assert.equal(p.dump.ids, ids, "the same first batch");
    ids = p.dump.ids;
    dumps.push(readNpy(dump).data);
  }
  const o: PreprocessOptions = { ...RGB_CROPS, augment: { trivial: true, jitter: { brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1 }, erase: { p: 0.5 } } };
  const want = await trainingTensor(ids, o, false);
  assertSame(dumps[0], want.x, "the CLI's augmented tensor vs loaderBatches'");
  let worst = 0;
  for (let i = 0; i < want.x.length; i++) worst = Math.max(worst, Math.abs(dumps[1][i] - want.x[i]));
  assert.ok(worst <= 1e-4, `the CPU's augmented tensor vs the GPU's: ${worst}`);
  // Augmented: not the tensor without the policy.
  const plain = await trainingTensor(ids, RGB_CROPS, false);
  assert.ok(want.x.some((v, i) => Math.abs(v - plain.x[i]) > 0.1), "the policy changed the tensor");
}, { timeoutMs: 180_000 });

test("read --preprocess --decode hybrid: the JPEGs finished on the GPU from their DCT blocks, the training path's tensor exactly; auto on a CPU driver decodes on the CPU", async () => {
  await ready;
  for (const workers of ["0", "2"]) {
    const dump = join(dir, `hybrid${workers}.npy`);
    const r = cassette(
      "read", "--store", STORE, "--dataset", DATASET, "--preprocess", "--decode", "hybrid", "--size", "20x16", "--crop", "random-resized", "--scale", "0.3,1",
      "--flip", "0.5", "--seed", "7", "--workers", workers, "--batch", "48", "--dump", dump, "--json",
    );
    assert.is(r.code, 0, r.err);
    const p = JSON.parse(r.out).preprocess;
    assert.equal([p.images, p.decode, p.tensorShape], [240, "hybrid", [48, 3, 16, 20]], `--workers ${workers}`);
    const want = await trainingTensor(p.dump.ids, RGB_CROPS, false);
    assertSame(readNpy(dump).data, want.x, `--workers ${workers}: the hybrid tensor vs loaderBatches' from pixels`);
  }
  // lavapipe is a CPU driver: auto (the default) keeps the decode on the CPU.
  const r = cassette("read", "--store", STORE, "--dataset", DATASET, "--preprocess", "--size", "20x16", "--batch", "120", "--json");
  assert.is(r.code, 0, r.err);
  assert.is(JSON.parse(r.out).preprocess.decode, "cpu");
}, { timeoutMs: 180_000 });

test("read --preprocess: bad values exit 2 naming the flag", () => {
  const cases: [string[], RegExp][] = [
    [["--preprocess", "--size", "0"], /--size must be N or WxH with whole numbers from 1 to 65535: current value is 0/],
    [["--preprocess"], /--preprocess needs --size/],
    [["--preprocess", "--size", "28", "--grey", "--mean", "0.5,0.5,0.5"], /--mean must have one value per output channel \(1, as --grey makes one\): current value is 0.5,0.5,0.5/],
    [["--preprocess", "--size", "28", "--std", "0.2,0,0.2"], /--std must be > 0/],
    [["--preprocess", "--size", "28", "--flip", "2"], /--flip must be a probability from 0 to 1: current value is 2/],
    [["--preprocess", "--size", "28", "--scale", "0.5,1"], /--scale needs --crop random-resized: current --crop is resize/],
    [["--preprocess", "--size", "28", "--crop", "zoom"], /--crop must be resize, center or random-resized: current value is zoom/],
    [["--size", "28"], /--size needs --preprocess/],
    [["--preprocess", "--size", "28", "--device", "tpu"], /--device must be gpu or cpu: current value is tpu/],
    [["--preprocess", "--size", "28", "--device", "cpu", "--readback"], /--readback needs --device gpu/],
    [["--device", "cpu"], /--device needs --preprocess/],
    [["--preprocess", "--size", "28", "--augment", "trivial,equalize=3"], /--augment: .*term .equalize=3. is not an op/],
    [["--preprocess", "--size", "28", "--augment", "hue=0.9"], /--augment: .*'augment\.jitter\.hue' must be a number from 0 to 0\.5/],
    [["--augment", "trivial"], /--augment needs --preprocess/],
    [["--preprocess", "--size", "28", "--augment", "trivial,mixup"], /--augment's mixup and cutmix mix a batch's labels .* train\.ts --augment takes them/],
    [["--decode", "hybrid"], /--decode hybrid needs --preprocess on the GPU/],
    [["--preprocess", "--size", "28", "--device", "cpu", "--decode", "hybrid"], /--decode hybrid needs --preprocess on the GPU/],
    [["--preprocess", "--size", "28", "--decode=fast"], /--decode takes cpu, hybrid, gpu or auto \(or nothing: cpu\): current value is fast/],
    [["--decode", "gpu"], /--decode gpu needs --preprocess on the GPU/],
    [["--preprocess", "--size", "28", "--device", "cpu", "--decode", "gpu"], /--decode gpu needs --preprocess on the GPU/],
  ];
  for (const [args, message] of cases) {
    const r = cassette("read", "--store", STORE, "--dataset", DATASET, ...args);
    assert.is(r.code, 2, `${args.join(" ")}: ${r.err}`);
    assert.match(r.err, message);
    assert.match(r.err, /see cassette read --help.*\[ERR_INVALID_OPTION\]/);
  }
});

test("read --preprocess with no WebGPU driver: ERR_NO_GPU_ADAPTER before any reading", () => {
  // As test/gpu/no_adapter.test.ts hides the driver; the store is not there, and is not asked for.
  const [cmd, ...args] = runtime.scriptCommand("src/cli/main.ts", ["read", "--store", `sqlite:${join(dir, "absent.sqlite")}`, "--dataset", DATASET, "--preprocess", "--size", "28"]);
  const r = spawnSync(cmd, args, {
    encoding: "utf8", timeout: 60_000,
    env: { ...process.env, VK_ICD_FILENAMES: "/nonexistent/icd.json", VK_DRIVER_FILES: "/nonexistent/icd.json", DENO_WEBGPU_BACKEND: "vulkan" },
  });
  assert.is(r.status, 2, r.stderr);
  assert.match(r.stderr, /cassette read: Cannot .*adapter.*\[ERR_NO_GPU_ADAPTER\]/);
});
