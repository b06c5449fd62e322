/**
 * cassette in a web page against cassette under this runtime (issue 39's target): the example
 * page (examples/browser/) in Debian's headless Chromium with --enable-unsafe-webgpu (a
 * SwiftShader adapter on a machine without a GPU) trains the mlp for one epoch from WebDataset
 * shards served over HTTP; here, the same Loader options over the same shards from the same
 * server feed the same preprocessing and model through `fit` on this runtime's adapter
 * (lavapipe on these machines). Both report samples per second of the epoch the same way (from
 * the first batch asked for to the last step, the page's own clock on its side), rounds
 * alternating so that the machine's noise falls on both.
 *
 *   node_modules/.bin/bun bench/browser.bench.ts [--samples N] [--rounds R] [--batch B] [--quick]
 *
 * Inputs: N Fashion-MNIST samples (default 2 000) ingested into a SQLite store and exported as
 * shards of 500 with `cassette export --format webdataset`, in a temporary folder.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchArgs } from "./_lib/args.ts";
import { printTable, type Row } from "./_lib/compare.ts";
import { openPage } from "../test/_support/browser.ts";
import { cassette } from "../test/_support/cli.ts";
import { fashionMnistStore } from "../test/_support/fashion_mnist.ts";
import { serveStatic } from "../examples/browser/serve.ts";
import { runtime } from "../runtime-adapters/index.ts";
import { Loader } from "../src/loader.ts";
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import { createPreprocessor } from "../src/gpu/preprocess.ts";
import { createModel } from "../src/train/model.ts";
import { fit } from "../src/train/fit.ts";
import { loaderBatches } from "../src/train/loader_batches.ts";

const args = benchArgs({
  program: "bench/browser.bench.ts",
  usage: `usage: bun bench/browser.bench.ts [--samples N] [--rounds R] [--batch B] [--quick]

  The example page training the mlp from WebDataset shards in headless Chromium (SwiftShader
  WebGPU) beside the same Loader, preprocessing and model under this runtime (its adapter:
  lavapipe here), one epoch each, rounds alternating; samples/s and the ratio.

  --samples N   Fashion-MNIST samples in the shards (default 2000; --quick 600)
  --rounds R    rounds, each one epoch on each side (default 3; --quick 1)
  --batch B     batch size (default 32, the page's)`,
  valued: ["samples", "rounds", "batch"],
  flags: ["quick"],
});
const quick = args.has("quick");
const samples = args.int("samples", quick ? 600 : 2000);
const rounds = args.int("rounds", quick ? 1 : 3);
const batch = args.int("batch", 32);
const ROOT = runtime.cwd();
if (!existsSync(join(ROOT, "dist/browser/browser.js"))) args.fail("the page needs dist/browser/: run `bun build.ts` first");

const tmp = mkdtempSync(join(tmpdir(), "cassette-browser-bench-"));
try {
  // Half from each idx file, as the store helper takes them.
  const storePath = join(tmp, "fm.sqlite");
  const { store, ids } = await fashionMnistStore(storePath, "fm", Math.ceil(samples / 2));
  await store.close();
  const dir = join(tmp, "shards");
  const r = cassette("export", "--store", `sqlite:${storePath}`, "--dataset", "fm", "--format", "webdataset", "--out", dir, "--shard-samples", "500", "--json");
  if (r.code !== 0) throw new Error(`cassette export failed: ${r.err}`);
  const web = await serveStatic(ROOT, 0, { "/shards/": dir });
  const index = `${web.url}shards/fm.index.json`;
  console.log(`${ids.length} samples in ${JSON.parse(r.out).shards.length} shards at ${index}; batch ${batch}; ${rounds} round(s)`);

  const page: number[] = [], here: number[] = [];
  let adapters = "";
  try {
    for (let k = 0; k < rounds; k++) {
      // Alternate which goes first.
      const order = k % 2 ? [inRuntime, inPage] : [inPage, inRuntime];
      for (const run of order) {
        const x = await run(index, ids, k + 1);
        (run === inPage ? page : here).push(x.rate);
        if (k === 0) adapters += `  ${run === inPage ? "page" : runtime.name}: ${x.adapter}\n`;
        console.log(`  round ${k + 1}, ${run === inPage ? "page" : runtime.name}: ${x.rate.toFixed(0)} samples/s`);
      }
    }
  } finally {
    await web.close();
  }
  console.log(adapters.trimEnd());
  const rows = [row("page (Chromium, SwiftShader WebGPU)", page), row(`${runtime.name} (this runtime's adapter)`, here)];
  for (const x of rows) x.ratio = x.best / rows[1].best;
  printTable(`The mlp trained one epoch from WebDataset shards over HTTP, ${ids.length} samples`, "samples/s", rows.sort((a, b) => b.best - a.best), rows.find((x) => x.name.startsWith(runtime.name))!.name, rounds);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

function row(name: string, rates: number[]): Row {
  const sorted = [...rates].sort((a, b) => a - b);
  const best = sorted.at(-1)!, median = sorted[Math.floor(sorted.length / 2)];
  return { name, best, median, spread: sorted.length > 1 ? (best - sorted[0]) / best : 0, ratio: 1 };
}

/** One epoch in the example page: its own samples/s (examples/browser/main.js). */
async function inPage(index: string, ids: string[], seed: number): Promise<{ rate: number; adapter: string }> {
  const p = await openPage(undefined, { webgpu: true, timeoutMs: 30_000 });
  try {
    const origin = new URL(index).origin;
    await p.goto(`${origin}/examples/browser/?index=${new URL(index).pathname}&batch=${batch}&seed=${seed}`);
    await p.waitFor(`["finished", "failed"].includes(document.getElementById("status").dataset.status)`, 600_000);
    const run = JSON.parse((await p.text("result"))!) as { ok: boolean; samples: number; imagesPerSec: number; message?: string; device?: { adapter?: string } };
    if (!run.ok || run.samples !== ids.length) throw new Error(`the page failed: ${JSON.stringify(run).slice(0, 500)}\n${p.console.join("\n")}`);
    return { rate: run.imagesPerSec, adapter: run.device?.adapter ?? "?" };
  } finally {
    await p.close();
  }
}

/** The page's loop under this runtime: the same Loader options, preprocessing, model and fit. */
async function inRuntime(index: string, ids: string[], seed: number): Promise<{ rate: number; adapter: string }> {
  const device = await requestDevice();
  const pre = await createPreprocessor(device, { width: 28, height: 28, channels: 1, mean: [0.286], std: [0.353] });
  const model = createModel(device, "mlp", { seed, optimizer: { kind: "adam", lr: 0.001 } });
  const loader = new Loader({ store: `wds:${index}`, ids, batchSize: batch, seed, decode: { grey: true } });
  try {
    const t0 = performance.now();
    const reports = await fit(model, { epochs: 1, train: (e) => loaderBatches(loader, pre, e, { classes: 10 }) });
    const seconds = (performance.now() - t0) / 1000;
    if (reports[0].samples !== ids.length) throw new Error(`trained ${reports[0].samples} of ${ids.length} samples`);
    return { rate: ids.length / seconds, adapter: deviceInfo(device)?.adapter ?? "?" };
  } finally {
    await loader.close();
    await model.destroy();
    pre.destroy();
    device.destroy();
  }
}
