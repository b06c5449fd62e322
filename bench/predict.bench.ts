/**
 * `cassette predict`'s loop against the model's own forward rate: how much of the GPU's
 * prediction speed survives reading, decoding and preprocessing through the loader.
 *
 *   bun bench/predict.bench.ts [--store URL --dataset NAME] [--limit N] [--model mlp|cnn|cnn-bn]
 *                              [--batch B] [--rounds R] [--quick] [--json]
 *
 * Contenders, interleaved round by round on the same images and the same model (weights do not
 * change the time: fresh ones from seed 0):
 *   predict loop      src/train/predict.ts as the command runs it (the CLI's start-up aside):
 *                     Loader (read, decode) → GPU preprocess → eval forward → softmax
 *                     read-back → top-5, every sample once;
 *   held + read-back  the same forward and read-back per batch on images held on the GPU
 *                     (GpuDataset: read and decoded once, gathered and normalized there);
 *   held evaluate     model.evaluate over the held images: the forward rate of train.ts
 *                     --no-io's test pass, no read-back per batch (the baseline).
 * Default store: a SQLite file under .tmp/ with --limit Fashion-MNIST samples (made once).
 */
import { existsSync, mkdirSync } from "node:fs";
import { runtime } from "../runtime-adapters/index.ts";
import { ingest } from "../src/dataset/ingest.ts";
import { FASHION_MNIST_MEAN, FASHION_MNIST_STD } from "../src/dataset/fashion_mnist.ts";
import { openStore } from "../src/source/open.ts";
import { Loader } from "../src/loader.ts";
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import type { DecodedImage } from "../src/gpu/pack.ts";
import { compare } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";

// The kernels' .wgsl text needs the loader hooks under Node from source (as train.ts does).
if (runtime.name === "node") await import("../runtime-adapters/node_hooks.mjs");
const { createModel } = await import("../src/train/model.ts");
const { GpuDataset } = await import("../src/train/gpu_dataset.ts");
const { predict } = await import("../src/train/predict.ts");

const args = benchArgs({
  program: "bench/predict.bench.ts",
  usage: `usage: bun bench/predict.bench.ts [options]
  --store URL      where the images are (default: sqlite:.tmp/bench-predict/fm-N.sqlite, made once)
  --dataset NAME   the dataset (default fm; with --store, required)
  --limit N        samples predicted per round (default 4096; --quick 1024)
  --model NAME     mlp, cnn or cnn-bn (default cnn; --quick mlp)
  --batch B        samples per batch (default 256)
  --rounds R       measured rounds per contender (default 5; --quick 2)
  --quick          a small, fast run (what bench/main.ts --quick passes)
  --json           one JSON document at the end`,
  valued: ["store", "dataset", "limit", "model", "batch", "rounds"],
  flags: ["quick"],
});
const quick = args.has("quick");
const limit = args.int("limit", quick ? 1024 : 4096);
const modelName = args.str("model", quick ? "mlp" : "cnn");
const batch = args.int("batch", 256);
const rounds = args.int("rounds", quick ? 2 : 5);
const dataset = args.has("store") ? args.required("dataset") : args.str("dataset", "fm");
let address = args.str("store");
if (!address) {
  // Half from each idx split: ingest's limit is per split.
  mkdirSync(".tmp/bench-predict", { recursive: true });
  address = `sqlite:.tmp/bench-predict/fm-${limit}.sqlite`;
  if (!existsSync(address.slice(7))) {
    const s = await openStore(address);
    await ingest(s, "idx:/usr/share/datasets/fashion-mnist/", { dataset, limit: Math.ceil(limit / 2) });
    await s.close();
  }
}

const device = await requestDevice();
const info = deviceInfo(device)!;
const store = await openStore(address, { create: false });
const ids: string[] = [];
for await (const page of store.scanNat(dataset)) ids.push(...page.map((r) => r.id));
ids.splice(limit);
const model = createModel(device, modelName, { seed: 0 });
const [C, H, W] = model.spec.input;
console.log(`${info.runtime}; ${info.backend}; adapter: ${info.adapter}`);
console.log(`${ids.length} samples of ${dataset} in ${store.address}; model ${modelName}; batch ${batch}; ${rounds} rounds`);

// The held copy: every image read and decoded once, as train.ts --no-io holds them.
const pixels = new Uint8Array(ids.length * C * H * W), labels = new Int32Array(ids.length);
{
  const loader = new Loader<DecodedImage>({ store, dataset, ids, batchSize: 1024, shuffle: false, order: "strict", decode: { grey: C === 1 }, transform: (s) => s.image! });
  let at = 0;
  for await (const b of loader.epoch(0)) {
    b.items.forEach((img, i) => {
      if (img.width !== W || img.height !== H || img.channels !== C) throw new Error(`sample ${b.ids[i]} is ${img.width}×${img.height}×${img.channels}, not the model's ${W}×${H}×${C}: hold needs images of the model's size`);
      pixels.set(img.data, (at + i) * C * H * W);
      labels[at + i] = b.labels[i];
    });
    at += b.ids.length;
  }
  await loader.close();
}
const held = new GpuDataset(device, pixels, labels, { shape: [C, H, W], normalize: { mean: FASHION_MNIST_MEAN, std: FASHION_MNIST_STD } });
const heldBatches = () => held.batches(0, { batch, shuffle: false });

let predicted = 0;
const rows = await compare(`predictions/s, ${modelName}, batch ${batch} (${info.backend}: ${info.adapter})`, { rounds, unit: "samples/s" }, [
  {
    name: "predict loop (read, decode, preprocess, forward, read-back, top-5)",
    work: ids.length,
    run: async () => {
      let n = 0;
      for await (const b of predict(model, { store, dataset, ids, batchSize: batch })) n += b.ids.length;
      if (n !== ids.length) throw new Error(`predicted ${n} of ${ids.length} samples`);
      predicted += n;
    },
  },
  {
    name: "held on the GPU: forward + read-back per batch",
    work: ids.length,
    run: async () => {
      // As the loop does: two batches in flight.
      const pending: Promise<Float32Array>[] = [];
      for await (const b of heldBatches()) {
        pending.push(model.predictStep(b));
        if (pending.length >= 2) await pending.shift();
      }
      await Promise.all(pending);
    },
  },
  {
    name: "held on the GPU: evaluate (train.ts --no-io's forward)",
    work: ids.length,
    baseline: true,
    run: async () => {
      const m = await model.evaluate(heldBatches());
      if (m.samples !== ids.length) throw new Error(`evaluated ${m.samples} of ${ids.length}`);
    },
  },
]);
const loop = rows.find((r) => r.name.startsWith("predict loop"))!;
const forward = rows.find((r) => r.name.includes("evaluate"))!;
console.log(`\nthe predict loop runs at ${(100 * loop.best / forward.best).toFixed(0)} % of the model's forward rate on GPU-held images (${loop.best.toFixed(0)} vs ${forward.best.toFixed(0)} samples/s, best rounds)`);
if (args.has("json")) console.log(JSON.stringify({ samples: ids.length, model: modelName, batch, rounds, adapter: info.adapter, predicted, rows }));

await held.destroy();
await model.destroy();
await store.close();
device.destroy();
