/**
 * One question: what does a web page's loader make of the same shards, next to this runtime's?
 * Fashion-MNIST JPEGs are exported as WebDataset shards and served over HTTP on 127.0.0.1
 * (examples/browser/serve.ts); one epoch is read by the Loader (read workers, JPEG decode),
 * then preprocessed on the GPU (loaderBatches: a 28 × 28 grey tensor per batch), side by side:
 *
 *   page, loader + GPU      in headless Chromium (dist/browser/, module workers), on its WebGPU
 *                           adapter: SwiftShader here (--enable-unsafe-webgpu), a real GPU elsewhere
 *   RUNTIME, loader + GPU   the same in this process (undici, worker threads), on its adapter
 *                           (lavapipe on the project's machine)
 *   page / RUNTIME, loader  the Loader alone (decoded batches, no GPU)
 *
 * Each round is one epoch; the loaders and devices are made once. A round's time is its wall
 * time here, the page's with one DevTools round trip more (under a millisecond on 127.0.0.1).
 *
 *   bun bench/browser.bench.ts [--samples N] [--rounds R] [--batch B] [--quick]
 *
 * Needs `bun build.ts` (dist/browser/) and Chromium (tools/setup.sh).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { runtime } from "../runtime-adapters/index.ts";
import { exportShards, openSink } from "../src/source/export/export.ts";
import { Loader } from "../src/loader.ts";
import { requestDevice } from "../src/gpu/device.ts";
import { createPreprocessor } from "../src/gpu/preprocess.ts";
import { loaderBatches } from "../src/train/loader_batches.ts";
import { openPage } from "../test/_support/browser.ts";
import { serveStatic } from "../examples/browser/serve.ts";
import { compare } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";
import { FASHION_MNIST, fashionMnistStore } from "./_lib/fashion_store.ts";

const args = benchArgs({
  program: "bench/browser.bench.ts",
  usage: "usage: bun bench/browser.bench.ts [--samples N] [--rounds R] [--batch B] [--quick]",
  valued: ["samples", "rounds", "batch"],
  flags: ["quick"],
});
if (!existsSync(join(runtime.cwd(), "dist/browser/browser.js"))) {
  console.error("bench/browser.bench.ts: dist/browser/ is not built: run `bun build.ts` first");
  runtime.exit(2);
}
const quick = args.has("quick");
const perSplit = Math.ceil(args.int("samples", quick ? 600 : 4000) / 2);
const rounds = args.int("rounds", quick ? 3 : 5);
const batchSize = args.int("batch", 64);
const PRE = { width: 28, height: 28, channels: 1, mean: [0.286], std: [0.353] } as const;

const root = join(runtime.cwd(), ".tmp", "bench-browser");
const { store, ids } = await fashionMnistStore(root, perSplit);
const shards = join(root, `shards-${ids.length}`);
const sink = await openSink(shards);
await exportShards(store, FASHION_MNIST, sink, { seed: 1, maxSamples: 1000 });
await sink.close?.();
await store.close();
const web = await serveStatic(runtime.cwd(), 0, { "/shards/": shards });
const index = `${web.url}shards/${FASHION_MNIST}.index.json`;
const page = await openPage(undefined, { webgpu: true, timeoutMs: 300_000 });
await page.goto(`${web.url}examples/browser/index.html?index=none`);
const adapter = await page.evaluate<string>(`import("/dist/browser/browser.js").then(async ({ Loader, createPreprocessor, deviceInfo, loaderBatches, requestDevice }) => {
  const device = await requestDevice();
  const ids = ${JSON.stringify(ids)};
  globalThis.bench = {
    loader: new Loader({ store: "wds:${index}", ids, batchSize: ${batchSize}, decode: { grey: true } }),
    pre: await createPreprocessor(device, ${JSON.stringify(PRE)}),
    loaderBatches, device, epoch: 0,
  };
  return deviceInfo(device).adapter;
})`);
console.log(`${runtime.name} ${runtime.version}: ${ids.length} Fashion-MNIST JPEGs in shards of 1000, served at ${web.url}; batch ${batchSize}, ${rounds} rounds; the page's adapter: ${adapter}`);

/** One epoch in the page. */
async function pageEpoch(gpu: boolean): Promise<void> {
  await page.evaluate(`(async () => {
    const b = globalThis.bench;
    const e = b.epoch++;
    let n = 0;
    if (${gpu}) { for await (const x of b.loaderBatches(b.loader, b.pre, e)) n += x.n; await b.device.queue.onSubmittedWorkDone(); }
    else for await (const x of b.loader.epoch(e)) { n += x.ids.length; x.release?.(); }
    if (n !== ${ids.length}) throw new Error("an epoch of " + n + " samples");
  })()`);
}

const device = await requestDevice();
const pre = await createPreprocessor(device, { ...PRE, mean: [...PRE.mean], std: [...PRE.std] });
const loader = new Loader({ store: `wds:${index}`, ids, batchSize, decode: { grey: true } });
let epoch = 0;
async function hereEpoch(gpu: boolean): Promise<void> {
  const e = epoch++;
  let n = 0;
  if (gpu) {
    for await (const x of loaderBatches(loader, pre, e)) n += x.n;
    await device.queue.onSubmittedWorkDone();
  } else {
    for await (const x of loader.epoch(e)) {
      n += x.ids.length;
      x.release?.();
    }
  }
  if (n !== ids.length) throw new Error(`an epoch of ${n} samples`);
}

try {
  await compare(`one epoch of ${ids.length} JPEGs from WebDataset shards over HTTP: a page (Chromium) and ${runtime.name}`, { rounds, unit: "images/s" }, [
    { name: "page, loader + GPU", run: () => pageEpoch(true), work: ids.length },
    { name: `${runtime.name}, loader + GPU`, run: () => hereEpoch(true), work: ids.length, baseline: true },
    { name: "page, loader", run: () => pageEpoch(false), work: ids.length },
    { name: `${runtime.name}, loader`, run: () => hereEpoch(false), work: ids.length },
  ]);
} finally {
  await loader.close();
  pre.destroy();
  device.destroy();
  await page.close();
  await web.close();
}
