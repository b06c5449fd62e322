// The example page's script: cassette's Loader reads WebDataset shards over HTTP, the wasm
// decoder decodes them in module workers, the GPU normalizes them and trains the mlp on them.
// Query parameters: index (the shards' index.json, default the one README's "In the browser"
// makes), epochs (1), batch (32), seed (1), lr (0.001).
import { createModel, createPreprocessor, deviceInfo, fit, Loader, loaderBatches, mountDashboard, requestDevice } from "../../dist/browser/browser.js";

const q = new URLSearchParams(location.search);
const index = new URL(q.get("index") ?? "../../data/browser-shards/fashion-mnist.index.json", location.href).href;
const epochs = Number(q.get("epochs") ?? 1);
const batchSize = Number(q.get("batch") ?? 32);
const seed = Number(q.get("seed") ?? 1);
const lr = Number(q.get("lr") ?? 0.001);
// Fashion-MNIST's mean and standard deviation of pixels scaled to 0…1.
const NORMALIZE = { mean: [0.286], std: [0.353] };

const $ = (id) => document.getElementById(id);
$("index").textContent = index;

function status(s, text) {
  $("status").dataset.status = s;
  $("status").textContent = text;
}

/**
 * What the mounted dashboard shows after an update, read back from its DOM: the samples tile's
 * value and the points of the training-loss line (the test checks that they grow as the run goes).
 */
function shownNow(root) {
  const loss = root.querySelector('[data-chart="loss"] path[data-series="train"]');
  return { samples: Number(root.querySelector('[data-metric="samples"]').dataset.value), lossPoints: loss ? Number(loss.dataset.n) : 0 };
}

async function train() {
  status("reading", "reading the shard index…");
  const res = await fetch(index);
  if (!res.ok) throw new Error(`Cannot read the shard index ${index}: HTTP ${res.status} (make the shards first: README, "In the browser")`);
  const ids = (await res.json()).shardlist.flatMap((s) => s.keys ?? []);
  status("starting", "asking for the GPU…");
  const device = await requestDevice();
  const pre = await createPreprocessor(device, { width: 28, height: 28, channels: 1, ...NORMALIZE });
  const model = createModel(device, "mlp", { seed, optimizer: { kind: "adam", lr } });
  const loader = new Loader({ store: `wds:${index}`, ids, batchSize, seed, decode: { grey: true } });
  const total = ids.length * epochs;
  $("progress").max = total;
  // The dashboard's figures (the tiles and charts `cassette read --dashboard` serves), drawn in
  // this page from the loader's stats and the training metrics given to update().
  const dash = mountDashboard($("dashboard"), { loader, title: "the run" });
  const shown = [];
  const trained = [];
  let base = 0, steps = 0;
  // The ids each batch trains on, as the Loader handed them over.
  async function* recorded(epoch) {
    for await (const b of loaderBatches(loader, pre, epoch, { classes: 10 })) {
      trained.push(...b.ids);
      yield b;
    }
  }
  status("training", "training…");
  const t0 = performance.now();
  const reports = await fit(model, {
    epochs,
    train: recorded,
    // Every other step the running figures are read back (it waits for the GPU; not every step).
    onStep: async (epoch, samples) => {
      $("progress").value = base + samples;
      if (++steps % 2) return;
      const m = await model.trainMetrics();
      dash.update({ loss: { train: m.loss }, accuracy: { train: m.accuracy } });
      shown.push(shownNow($("dashboard")));
    },
    onEpoch: (r) => {
      base += r.samples;
    },
  });
  const seconds = (performance.now() - t0) / 1000;
  const last = reports[reports.length - 1];
  // The last epoch's own figures end the lines (what the JSON reports).
  dash.update({ loss: { train: last.loss }, accuracy: { train: last.trainAccuracy }, done: true });
  shown.push(shownNow($("dashboard")));
  $("progress").value = base;
  const info = deviceInfo(device);
  await loader.close();
  await model.destroy();
  pre.destroy();
  device.destroy();
  return {
    ok: true, index, epochs, batchSize, seed, samples: base, seconds,
    loss: last.loss, accuracy: last.trainAccuracy, imagesPerSec: base / seconds,
    reports: reports.map(({ stepLoss, ...r }) => ({ ...r, steps: stepLoss.length })),
    // What the dashboard drew: its latest frame and the curves' points, and what it showed after each update.
    dashboard: { latest: dash.latest(), history: dash.history(), shown },
    ids: trained, device: info,
  };
}

try {
  const run = await train();
  $("result").textContent = JSON.stringify(run, null, 1);
  status("finished", `trained ${run.samples} samples in ${run.seconds.toFixed(1)} s: loss ${run.loss.toFixed(4)}, accuracy ${(100 * run.accuracy).toFixed(1)} %`);
} catch (e) {
  const failure = { ok: false, name: e?.name, code: e?.code, message: String(e?.message ?? e) };
  $("error").textContent = `${failure.code ?? failure.name}: ${failure.message}`;
  $("error").dataset.code = failure.code ?? "";
  $("result").textContent = JSON.stringify(failure, null, 1);
  status("failed", "failed");
  console.error(e);
}
