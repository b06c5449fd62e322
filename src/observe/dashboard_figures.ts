/**
 * The dashboard's figures, drawn once for both places that show them: the served page
 * (dashboard.ts pushes them with each frame, dashboard_page.ts puts them in place) and the
 * component a page mounts (dashboard_mount.ts). `dashboardMarkup` lays out the tiles and the
 * charts; `dashboardFigures` turns a frame as served and the curves' history into each tile's
 * value and text and each chart's inline SVG. Plain strings and numbers: nothing here touches a
 * DOM nor a server, so the two places render the same SVG from the same data.
 *
 * Each tile's element has `data-metric="NAME"` and its unformatted number in `data-value` (empty
 * while unknown); each chart's `<svg>` has `data-chart="ID"`; a line has `data-series`, and its
 * points drawn and last value in `data-n` and `data-last`; a bar has its value in `data-value`.
 * Tests read them there (test/_support/browser.ts).
 *
 * @example
 * ```ts
 * import { dashboardFigures } from "./dashboard_figures.ts";
 * import { DashboardRun } from "./dashboard_run.ts";
 * const run = new DashboardRun();
 * const { served } = run.update({ seconds: 2, step: 4, samples: 128, imagesPerSec: 64, waitShare: 0.25, loss: { train: 0.7 } });
 * const figures = dashboardFigures(served, run.points);
 * console.log(figures.tiles.find((t) => t.name === "wait-share")?.text); // 25.0 %
 * ```
 */
import type { HistoryPoint, ServedFrame } from "./dashboard_run.ts";

type Format = "int" | "num" | "pct" | "ms" | "s";

