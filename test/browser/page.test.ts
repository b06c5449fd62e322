/**
 * cassette in a web page (issue 39): examples/browser/ in Debian's headless Chromium, driven as
 * the dashboard's tests drive it (test/_support/browser.ts), over the bundle `bun build.ts`
 * writes to dist/browser/. With --enable-unsafe-webgpu Chromium gives a SwiftShader adapter that
 * runs compute shaders: the page trains the mlp for one epoch on 300 Fashion-MNIST samples
 * exported as WebDataset shards by `cassette export --format webdataset` and served over HTTP
 * (examples/browser/serve.ts, on 127.0.0.1, with CORS). Without the flag it says how to get
 * WebGPU. The page is the same whatever runs this file; the harness (server, driver) runs on
 * each runtime.
 */
import * as assert from "uvu/assert";
import jpegJs from "jpeg-js";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cassette } from "../_support/cli.ts";
import { openPage } from "../_support/browser.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { Loader } from "../../src/loader.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { loaderBatches } from "../../src/train/loader_batches.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { serveStatic, type StaticServer } from "../../examples/browser/serve.ts";
import { type DashboardFrame, startDashboard } from "../../src/observe/dashboard.ts";

const ROOT = runtime.cwd();
const tmp = mkdtempSync(join(tmpdir(), "cassette-browser-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ARTIFACTS = join(ROOT, "data", "test-artifacts");

/** 300 samples (150 of each idx file) in a store, exported as 3 shards of 100; the store's ids. */
async function shards(): Promise<{ dir: string; ids: string[] }> {
  const store = join(tmp, "fm.sqlite");
  const { store: s, ids } = await fashionMnistStore(store, "fm", 150);
  await s.close();
  const dir = join(tmp, "shards");
  const r = cassette("export", "--store", `sqlite:${store}`, "--dataset", "fm", "--format", "webdataset", "--out", dir, "--shard-samples", "100", "--json");
  assert.is(r.code, 0, r.err);
  assert.is(JSON.parse(r.out).shards.length, 3);
  return { dir, ids };
}

let made: Promise<{ dir: string; ids: string[] }> | undefined;
async function served(): Promise<{ web: StaticServer; ids: string[] }> {
  assert.ok(existsSync(join(ROOT, "dist/browser/browser.js")), "dist/browser/ is not built: run `bun build.ts` first");
  const { dir, ids } = await (made ??= shards());
  return { web: await serveStatic(ROOT, 0, { "/shards/": dir }), ids };
}

/** A 16 × 8 JPEG of one grey (200), encoded by jpeg-js. */
const TINY_JPEG = Buffer.from(jpegJs.encode({ width: 16, height: 8, data: new Uint8Array(16 * 8 * 4).fill(200) }, 90).data).toString("base64");

const DONE = `["finished", "failed"].includes(document.getElementById("status").dataset.status)`;

type Run = {
  ok: boolean; samples: number; loss: number; accuracy: number; imagesPerSec: number; ids: string[];
  reports: { loss: number; trainAccuracy: number; samples: number; steps: number }[];
  dashboard: {
    latest: { done: boolean; samples: number; step: number; epoch: number; seconds: number; imagesPerSec: number; imagesPerSecNow: number; waitShare: number; prefetch: number; batchMs: { p50: number; max: number } };
    history: { imagesPerSec: number; waitShare: number; prefetch: number; lossTrain?: number }[];
    shown: { samples: number; lossPoints: number }[];
  };
  code?: string; message?: string;
};

test("the example page trains the mlp for an epoch from WebDataset shards over HTTP: every sample once, above chance; its mounted dashboard's figures and charts equal its JSON and grew as the run went", async () => {
  const { web, ids } = await served();
  const page = await openPage(undefined, { webgpu: true, timeoutMs: 30_000 });
  try {
    await page.goto(`${web.url}examples/browser/?index=/shards/fm.index.json&batch=32&seed=3`);
    await page.waitFor(DONE, 50_000);
    const run = JSON.parse((await page.text("result"))!) as Run;
    assert.ok(run.ok, `the page failed: ${JSON.stringify(run)}\n${page.console.join("\n")}`);
    // Every sample of the shards once: the ids the Loader handed over, batch by batch.
    assert.is(run.ids.length, ids.length, "as many samples trained as the shards hold");
    assert.equal([...run.ids].sort(), [...ids].sort(), "each id once");
    assert.is(run.samples, 300);
    assert.is(run.reports[0].steps, Math.ceil(300 / 32));
    // Ten classes: chance is 0.1; an epoch of 300 samples gets far above it.
    assert.ok(run.accuracy > 0.2, `accuracy ${run.accuracy}`);
    assert.ok(Number.isFinite(run.loss) && run.loss < Math.log(10), `loss ${run.loss} below a uniform guess's`);
    // The mounted dashboard (mountDashboard: the served dashboard's figures, drawn by the same
    // function) shows the run's last frame as the JSON has it, read back from its DOM and SVG.
    const d = run.dashboard.latest;
    assert.is(d.done, true);
    assert.equal([d.samples, d.step, d.epoch], [run.samples, run.reports[0].steps, 0], "the loader's stats: every sample, every batch, epoch 0");
    const m = await page.metrics();
    const expect: [string, number][] = [
      ["samples", run.samples], ["step", d.step], ["epoch", 0], ["seconds", d.seconds], ["loss-train", run.loss], ["accuracy-train", run.accuracy],
      ["images-per-sec", d.imagesPerSec], ["images-per-sec-now", d.imagesPerSecNow], ["wait-share", d.waitShare], ["prefetch", d.prefetch],
      ["batch-p50", d.batchMs.p50], ["batch-max", d.batchMs.max],
    ];
    for (const [name, want] of expect) assert.is(m[name], want, `${name} on the page (${m[name]}) and in the JSON (${want})`);
    assert.is(m["loss-test"], null, "no test split: its tile shows nothing");
    assert.is(await page.evaluate(`document.querySelector('#dashboard [data-metric="samples"]').textContent`), "300");
    assert.equal(await page.evaluate(`[...document.querySelectorAll("#dashboard [data-needs]")].map((e) => e.hidden)`), [false, false, false, false, false, false], "a training run shows its loss and accuracy tiles and charts");
    const lines = await page.evaluate<{ chart: string; series: string; n: number; last: number | null; vertices: number }[]>(
      `[...document.querySelectorAll("#dashboard svg[data-chart] path[data-series]")].map((p) => ({ chart: p.closest("svg").dataset.chart, series: p.dataset.series,
        n: Number(p.dataset.n), last: p.dataset.last === "" ? null : Number(p.dataset.last), vertices: (p.getAttribute("d").match(/[ML]/g) ?? []).length }))`,
    );
    const h = run.dashboard.history, end = h[h.length - 1];
    assert.equal(lines.map((l) => [l.chart, l.series, l.n, l.last]), [
      ["loss", "train", h.length, run.loss], ["loss", "test", 0, null],
      ["accuracy", "train", h.length, run.accuracy], ["accuracy", "test", 0, null],
      ["rate", "images/s", h.length, end.imagesPerSec], ["wait", "wait share", h.length, end.waitShare], ["depth", "batches", h.length, end.prefetch],
    ]);
    assert.ok(lines.every((l) => l.vertices === l.n), "each line draws one vertex per point");
    assert.equal(h.map((p) => p.lossTrain).at(-1), run.loss);
    // It updated as the run went: after each update() a point more, the samples shown growing to the run's.
    const shown = run.dashboard.shown;
    assert.ok(shown.length >= 3 && shown.length === h.length, `${shown.length} updates, ${h.length} points`);
    assert.equal(shown.map((s) => s.lossPoints), shown.map((_, i) => i + 1));
    assert.ok(shown[0].samples < run.samples && shown.at(-1)!.samples === run.samples, JSON.stringify(shown));
    for (let i = 1; i < shown.length; i++) assert.ok(shown[i].samples >= shown[i - 1].samples, "samples only grow");
    // The page read the shards from the server, each whole or by Range.
    const tars = web.requests.filter((r) => r.path.endsWith(".tar"));
    assert.equal([...new Set(tars.map((r) => r.path))].sort(), ["/shards/fm-000000.tar", "/shards/fm-000001.tar", "/shards/fm-000002.tar"]);
    assert.ok(tars.every((r) => r.status === 200 || r.status === 206), JSON.stringify(tars));
    // The JPEG decoder came as its own file beside the bundle (not base64 inside it), for the page and each worker.
    const wasm = web.requests.filter((r) => r.path.endsWith(".wasm"));
    assert.ok(wasm.some((r) => r.path === "/dist/browser/jpeg.wasm"), JSON.stringify(wasm));
    assert.ok(wasm.every((r) => ["/dist/browser/jpeg.wasm", "/dist/browser/png.wasm"].includes(r.path) && r.status === 200), JSON.stringify(wasm));
    const bytes = await page.screenshot(join(ARTIFACTS, `browser-page-${runtime.name}.png`));
    assert.ok(bytes > 10_000, `a screenshot of ${bytes} bytes`);
  } finally {
    await page.close();
    await web.close();
  }
}, { timeoutMs: 90_000 });

test("without WebGPU (no adapter, or no navigator.gpu) the page says how to enable it (ERR_NO_GPU_ADAPTER) and reads no shard; a store a page cannot open is ERR_UNSUPPORTED, saying what a page can read; shards without CORS headers are named so; a wasm decoder served with another Content-Type still loads", async () => {
  const { web } = await served();
  const page = await openPage(undefined, { webgpu: false });
  try {
    await page.goto(`${web.url}examples/browser/?index=/shards/fm.index.json`);
    await page.waitFor(DONE, 20_000);
    const run = JSON.parse((await page.text("result"))!) as Run;
    assert.is(run.ok, false);
    assert.is(run.code, "ERR_NO_GPU_ADAPTER");
    assert.match(run.message!, /--enable-unsafe-webgpu/);
    assert.match(run.message!, /secure context/);
    assert.is(await page.evaluate(`document.getElementById("error").dataset.code`), "ERR_NO_GPU_ADAPTER");
    assert.equal(web.requests.filter((r) => r.path.endsWith(".tar")), [], "no shard read");
    // A server that sends the decoders with another Content-Type than application/wasm: compileStreaming refuses, the bytes are compiled whole.
    const fallback = await page.evaluate<{ streamed: number; width: number; height: number; pixel: number }>(`import("/dist/browser/browser.js").then(async ({ createJpegDecoder }) => {
      let streamed = 0;
      WebAssembly.compileStreaming = async () => { streamed++; throw new TypeError("Incorrect response MIME type. Expected 'application/wasm'."); };
      const decoder = await createJpegDecoder();
      const img = decoder.decode(Uint8Array.from(atob("${TINY_JPEG}"), (c) => c.charCodeAt(0)));
      return { streamed, width: img.width, height: img.height, pixel: img.data[0] };
    })`);
    assert.equal([fallback.streamed, fallback.width, fallback.height], [1, 16, 8]);
    assert.ok(Math.abs(fallback.pixel - 200) <= 3, `the decoded grey ${fallback.pixel}`);
    // A browser without WebGPU at all (or a page outside a secure context) has no navigator.gpu.
    const none = await page.evaluate<{ code: string; message: string }>(`import("/dist/browser/browser.js").then(async ({ requestDevice }) => {
      Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined, configurable: true });
      try { await requestDevice(); return { code: "none", message: "" }; } catch (e) { return { code: e.code, message: e.message }; }
    })`);
    assert.is(none.code, "ERR_NO_GPU_ADAPTER");
    assert.match(none.message, /has no navigator\.gpu: .*secure context.*--enable-unsafe-webgpu/);
    // The bundle's kind table in a page: a sqlite: address is refused by name, not a missing built-in.
    const refused = await page.evaluate<{ code: string; message: string }>(`import("/dist/browser/browser.js").then(async ({ Loader }) => {
      const loader = new Loader({ store: "sqlite:data/fashion-mnist.sqlite", dataset: "fashion-mnist", ids: ["x"], batchSize: 1 });
      try { for await (const b of loader.epoch(0)) return { code: "none", message: String(b.ids) }; } catch (e) { return { code: e.code, message: e.message }; } finally { await loader.close().catch(() => {}); }
    })`);
    assert.is(refused.code, "ERR_UNSUPPORTED", refused.message);
    assert.match(refused.message, /in a browser as a page has no file system: export the dataset \(cassette export.*read https:\/\/…, s3:\/\/… or wds:/);
    // Shards on another origin that sends no CORS headers: the browser hides the answer, the error says why it may be.
    const bare = await serveStatic(ROOT, 0, { "/shards/": (await made!).dir }, { cors: false });
    try {
      const blocked = await page.evaluate<{ code: string; message: string }>(`import("/dist/browser/browser.js").then(async ({ Loader }) => {
        const loader = new Loader({ store: "wds:${bare.url}shards/fm.index.json", ids: ["x"], batchSize: 1, retries: 0 });
        try { for await (const b of loader.epoch(0)) return { code: "none", message: String(b.ids) }; } catch (e) { return { code: e.code, message: e.message }; } finally { await loader.close().catch(() => {}); }
      })`);
      assert.is(blocked.code, "ERR_STORE_UNREACHABLE", blocked.message);
      assert.match(blocked.message, new RegExp(`Cannot get ${bare.url}shards/fm\\.index\\.json: .*does not answer this page's origin \\(${web.url.slice(0, -1).replace(/[.]/g, "\\.")}\\) with CORS headers \\(Access-Control-Allow-Origin`));
      assert.ok(bare.requests.some((r) => r.path === "/shards/fm.index.json" && r.status === 200), "the server answered; the browser kept the answer from the page");
    } finally {
      await bare.close();
    }
  } finally {
    await page.close();
    await web.close();
  }
}, { timeoutMs: 60_000 });

/** A training run's frames: losses, accuracies, batch times, two connections; the clock given, so both dashboards see the same frames. */
function runFrames(): DashboardFrame[] {
  return Array.from({ length: 7 }, (_, i): DashboardFrame => ({
    seconds: 0.5 * (i + 1), time: 1_700_000_000_000 + 500 * i, epoch: i >> 2, step: 4 * (i + 1), samples: 128 * (i + 1),
    imagesPerSec: 256 - 3 * i, waitShare: 0.3 / (i + 1), loss: { train: 2.3 / (i + 1), ...(i % 3 === 2 && { test: 2 / i }) },
    accuracy: { train: 0.1 + 0.1 * i }, batchMs: { p50: 3 + i, p99: 20, max: 40 + i }, batchTimesMs: [1 + i, 4 * i, 30],
    connections: { "10.0.0.1:9042": { bytes: 1e5 * (i + 1) ** 2, samples: 64 * (i + 1) }, "10.0.0.2:9042": { bytes: 7e4 * (i + 1), samples: 64 * (i + 1) } },
    prefetch: 2 + (i % 3), retries: i >> 1, workers: 2, done: i === 6,
  }));
}

test("the served dashboard's page and a dashboard mounted in a page (mountDashboard from cassette/browser) show the same tiles and the same SVG from the same frames", async () => {
  const { web } = await served();
  const dash = await startDashboard({ title: "same figures" });
  const page = await openPage(undefined, { width: 1280, height: 1000 });
  try {
    await page.goto(dash.url);
    await page.evaluate(`import("${web.url}dist/browser/browser.js").then(({ mountDashboard }) => {
      const el = document.createElement("div");
      el.id = "mounted";
      document.body.append(el);
      window.mounted = mountDashboard(el);
      return 0;
    })`);
    const frames = runFrames();
    for (const f of frames) {
      dash.update(f);
      await page.evaluate(`(window.mounted.update(${JSON.stringify(f)}), 0)`);
    }
    await page.waitFor(`document.getElementById("status").dataset.status === "finished"`, 10_000);
    const read = (root: string) => page.evaluate<{ tiles: string[][]; charts: string[][]; hidden: boolean[] }>(`(() => {
      const root = document.querySelector(${JSON.stringify(root)});
      return {
        tiles: [...root.querySelectorAll("[data-metric]")].map((e) => [e.dataset.metric, e.dataset.value, e.textContent]),
        charts: [...root.querySelectorAll("svg[data-chart]")].map((e) => [e.dataset.chart, e.innerHTML]),
        hidden: [...root.querySelectorAll("[data-needs]")].map((e) => e.hidden),
      };
    })()`);
    const [page_, mounted] = [await read("main.cassette-dashboard"), await read("#mounted")];
    assert.equal(mounted, page_);
    // Not two empty dashboards: the figures of the last frame, lines, bars.
    const tiles = Object.fromEntries(mounted.tiles.map(([name, value]) => [name, value]));
    assert.equal([tiles.samples, tiles["loss-train"], tiles["loss-test"], tiles.retries], [String(128 * 7), String(2.3 / 7), "", "3"], "the last frame has no test loss");
    const charts = Object.fromEntries(mounted.charts);
    assert.match(charts.loss, /data-series="train" data-n="7" data-last="0\.32857142857142857"/);
    assert.match(charts.loss, /data-series="test" data-n="2" data-last="0\.4"/);
    assert.is((charts.connections.match(/<rect data-value=/g) ?? []).length, 2);
    assert.ok((charts.histogram.match(/<rect data-value=/g) ?? []).length >= 3, charts.histogram);
    assert.equal(mounted.hidden, [false, false, false, false, false, false]);
    // Without a loader a frame must be whole; once closed, the element is empty and updates are refused.
    const refused = await page.evaluate<{ partial: string[]; after: string[]; left: number }>(`(() => {
      const code = (f) => { try { f(); return ["none"]; } catch (e) { return [e.code, e.message]; } };
      const partial = code(() => window.mounted.update({ samples: 1, step: 1 }));
      window.mounted.close();
      return { partial, after: code(() => window.mounted.update(${JSON.stringify(frames[0])})), left: document.getElementById("mounted").childNodes.length };
    })()`);
    assert.equal(refused.partial, ["ERR_INVALID_OPTION", "Cannot draw the dashboard's frame as it has no seconds, imagesPerSec, waitShare: give them, or mount it with a loader whose stats() fill them"]);
    assert.equal(refused.after, ["ERR_INVALID_OPTION", "Cannot update the dashboard as it was closed: mount another"]);
    assert.is(refused.left, 0);
  } finally {
    await page.close();
    await dash.close();
    await web.close();
  }
}, { timeoutMs: 60_000 });

/** The preprocessing both sides run: a random-resized crop to 24 × 24 and a mirror, seeded, normalized as the example. */
const PRE = { width: 24, height: 24, channels: 1, crop: { kind: "random-resized" }, flip: 0.5, seed: 11, mean: [0.286], std: [0.353] } as const;
const BATCH = { batchSize: 32, seed: 9, order: "strict", decode: { grey: true } } as const;
/** Epoch 2's third batch in plan order ("strict"): which samples, their crops and mirrors all depend on the seeds and the epoch. */
const EPOCH = 2, AT = 2;

test("the tensor of a fixed batch made in the page (SwiftShader) equals, within 1e-5, the one this runtime makes from the same shards (lavapipe): same ids in the same order, same seed and preprocessing", async () => {
  const { web } = await served();
  const index = `${web.url}shards/fm.index.json`;
  const page = await openPage(undefined, { webgpu: true, timeoutMs: 30_000 });
  let inPage: { ids: string[]; shape: number[]; x: number[] };
  try {
    await page.goto(`${web.url}examples/browser/index.html?index=none`);
    inPage = await page.evaluate(`import("/dist/browser/browser.js").then(async ({ Loader, createPreprocessor, loaderBatches, requestDevice }) => {
      const ids = (await (await fetch(${JSON.stringify(index)})).json()).shardlist.flatMap((s) => s.keys ?? []);
      const device = await requestDevice();
      const pre = await createPreprocessor(device, ${JSON.stringify(PRE)});
      const loader = new Loader({ store: "wds:${index}", ids, ...${JSON.stringify(BATCH)} });
      try {
        let i = 0;
        for await (const b of loaderBatches(loader, pre, ${EPOCH}, { classes: 10 })) {
          if (i++ < ${AT}) continue;
          const bytes = b.n * ${PRE.width * PRE.height * PRE.channels} * 4;
          const read = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
          const enc = device.createCommandEncoder();
          enc.copyBufferToBuffer(b.x, b.xOffset ?? 0, read, 0, bytes);
          device.queue.submit([enc.finish()]);
          await read.mapAsync(GPUMapMode.READ);
          return { ids: b.ids, shape: [b.n], x: Array.from(new Float32Array(read.getMappedRange())) };
        }
      } finally {
        await loader.close();
        device.destroy();
      }
    })`);
  } finally {
    await page.close();
  }
  // The same here, from the same shards over HTTP (undici).
  const device = await testDevice();
  const ids = (JSON.parse(new TextDecoder().decode(await runtime.readFile(join((await made!).dir, "fm.index.json")))) as { shardlist: { keys?: string[] }[] }).shardlist.flatMap((s) => s.keys ?? []);
  const pre = await createPreprocessor(device, { ...PRE, mean: [...PRE.mean], std: [...PRE.std] });
  const loader = new Loader({ store: `wds:${index}`, ids, ...BATCH });
  try {
    let i = 0;
    for await (const b of loaderBatches(loader, pre, EPOCH, { classes: 10 })) {
      if (i++ < AT) continue;
      assert.equal(inPage.ids, b.ids, "the same samples in the same order");
      const bytes = b.n * PRE.width * PRE.height * 4;
      // readBuffer reads from byte 0: the batch's tensor starts at xOffset.
      const x = new Float32Array(await readBuffer(device, b.x, (b.xOffset ?? 0) + bytes), b.xOffset ?? 0, bytes / 4);
      assert.is(inPage.x.length, x.length);
      assertClose(x, inPage.x, 1e-5, PRE.seed);
      // Not a constant image: the crops and mirrors changed the pixels.
      assert.ok(new Set(inPage.x.slice(0, 576)).size > 10, "the first image has varied pixels");
      break;
    }
  } finally {
    await loader.close();
    pre.destroy();
  }
}, { timeoutMs: 90_000 });

test("a page whose GPU device is lost mid-epoch (device.destroy() after the third step) gets ERR_GPU_DEVICE saying so from fit, not a hang nor the implementation's OperationError", async () => {
  const { web } = await served();
  const page = await openPage(undefined, { webgpu: true, timeoutMs: 40_000 });
  try {
    await page.goto(`${web.url}examples/browser/index.html?index=none`);
    const lost = await page.evaluate<{ code: string; message: string; steps: number }>(`import("/dist/browser/browser.js").then(async ({ Loader, createModel, createPreprocessor, fit, loaderBatches, requestDevice }) => {
      const index = "${web.url}shards/fm.index.json";
      const ids = (await (await fetch(index)).json()).shardlist.flatMap((s) => s.keys ?? []);
      const device = await requestDevice();
      const pre = await createPreprocessor(device, { width: 28, height: 28, channels: 1 });
      const model = createModel(device, "mlp", { seed: 1 });
      const loader = new Loader({ store: "wds:" + index, ids, batchSize: 32, decode: { grey: true } });
      let steps = 0;
      try {
        await fit(model, { epochs: 1, train: (e) => loaderBatches(loader, pre, e, { classes: 10 }), onStep: async () => {
          if (++steps === 3) device.destroy();
          if (steps > 3) await model.trainMetrics();
        } });
        return { code: "none", message: "trained on a lost device", steps };
      } catch (e) {
        return { code: e.code, message: e.message, steps };
      } finally {
        await loader.close();
      }
    })`);
    assert.is(lost.code, "ERR_GPU_DEVICE", lost.message);
    // Met by the next step's training work, or by the next batch's preprocessing, whichever runs first.
    assert.match(lost.message, /^Cannot (train|preprocess epoch 0's batches) as the GPU device was lost \(destroyed: device\.destroy\(\) was called.*\): request a new device/);
    assert.ok(lost.steps >= 3 && lost.steps < Math.ceil(300 / 32), `lost after step 3 of ${Math.ceil(300 / 32)} (at ${lost.steps})`);
  } finally {
    await page.close();
  }
}, { timeoutMs: 60_000 });
