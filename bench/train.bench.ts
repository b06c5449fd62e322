/**
 * Training throughput without I/O: cassette's WGSL kernels against TensorFlow.js with
 * @tensorflow/tfjs-backend-webgpu, on devices of the same adapter, in one process, epochs
 * interleaved round by round (a shared machine's noise hits both alike). Same model, same
 * batch, Adam (lr 1e-3), Fashion-MNIST held in GPU memory on both sides; after the timed
 * rounds, both models are evaluated on the test split.
 *
 *   node --import ./runtime-adapters/node_hooks.mjs bench/train.bench.ts [options]
 *   (also runs under bun and deno, where TF.js gets the same Dawn or built-in adapter)
 *
 *   --model mlp|cnn|all   (default all)
 *   --limit N             training images per epoch (default 2048); --full: all 60 000
 *   --test N              test images for the accuracy check (default 2000; --full: 10 000)
 *   --batch B             (default 128)
 *   --rounds R            timed epochs per contender after one warm-up epoch (default 3; --full 1)
 *   --quick               --limit 512 --rounds 1 (what bench/main.ts --quick passes)
 *   --json                one JSON document at the end
 */
import * as tf from "@tensorflow/tfjs-core";
import * as tfl from "@tensorflow/tfjs-layers";
import { WebGPUBackend } from "@tensorflow/tfjs-backend-webgpu";
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import { loadFashionMnist, normalizePixels } from "../src/dataset/fashion_mnist.ts";
import type { ImageSplit } from "../src/dataset/fashion_mnist.ts";
import { GpuDataset } from "../src/train/gpu_dataset.ts";
import { createModel } from "../src/train/model.ts";
import { compare } from "./_lib/compare.ts";
import type { Row } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/train.bench.ts",
  usage: "usage: node --import ./runtime-adapters/node_hooks.mjs bench/train.bench.ts [--model mlp|cnn|all] [--limit N | --full] [--test N] [--batch B] [--rounds R] [--quick] [--json]",
  valued: ["model", "limit", "test", "batch", "rounds"],
  flags: ["full", "quick"],
});
const full = args.has("full");
const quick = args.has("quick"); // bench/main.ts --quick: a small run
const json = args.has("json");
const limit = full ? undefined : args.int("limit", quick ? 512 : 2048);
const testLimit = args.int("test", full ? 10000 : 2000);
const batch = args.int("batch", 128);
const rounds = args.int("rounds", full || quick ? 1 : 3);
const model = args.str("model", "all");
if (!["mlp", "cnn", "all"].includes(model)) args.fail(`--model must be mlp, cnn or all: current value is ${model}`);
const models = model === "all" ? ["mlp", "cnn"] : [model];
const log = (s: string) => json || console.log(s);

const ours = await requestDevice();
const theirs = await requestDevice();
const info = deviceInfo(ours)!;
// TF.js's backend checks navigator.gpu before using the device it is given; Node has no such
// global (Deno does, and then TF.js registered its own factory: ours replaces it).
const nav = ((globalThis as { navigator?: { gpu?: unknown } }).navigator ??= {});
if (!nav.gpu) Object.defineProperty(nav, "gpu", { value: {}, configurable: true });
if (tf.findBackendFactory("webgpu")) tf.removeBackend("webgpu");
tf.registerBackend("webgpu", () => new WebGPUBackend(theirs, { vendor: "", architecture: "", device: "", description: info.adapter } as GPUAdapterInfo));
await tf.setBackend("webgpu");
await tf.ready();
log(`${info.runtime}; ${info.backend}; adapter: ${info.adapter}; TF.js ${tf.version_core} (webgpu backend)`);

const data = await loadFashionMnist(undefined, Math.max(limit ?? 60000, 1));
const train = data.train, test: ImageSplit = { ...data.test, count: Math.min(testLimit, data.test.count) };
log(`${train.count} training images per epoch, ${test.count} test images, batch ${batch}, Adam lr 1e-3, ${rounds} timed epoch(s) after 1 warm-up`);