/** The tiles: metric name, label, and how it is formatted. */
const TILES: [name: string, label: string, format: Format][] = [
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

/** The charts' drawing size in SVG units (they scale to their box), and the plot's margins. */
const W = 480, H = 200, PAD = { l: 46, r: 8, t: 8, b: 20 };
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

/**
 * The figures' style, scoped to the element of class `cassette-dashboard` that holds them (the
 * served page's `<main>`, or the element a page mounts the component in).
 */
export const DASHBOARD_CSS = `.cassette-dashboard .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(120px, 1fr)); gap: 6px; margin: 8px 0 16px; }
.cassette-dashboard .tile { background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; padding: 4px 8px; }
.cassette-dashboard .tile .label { display: block; font-size: 11px; color: #666; }
.cassette-dashboard .tile .v { font-size: 18px; font-variant-numeric: tabular-nums; }
.cassette-dashboard .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 12px; }
.cassette-dashboard figure { margin: 0; background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; padding: 4px; }
.cassette-dashboard figcaption { font-size: 12px; color: #444; padding: 0 4px; }
.cassette-dashboard svg { width: 100%; height: auto; display: block; }
.cassette-dashboard svg text { font: 10px system-ui, sans-serif; fill: #555; }
.cassette-dashboard [hidden] { display: none; }`;

/**
 * The tiles and the charts, empty, as HTML to put inside an element of class
 * `cassette-dashboard`. With `idPrefix` each tile also gets the id `PREFIXm-NAME` and each chart
 * `PREFIXchart-ID` (the served page: `m-samples`, `chart-loss`).
 */
export function dashboardMarkup(idPrefix?: string): string {
  const id = (s: string) => (idPrefix === undefined ? "" : ` id="${escapeXml(idPrefix + s)}"`);
  const tiles = TILES.map(([name, label, format]) =>
    `<div class="tile"${needs(name)}><span class="label">${label}</span><span class="v"${id(`m-${name}`)} data-metric="${name}" data-format="${format}" data-value="">–</span></div>`
  ).join("\n");
  const charts = CHARTS.map(([chart, caption]) =>
    `<figure${needs(chart)}><figcaption>${caption}</figcaption><svg${id(`chart-${chart}`)} data-chart="${chart}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${caption}"></svg></figure>`
  ).join("\n");
  return `<section class="tiles">\n${tiles}\n</section>\n<section class="charts">\n${charts}\n</section>`;
}

/** What `dashboardFigures` draws: each tile's number and text, each chart's SVG, what a run has. */
export interface DashboardFigures {
  /** Each tile: its metric, its value (absent while unknown) and the text shown. */
  tiles: { name: string; value?: number; text: string }[];
  /** Each chart: its id (`data-chart`) and the SVG elements inside its `<svg>`. */
  charts: { id: string; svg: string }[];
  /** Whether the run has losses and accuracies (their tiles and charts are hidden until it has). */
  shown: { loss: boolean; accuracy: boolean };
}

/** The figures of frame `f` (as served) with the curves of `points`. */
export function dashboardFigures(f: ServedFrame, points: readonly HistoryPoint[]): DashboardFigures {
  const conns = Object.keys(f.connections ?? {}).sort();
  const connMBs = conns.map((c) => (f.connectionsBytesPerSec[c] ?? 0) / 1e6);
  const values: Record<string, number | undefined> = {
    epoch: f.epoch, step: f.step, samples: f.samples, seconds: f.seconds,
    "images-per-sec": f.imagesPerSec, "images-per-sec-now": f.imagesPerSecNow, "mb-per-sec": f.mbPerSec,
    "mb-per-sec-now": conns.length ? connMBs.reduce((a, b) => a + b, 0) : undefined,
    "wait-share": f.waitShare, "loss-train": f.loss?.train, "loss-test": f.loss?.test,
    "accuracy-train": f.accuracy?.train, "accuracy-test": f.accuracy?.test,
    "batch-p50": f.batchMs?.p50, "batch-p99": f.batchMs?.p99, "batch-max": f.batchMs?.max,
    prefetch: f.prefetch, "max-outstanding": f.maxOutstanding, retries: f.retries, hedged: f.hedged, "hedge-wins": f.hedgeWins,
    reasked: f.reasked, skipped: f.skipped, workers: f.workers, "slow-lane": f.slowLane, stolen: f.stolen, connections: conns.length,
  };
  const tiles = TILES.map(([name, , format]) => {
    const v = values[name];
    return typeof v === "number" && Number.isFinite(v) ? { name, value: v, text: fmt(v, format) } : { name, text: "–" };
  });
  const has = (k: "loss" | "accuracy") =>
    (f[k]?.train !== undefined || f[k]?.test !== undefined) || points.some((p) => Number.isFinite(p[`${k}Train` as const]) || Number.isFinite(p[`${k}Test` as const]));
  const along = (key: keyof HistoryPoint) => points.map((p): [number, number] => [p.seconds, p[key] ?? NaN]);
  const charts = [
    { id: "loss", svg: lines([["train", along("lossTrain")], ["test", along("lossTest")]]) },
    { id: "accuracy", svg: lines([["train", along("accuracyTrain")], ["test", along("accuracyTest")]], 0, 1) },
    { id: "rate", svg: lines([["images/s", along("imagesPerSec")]]) },
    { id: "wait", svg: lines([["wait share", along("waitShare")]], 0, 1) },
    { id: "histogram", svg: bars(histogramBars(f.batchHistogram), "int") },
    { id: "connections", svg: bars(conns.map((c, i) => [c, connMBs[i]]), "num") },
    { id: "depth", svg: lines([["batches", along("prefetch")]]) },
  ];
  return { tiles, charts, shown: { loss: has("loss"), accuracy: has("accuracy") } };
}

/** The histogram's bars, from the first bucket with a count to the last one. */
function histogramBars(h: ServedFrame["batchHistogram"]): [string, number][] {
  const used = h.counts.map((c, i): [number, number] => [c, i]).filter((c) => c[0] > 0).map((c) => c[1]);
  const out: [string, number][] = [];
  if (used.length === 0) return out;
  for (let i = used[0]; i <= used[used.length - 1]; i++) {
    out.push([i < h.boundsMs.length ? `≤${h.boundsMs[i]} ms` : `>${h.boundsMs[h.boundsMs.length - 1]} ms`, h.counts[i]]);
  }
  return out;
}

const NO_DATA = `<text x="${W / 2}" y="${H / 2}" text-anchor="middle">no data</text>`;

/** Lines over the run's seconds; each series is [name, [[x, y], …]]; a non-finite y breaks its line. */
function lines(series: [string, [number, number][]][], yMin?: number, yMax?: number): string {
  const all = series.flatMap((s) => s[1]).filter((p) => Number.isFinite(p[1]));
  if (all.length === 0) return NO_DATA;
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(x0 + 1e-9, ...xs);
  const y0 = yMin ?? Math.min(0, ...ys), y1 = Math.max(yMax ?? -Infinity, ...ys, y0 + 1e-9);
  const X = (x: number) => PAD.l + (x - x0) / (x1 - x0) * (W - PAD.l - PAD.r);
  const Y = (y: number) => H - PAD.b - (y - y0) / (y1 - y0) * (H - PAD.t - PAD.b);
  let out = axes(tick(y1), tick(y0)) +
    `<text x="${PAD.l}" y="${H - 6}">${tick(x0)} s</text>` +
    `<text x="${W - PAD.r}" y="${H - 6}" text-anchor="end">${tick(x1)} s</text>`;
  series.forEach(([name, pts], i) => {
    let d = "", pen = "M", n = 0, last: number | undefined;
    for (const [x, y] of pts) {
      if (!Number.isFinite(y)) { pen = "M"; continue; } // a gap in the data is a gap in the line
      d += `${pen}${X(x).toFixed(1)} ${Y(y).toFixed(1)} `;
      pen = "L", n++, last = y;
    }
    // The legend: a swatch of the line's colour, then its name.
    const lx = PAD.l + 6 + i * 90, colour = COLORS[i % COLORS.length];
    out += `<path data-series="${escapeXml(name)}" data-n="${n}" data-last="${last ?? ""}" d="${d}" fill="none" stroke="${colour}" stroke-width="1.5"/>` +
      `<rect class="swatch" x="${lx}" y="${PAD.t + 3}" width="10" height="8" fill="${colour}"/>` +
      `<text x="${lx + 14}" y="${PAD.t + 10}" fill="${colour}">${escapeXml(name)}</text>`;
  });
  return out;
}

/** Vertical bars, [[label, value], …], each labelled with its value formatted as `format`. */
function bars(items: [string, number][], format: Format): string {
  if (items.length === 0) return NO_DATA;
  const top = Math.max(1e-9, ...items.map((b) => b[1]));
  const bw = (W - PAD.l - PAD.r) / items.length;
  let out = `<line x1="${PAD.l}" y1="${H - PAD.b}" x2="${W - PAD.r}" y2="${H - PAD.b}" stroke="#999"/>` +
    `<text x="${PAD.l - 4}" y="${PAD.t + 8}" text-anchor="end">${tick(top)}</text>`;
  items.forEach(([label, v], i) => {
    const h = v / top * (H - PAD.t - PAD.b - 12);
    const x = PAD.l + i * bw + bw * 0.1;
    const shown = escapeXml(label.length > 14 ? "…" + label.slice(-13) : label);
    out += `<rect data-value="${v}" x="${x.toFixed(1)}" y="${(H - PAD.b - h).toFixed(1)}" width="${(bw * 0.8).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[0]}"><title>${escapeXml(label)}: ${fmt(v, format)}</title></rect>` +
      `<text x="${(x + bw * 0.4).toFixed(1)}" y="${(H - PAD.b - h - 2).toFixed(1)}" text-anchor="middle">${fmt(v, format)}</text>` +
      `<text x="${(x + bw * 0.4).toFixed(1)}" y="${H - 6}" text-anchor="middle">${shown}</text>`;
  });
  return out;
}

/** The two axes of a line chart, with the y axis' top and bottom labels. */
function axes(top: string, bottom: string): string {
  return `<line x1="${PAD.l}" y1="${H - PAD.b}" x2="${W - PAD.r}" y2="${H - PAD.b}" stroke="#999"/>` +
    `<line x1="${PAD.l}" y1="${PAD.t}" x2="${PAD.l}" y2="${H - PAD.b}" stroke="#999"/>` +
    `<text x="${PAD.l - 4}" y="${PAD.t + 8}" text-anchor="end">${top}</text>` +
    `<text x="${PAD.l - 4}" y="${H - PAD.b}" text-anchor="end">${bottom}</text>`;
}

/** A tile's text for value `v`. */
function fmt(v: number, format: Format): string {
  if (format === "pct") return (100 * v).toFixed(1) + " %";
  if (format === "ms") return v.toFixed(v < 10 ? 2 : 1) + " ms";
  if (format === "s") return v.toFixed(1) + " s";
  if (format === "int") return Math.round(v).toLocaleString("en-US");
  const a = Math.abs(v);
  return a >= 1000 ? Math.round(v).toLocaleString("en-US") : a >= 10 ? v.toFixed(1) : v.toFixed(3);
}

/** An axis label: short, with "k" for thousands. */
function tick(v: number): string {
  const a = Math.abs(v);
  return a >= 1000 ? (v / 1000).toFixed(a >= 10000 ? 0 : 1) + "k" : a >= 10 ? v.toFixed(0) : a >= 1 ? v.toFixed(1) : v.toFixed(2);
}

/** ` hidden data-needs="loss"` for a tile or chart only a training run fills, else "". */
function needs(name: string): string {
  return NEEDS[name] ? ` hidden data-needs="${NEEDS[name]}"` : "";
}

/** Escapes text for XML and HTML content and attribute values. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
