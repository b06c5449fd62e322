/**
 * The dashboard's page (src/observe/dashboard.ts serves it at `/`): one self-contained HTML
 * document, with no framework and nothing fetched from elsewhere. Its script listens to
 * `/events` and draws the charts as inline SVG.
 *
 * Each figure sits in an element with `data-metric="NAME"`, and its unformatted number is in
 * `data-value` (empty while unknown). The element's id is `m-NAME`. Tests read them there
 * (test/_support/browser.ts). `#status` has `data-status`: connecting, live, finished or
 * disconnected. `body[data-frames]` counts the frames the page has received.
 */

/** The tiles: metric name, label, and how the page formats it. */
const TILES: [name: string, label: string, format: "int" | "num" | "pct" | "ms" | "s"][] = [
  ["epoch", "epoch", "int"],
  ["step", "step", "int"],
  ["samples", "samples", "int"],
  ["seconds", "seconds", "s"],
  ["images-per-sec", "images/s (run)", "num"],
  ["images-per-sec-now", "images/s (now)", "num"],
  ["mb-per-sec", "MB/s (run)", "num"],
  ["mb-per-sec-now", "MB/s (now)", "num"],
  ["wait-share", "wait share", "pct"],
  ["loss-train", "loss (train)", "num"],
  ["loss-test", "loss (test)", "num"],
  ["accuracy-train", "accuracy (train)", "pct"],
  ["accuracy-test", "accuracy (test)", "pct"],
  ["batch-p50", "batch p50", "ms"],
  ["batch-p99", "batch p99", "ms"],
  ["batch-max", "batch max", "ms"],
  ["prefetch", "window depth", "int"],
  ["max-outstanding", "most outstanding", "int"],
  ["retries", "retries", "int"],
  ["hedged", "hedged", "int"],
  ["hedge-wins", "hedge wins", "int"],
  ["reasked", "re-asked", "int"],
  ["skipped", "skipped", "int"],
  ["workers", "workers", "int"],
  ["slow-lane", "slow lane", "int"],
  ["stolen", "stolen", "int"],
  ["connections", "connections", "int"],
];

/**
 * Tiles and charts only a training run has: hidden until a frame or point carries them, so a
 * `cassette read` page shows no empty loss and accuracy cards.
 */
const NEEDS: Record<string, "loss" | "accuracy"> = {
  "loss-train": "loss", "loss-test": "loss", "accuracy-train": "accuracy", "accuracy-test": "accuracy", loss: "loss", accuracy: "accuracy",
};

/** The charts: id and caption. */
const CHARTS: [id: string, caption: string][] = [
  ["loss", "loss (train, test)"],
  ["accuracy", "accuracy (train, test)"],
  ["rate", "images/s over time"],
  ["wait", "consumer's wait share"],
  ["histogram", "batch times"],
  // Per connection and over the last second: the bars add up to "MB/s (now)", while "MB/s (run)"
  // is every connection's bytes over the whole run (it differed by both, unexplained).
  ["connections", "MB/s per connection over the last second (their sum is MB/s (now))"],
  ["depth", "window depth (batches)"],
];

/** The page for a dashboard titled `title`; the page keeps at most `cap` points, as the server does. */
export function dashboardPage(title: string, cap: number): string {
  const t = escapeHtml(title);
  const tiles = TILES.map(([name, label, format]) =>
    `<div class="tile"${needs(name)}><span class="label">${label}</span><span class="v" id="m-${name}" data-metric="${name}" data-format="${format}" data-value="">–</span></div>`
  ).join("\n");
  const charts = CHARTS.map(([id, caption]) =>
    `<figure${needs(id)}><figcaption>${caption}</figcaption><svg id="chart-${id}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${caption}"></svg></figure>`
  ).join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${t}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fafafa; }
