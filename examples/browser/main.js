// The example page's script: cassette's Loader reads WebDataset shards over HTTP, the wasm
// decoder decodes them in module workers, the GPU normalizes them and trains the mlp on them.
// Query parameters: index (the shards' index.json, default the one README's "In the browser"
// makes), epochs (1), batch (32), seed (1), lr (0.001).
import { createModel, createPreprocessor, deviceInfo, fit, lineChart, Loader, loaderBatches, requestDevice } from "../../dist/browser/browser.js";

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

/** Sets a figure: its text and its value in data-value (what the test reads). */
function figure(name, value, text = String(value)) {
  const e = $(`m-${name}`);
  e.dataset.value = String(value);
  e.textContent = text;
}

function status(s, text) {
  $("status").dataset.status = s;
  $("status").textContent = text;
}

/** The two charts, drawn by cassette's own SVG code (src/observe/svg.ts). */
function draw(plots) {
  const x = "samples trained";
  $("chart-loss").innerHTML = lineChart({ title: "Training loss (mean so far this epoch)", xLabel: x, yLabel: "loss", width: 560, height: 320, series: [{ name: "loss", points: plots.loss }] });
  $("chart-accuracy").innerHTML = lineChart({ title: "Training accuracy (so far this epoch)", xLabel: x, yLabel: "accuracy", width: 560, height: 320, yMin: 0, yMax: 1, series: [{ name: "accuracy", points: plots.accuracy }] });
  for (const [name, points] of Object.entries(plots)) {
    const last = points[points.length - 1];
    $(`chart-${name}`).dataset.last = last ? String(last[1]) : "";
    $(`chart-${name}`).dataset.points = String(points.length);
  }
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
  const trained = [];
  const plots = { loss: [], accuracy: [] };
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
      figure("samples", base + samples);
      figure("epoch", epoch + 1);
      if (++steps % 2) return;
      const m = await model.trainMetrics();
      plots.loss.push([base + samples, m.loss]);
      plots.accuracy.push([base + samples, m.accuracy]);
      figure("loss", m.loss, m.loss.toFixed(4));
      figure("accuracy", m.accuracy, `${(100 * m.accuracy).toFixed(1)} %`);
      draw(plots);
    },
    onEpoch: (r) => {
      base += r.samples;
      // The epoch's own figures end its lines (what the JSON reports).
      plots.loss.push([base, r.loss]);
      plots.accuracy.push([base, r.trainAccuracy]);
    },
  });
  const seconds = (performance.now() - t0) / 1000;
  const last = reports[reports.length - 1];
  figure("samples", base);
  figure("loss", last.loss, last.loss.toFixed(4));
  figure("accuracy", last.trainAccuracy, `${(100 * last.trainAccuracy).toFixed(1)} %`);
  figure("images-per-sec", base / seconds, (base / seconds).toFixed(0));
  draw(plots);
  const info = deviceInfo(device);
  await loader.close();
  await model.destroy();
  pre.destroy();
  device.destroy();
  return {
    ok: true, index, epochs, batchSize, seed, samples: base, seconds,
    loss: last.loss, accuracy: last.trainAccuracy, imagesPerSec: base / seconds,
    reports: reports.map(({ stepLoss, ...r }) => ({ ...r, steps: stepLoss.length })),
    plots, ids: trained, device: info,
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