/** The peer models (the same layers as src/train/models.ts), in TF.js layers (NHWC = NCHW for one channel). */
function tfModel(name: string): tfl.LayersModel {
  const m = tfl.sequential();
  if (name === "mlp") {
    m.add(tfl.layers.flatten({ inputShape: [28, 28, 1] }));
    m.add(tfl.layers.dense({ units: 256, activation: "relu" }));
  } else {
    m.add(tfl.layers.conv2d({ inputShape: [28, 28, 1], filters: 16, kernelSize: 3, padding: "same", activation: "relu" }));
    m.add(tfl.layers.maxPooling2d({ poolSize: 2 }));
    m.add(tfl.layers.conv2d({ filters: 32, kernelSize: 3, padding: "same", activation: "relu" }));
    m.add(tfl.layers.maxPooling2d({ poolSize: 2 }));
    m.add(tfl.layers.flatten());
  }
  m.add(tfl.layers.dense({ units: 10, activation: "softmax" }));
  m.compile({ optimizer: tf.train.adam(1e-3), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
  return m;
}

/**
 * The split as TF.js tensors on its GPU, in chunks of at most 16 384 images: the whole train
 * split in f32 (188 MB) exceeds the adapter's 128 MiB binding limit, and TF.js binds the
 * whole tensor when it slices batches out of it.
 */
function tfChunks(s: ImageSplit, count: number): { x: tf.Tensor4D; y: tf.Tensor2D }[] {
  const chunks = [];
  for (let first = 0; first < count; first += 16384) {
    const n = Math.min(16384, count - first);
    const px = normalizePixels((s.images as Uint8Array).subarray(first * 784, (first + n) * 784), s.normalize!.mean, s.normalize!.std);
    chunks.push({
      x: tf.tensor4d(px, [n, 28, 28, 1]),
      y: tf.oneHot(tf.tensor1d(Array.from(s.labels.subarray(first, first + n)), "int32"), 10) as tf.Tensor2D,
    });
  }
  return chunks;
}

const results: Record<string, { rows: Row[]; accuracy: Record<string, number> }> = {};
for (const name of models) {
  const model = createModel(ours, name, { seed: 0, optimizer: { kind: "adam", lr: 1e-3 } });
  const trainSet = new GpuDataset(ours, train.images, train.labels, { shape: train.shape, normalize: train.normalize });
  const testSet = new GpuDataset(ours, test.images.subarray(0, test.count * 784), test.labels.subarray(0, test.count), { shape: test.shape, normalize: test.normalize });
  const peer = tfModel(name);
  const tt = tfChunks(train, train.count), te = tfChunks(test, test.count);
  let epoch = 0;
  const rows = await compare(`${name}: training images/s, no I/O, batch ${batch}`, { unit: "img/s", rounds, warmup: 1 }, [
    {
      name: "cassette (WGSL)",
      work: train.count,
      run: async () => {
        for await (const b of trainSet.batches(epoch++, { batch, seed: 0 })) await model.trainStep(b);
        await model.flush();
      },
    },
    {
      name: "TF.js webgpu",
      work: train.count,
      baseline: true,
      run: async () => {
        for (const c of tt) await peer.fit(c.x, c.y, { batchSize: batch, epochs: 1, shuffle: true, verbose: 0 });
      },
    },
  ]);
  const ourAcc = (await model.evaluate(testSet.batches(0, { batch: 500, shuffle: false }))).accuracy;
  let hits = 0;
  for (const c of te) {
    const res = peer.evaluate(c.x, c.y, { batchSize: 500 }) as tf.Scalar[];
    hits += (await res[1].data())[0] * c.x.shape[0];
    tf.dispose(res);
  }
  const theirAcc = hits / test.count;
  log(`  test accuracy after ${rounds + 1} epoch(s): cassette ${ourAcc.toFixed(4)}, TF.js ${theirAcc.toFixed(4)} (${test.count} images)`);
  results[name] = { rows, accuracy: { cassette: ourAcc, tfjs: theirAcc } };
  tf.dispose([...tt, ...te].flatMap((c) => [c.x, c.y]));
  peer.dispose();
  await model.destroy();
  await trainSet.destroy();
  await testSet.destroy();
}
if (json) console.log(JSON.stringify({ adapter: info, trainImages: train.count, testImages: test.count, batch, rounds, results }));
ours.destroy();
theirs.destroy();