header { display: flex; align-items: baseline; gap: 16px; }
h1 { font-size: 20px; margin: 0 0 8px; }
#status { font-size: 12px; padding: 2px 8px; border-radius: 8px; background: #ddd; }
#status[data-status="live"] { background: #cfe8cf; }
#status[data-status="finished"] { background: #cfdff5; }
#status[data-status="disconnected"] { background: #f5d0c8; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(120px, 1fr)); gap: 6px; margin: 8px 0 16px; }
.tile { background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; padding: 4px 8px; }
.tile .label { display: block; font-size: 11px; color: #666; }
.tile .v { font-size: 18px; font-variant-numeric: tabular-nums; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 12px; }
figure { margin: 0; background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; padding: 4px; }
figcaption { font-size: 12px; color: #444; padding: 0 4px; }
svg { width: 100%; height: auto; display: block; }
svg text { font: 10px system-ui, sans-serif; fill: #555; }
</style>
</head>
<body data-frames="0">
<header><h1>${t}</h1><span id="status" data-status="connecting">connecting…</span><span id="updated"></span></header>
<section class="tiles">
${tiles}
</section>
<section class="charts">
${charts}
</section>
<script>
"use strict";
const CAP = ${cap}, W = ${W}, H = ${H}, PAD = { l: 46, r: 8, t: 8, b: 20 };
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
let points = [], latest = null, frames = 0;

function esc(s) { return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]); }
function fmt(v, format) {
  if (v === undefined || v === null || Number.isNaN(v)) return "–";
  if (format === "pct") return (100 * v).toFixed(1) + " %";
  if (format === "ms") return v.toFixed(v < 10 ? 2 : 1) + " ms";
  if (format === "s") return v.toFixed(1) + " s";
  if (format === "int") return Math.round(v).toLocaleString("en-US");
  const a = Math.abs(v);
  return a >= 1000 ? Math.round(v).toLocaleString("en-US") : a >= 10 ? v.toFixed(1) : v.toFixed(3);
}
function tick(v) { const a = Math.abs(v); return a >= 1000 ? (v / 1000).toFixed(a >= 10000 ? 0 : 1) + "k" : a >= 10 ? v.toFixed(0) : a >= 1 ? v.toFixed(1) : v.toFixed(2); }
function set(name, v) {
  const el = document.querySelector('[data-metric="' + name + '"]');
  if (!el) return;
  const known = typeof v === "number" && Number.isFinite(v);
  el.dataset.value = known ? String(v) : "";
  el.textContent = known ? fmt(v, el.dataset.format) : "–";
}

/** Lines over the run's seconds; each series is [name, [[x, y], …]]. */
function lineChart(id, series, yMin, yMax) {
  const svg = document.getElementById("chart-" + id);
  const all = series.flatMap((s) => s[1]).filter((p) => Number.isFinite(p[1]));
  if (all.length === 0) { svg.innerHTML = '<text x="' + W / 2 + '" y="' + H / 2 + '" text-anchor="middle">no data</text>'; return; }
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(x0 + 1e-9, ...xs);
  const y0 = yMin ?? Math.min(0, ...ys), y1 = Math.max(yMax ?? -Infinity, ...ys, y0 + 1e-9);
  const X = (x) => PAD.l + (x - x0) / (x1 - x0) * (W - PAD.l - PAD.r);
  const Y = (y) => H - PAD.b - (y - y0) / (y1 - y0) * (H - PAD.t - PAD.b);
  let out = '<line x1="' + PAD.l + '" y1="' + (H - PAD.b) + '" x2="' + (W - PAD.r) + '" y2="' + (H - PAD.b) + '" stroke="#999"/>' +
    '<line x1="' + PAD.l + '" y1="' + PAD.t + '" x2="' + PAD.l + '" y2="' + (H - PAD.b) + '" stroke="#999"/>' +
    '<text x="' + (PAD.l - 4) + '" y="' + (PAD.t + 8) + '" text-anchor="end">' + tick(y1) + '</text>' +
    '<text x="' + (PAD.l - 4) + '" y="' + (H - PAD.b) + '" text-anchor="end">' + tick(y0) + '</text>' +
    '<text x="' + PAD.l + '" y="' + (H - 6) + '">' + tick(x0) + ' s</text>' +
    '<text x="' + (W - PAD.r) + '" y="' + (H - 6) + '" text-anchor="end">' + tick(x1) + ' s</text>';
  series.forEach(([name, pts], i) => {
    let d = "", pen = "M";
    for (const [x, y] of pts) {
      if (!Number.isFinite(y)) { pen = "M"; continue; } // a gap in the data is a gap in the line
      d += pen + X(x).toFixed(1) + " " + Y(y).toFixed(1) + " ";
      pen = "L";
    }
    // The legend: a swatch of the line's colour, then its name.
    const lx = PAD.l + 6 + i * 90;
    out += '<path d="' + d + '" fill="none" stroke="' + COLORS[i % COLORS.length] + '" stroke-width="1.5"/>' +
      '<rect class="swatch" x="' + lx + '" y="' + (PAD.t + 3) + '" width="10" height="8" fill="' + COLORS[i % COLORS.length] + '"/>' +
      '<text x="' + (lx + 14) + '" y="' + (PAD.t + 10) + '" fill="' + COLORS[i % COLORS.length] + '">' + esc(name) + '</text>';
  });
  svg.innerHTML = out;
}

/** Vertical bars; bars is [[label, value], …]. */
function barChart(id, bars, format) {
  const svg = document.getElementById("chart-" + id);
  if (bars.length === 0) { svg.innerHTML = '<text x="' + W / 2 + '" y="' + H / 2 + '" text-anchor="middle">no data</text>'; return; }
  const top = Math.max(1e-9, ...bars.map((b) => b[1]));
  const bw = (W - PAD.l - PAD.r) / bars.length;
  let out = '<line x1="' + PAD.l + '" y1="' + (H - PAD.b) + '" x2="' + (W - PAD.r) + '" y2="' + (H - PAD.b) + '" stroke="#999"/>' +
    '<text x="' + (PAD.l - 4) + '" y="' + (PAD.t + 8) + '" text-anchor="end">' + tick(top) + '</text>';
  bars.forEach(([label, v], i) => {
    const h = v / top * (H - PAD.t - PAD.b - 12);
    const x = PAD.l + i * bw + bw * 0.1;
    out += '<rect data-value="' + v + '" x="' + x.toFixed(1) + '" y="' + (H - PAD.b - h).toFixed(1) + '" width="' + (bw * 0.8).toFixed(1) + '" height="' + h.toFixed(1) + '" fill="' + COLORS[0] + '"><title>' + esc(label) + ": " + fmt(v, format) + '</title></rect>' +
      '<text x="' + (x + bw * 0.4).toFixed(1) + '" y="' + (H - PAD.b - h - 2).toFixed(1) + '" text-anchor="middle">' + fmt(v, format) + '</text>' +
      '<text x="' + (x + bw * 0.4).toFixed(1) + '" y="' + (H - 6) + '" text-anchor="middle">' + esc(label.length > 14 ? "…" + label.slice(-13) : label) + '</text>';
  });
  svg.innerHTML = out;
}

function render() {
  const f = latest;
  if (!f) return;
  set("epoch", f.epoch); set("step", f.step); set("samples", f.samples); set("seconds", f.seconds);
  set("images-per-sec", f.imagesPerSec); set("images-per-sec-now", f.imagesPerSecNow); set("mb-per-sec", f.mbPerSec);
  for (const k of ["loss", "accuracy"]) {
    const has = (f[k] && (f[k].train !== undefined || f[k].test !== undefined)) || points.some((p) => Number.isFinite(p[k + "Train"]) || Number.isFinite(p[k + "Test"]));
    document.querySelectorAll('[data-needs="' + k + '"]').forEach((el) => { el.hidden = !has; });
  }
  set("wait-share", f.waitShare);
  set("loss-train", f.loss && f.loss.train); set("loss-test", f.loss && f.loss.test);
  set("accuracy-train", f.accuracy && f.accuracy.train); set("accuracy-test", f.accuracy && f.accuracy.test);
  set("batch-p50", f.batchMs && f.batchMs.p50); set("batch-p99", f.batchMs && f.batchMs.p99); set("batch-max", f.batchMs && f.batchMs.max);
  set("prefetch", f.prefetch); set("max-outstanding", f.maxOutstanding);
  set("retries", f.retries); set("hedged", f.hedged); set("hedge-wins", f.hedgeWins); set("reasked", f.reasked); set("skipped", f.skipped);
  set("workers", f.workers); set("slow-lane", f.slowLane); set("stolen", f.stolen);
  const conns = Object.keys(f.connections || {}).sort();
  set("connections", conns.length);
  const connMBs = conns.map((c) => (f.connectionsBytesPerSec[c] || 0) / 1e6);
  set("mb-per-sec-now", conns.length ? connMBs.reduce((a, b) => a + b, 0) : undefined);
  document.getElementById("updated").textContent = new Date(f.time).toLocaleTimeString();
  const along = (key) => points.map((p) => [p.seconds, p[key] ?? NaN]);
  lineChart("loss", [["train", along("lossTrain")], ["test", along("lossTest")]]);
  lineChart("accuracy", [["train", along("accuracyTrain")], ["test", along("accuracyTest")]], 0, 1);
  lineChart("rate", [["images/s", along("imagesPerSec")]]);
  lineChart("wait", [["wait share", along("waitShare")]], 0, 1);
  lineChart("depth", [["batches", along("prefetch")]]);
  // The histogram's bars run from the first bucket with a count to the last one.
  const h = f.batchHistogram, used = h.counts.map((c, i) => [c, i]).filter((c) => c[0] > 0).map((c) => c[1]);
  const bars = [];
  if (used.length) for (let i = used[0]; i <= used[used.length - 1]; i++) {
    bars.push([i < h.boundsMs.length ? "≤" + h.boundsMs[i] + " ms" : ">" + h.boundsMs[h.boundsMs.length - 1] + " ms", h.counts[i]]);
  }
  barChart("histogram", bars, "int");
  barChart("connections", conns.map((c, i) => [c, connMBs[i]]), "num");
}

function status(s, text) {
  const el = document.getElementById("status");
  el.dataset.status = s;
  el.textContent = text;
}

const events = new EventSource("events");
events.addEventListener("history", (e) => { points = JSON.parse(e.data); render(); });
events.addEventListener("frame", (e) => {
  const m = JSON.parse(e.data);
  latest = m.frame;
  document.body.dataset.frames = String(++frames);
  // The same bound as the server's history (NOTE [ Dashboard history ] in dashboard.ts).
  if (m.point) { points.push(m.point); if (points.length > CAP) points = points.filter((_, i) => i % 2 === 0); }
  render();
  if (latest.done) { status("finished", "finished"); events.close(); }
  else status("live", "live");
});
events.addEventListener("error", () => { if (!(latest && latest.done)) status("disconnected", "disconnected: retrying"); });
</script>
</body>
</html>
`;
}

/** The charts' drawing size in SVG units (they scale to their box). */
const W = 480, H = 200;

/** ` hidden data-needs="loss"` for a tile or chart only a training run fills, else "". */
function needs(name: string): string {
  return NEEDS[name] ? ` hidden data-needs="${NEEDS[name]}"` : "";
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
