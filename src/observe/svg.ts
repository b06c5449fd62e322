/**
 * Line charts as standalone SVG documents, with no dependencies: batch time over time, per-
 * connection throughput over time, loss curves. The output opens in any browser and diffs as text.
 *
 *   ┌ title ──────────────────────────────────────────┐
 *   │ yLabel ┌ plot area ──────────────────┐ ▬ series 1 │
 *   │  ticks │  one <path> per series,     │ ▬ series 2 │
 *   │        │  clipped to the plot area   │            │
 *   │        └─────────────────────────────┘            │
 *   │              ticks, xLabel                        │
 *   └───────────────────────────────────────────────────┘
 *
 * Axes run over "nice" ticks (1, 2 or 5 × 10^k) that cover the data, or over `yMin`/`yMax` when
 * given; `logY` puts the y axis on decades. Non-finite points (and, with `logY`, points ≤ 0) are
 * skipped and break the line, so a gap in the data shows as a gap. A series on the `right` axis
 * (another unit, e.g. a share beside a rate) is drawn dashed against a second y axis; `markers`
 * puts a dot on every point.
 */
import { CassetteError } from "../errors.ts";

/** One line of a chart: its name in the legend, its points, and the axis it is read against. */
export interface Series {
  /** The name shown in the legend. */
  name: string;
  /** The points, [x, y], in x order. */
  points: [number, number][];
  /** The y axis it is read against (default "left"); "right" needs `yRight`. */
  axis?: "left" | "right";
}

/** What `lineChart` draws: title, axis labels, series, size, and the axes' range and scale. */
export interface LineChartOptions {
  /** The chart's title, above the plot. */
  title: string;
  /** The x axis' label. */
  xLabel: string;
  /** The y axis' label. */
  yLabel: string;
  /** The lines to draw. */
  series: Series[];
  /** Pixels (default 720). */
  width?: number;
  /** Pixels (default 420). */
  height?: number;
  /** Fix the y axis' bottom (default: a nice tick at or below the data). */
  yMin?: number;
  /** Fix the y axis' top (default: a nice tick at or above the data). */
  yMax?: number;
  /** Logarithmic y axis (decades); points with y ≤ 0 are skipped. */
  logY?: boolean;
  /** A second, linear y axis on the right for the series with `axis: "right"`. */
  yRight?: { label: string; min?: number; max?: number };
  /** A dot on every point (default false), so that sparse data shows where it was measured. */
  markers?: boolean;
  /** x ticks on whole numbers only (epochs, steps). */
  integerX?: boolean;
}

/** Tableau 10, then golden-angle hues for more series (each series keeps one colour). */
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const FONT = 'font-family="sans-serif"';
/** Rough width of one character of 11 px sans-serif, to size the legend column. */
const CHAR_PX = 6.2;

/** The colour of series `i`. */
function colour(i: number): string {
  return i < PALETTE.length ? PALETTE[i] : `hsl(${((i - PALETTE.length) * 137.508) % 360},65%,42%)`;
}

/** Right-axis series are dashed, in the plot and in the legend, to tell them apart. */
function dash(s: Series): string {
  return s.axis === "right" ? ' stroke-dasharray="6 3"' : "";
}

/** Escapes text for XML content and attribute values. */
function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);
}

/** A coordinate with at most 2 decimals and no trailing zeros. */
function px(v: number): string {
  return String(Math.round(v * 100) / 100);
}

/** 1, 2 or 5 × 10^k closest above `x` / … (Heckbert's "nice numbers", Graphics Gems I). */
function niceStep(range: number, count: number): number {
  const raw = range / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

interface Axis {
  lo: number;
  hi: number;
  ticks: number[];
  label: (v: number) => string;
}

function fmt(v: number, step: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e6 || a < 1e-3) return v.toExponential(Math.max(0, Math.min(3, -Math.floor(Math.log10(step / a))))).replace(/\.?0+e/, "e");
  return v.toFixed(Math.max(0, -Math.floor(Math.log10(step) + 1e-9)));
}

/** A linear axis over [min, max], bounds rounded out to ticks unless fixed; ticks at least `minStep` apart. */
function linearAxis(min: number, max: number, fixedLo?: number, fixedHi?: number, minStep = 0): Axis {
  let lo = fixedLo ?? min, hi = fixedHi ?? max;
  if (!Number.isFinite(lo) && !Number.isFinite(hi)) lo = 0, hi = 1; // no data, nothing fixed
  else if (!Number.isFinite(lo)) lo = hi - (Math.abs(hi) || 1);
  else if (!Number.isFinite(hi)) hi = lo + (Math.abs(lo) || 1);
  if (!(hi > lo)) {
    // One value (or a fixed bound beyond the data): widen so the axis has a length.
    const pad = lo === 0 ? 1 : Math.abs(lo) / 2;
    if (fixedLo !== undefined && fixedHi === undefined) hi = lo + pad;
    else if (fixedHi !== undefined && fixedLo === undefined) lo = hi - pad;
    else lo -= pad, hi += pad;
  }
  const step = Math.max(minStep, niceStep(hi - lo, 5));
  if (fixedLo === undefined) lo = Math.floor(lo / step + 1e-9) * step;
  if (fixedHi === undefined) hi = Math.ceil(hi / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) ticks.push(Math.abs(t) < step * 1e-9 ? 0 : t);
  return { lo, hi, ticks, label: (v) => fmt(v, step) };
}

/** A decade axis; its bounds are powers of 10 unless fixed. */
function logAxis(min: number, max: number, fixedLo?: number, fixedHi?: number): Axis {
  let lo = fixedLo !== undefined && fixedLo > 0 ? fixedLo : Number.isFinite(min) ? 10 ** Math.floor(Math.log10(min)) : 1;
  let hi = fixedHi !== undefined && fixedHi > lo ? fixedHi : Number.isFinite(max) ? 10 ** Math.ceil(Math.log10(max)) : lo * 10;
  if (!(hi > lo)) hi = lo * 10;
  const ticks: number[] = [];
  for (let k = Math.ceil(Math.log10(lo) - 1e-9); 10 ** k <= hi * (1 + 1e-9); k++) ticks.push(10 ** k);
  if (ticks.length < 2) ticks.splice(0, ticks.length, lo, hi); // less than a decade: label the ends
  [lo, hi] = [Math.log10(lo), Math.log10(hi)];
  return { lo, hi, ticks: ticks.map(Math.log10), label: (v) => fmt(10 ** v, 10 ** v) };
}

/**
 * A line chart as a complete SVG document: axes with nice ticks, a legend, one colour per
 * series. Non-finite points are skipped (the line breaks there); empty series still get a
 * legend entry; all text is XML-escaped.
 *
 * @example
 * ```ts
 * import { lineChart } from "./svg.ts";
 * const svg = lineChart({
 *   title: "batch time", xLabel: "s", yLabel: "ms",
 *   series: [{ name: "ready", points: [[0, 5], [1, 7], [2, NaN], [3, 6]] }],
 * });
 * console.log(svg.startsWith("<?xml") && svg.trimEnd().endsWith("</svg>")); // true
 * ```
 */
export function lineChart(o: LineChartOptions): string {
  const f = frame(o);
  const out = [...head(o, f), ...grid(o, f), ...lines(o, f), ...(o.markers ? markers(o, f) : []), ...legend(o, f), "</svg>"];
  return out.join("\n") + "\n";
}

/** A chart's axes, layout and scales (lineChart's parts draw from it). */
interface Frame {
  W: number;
  H: number;
  logY: boolean;
  xa: Axis;
  ya: Axis;
  ra: Axis | false | undefined;
  left: number;
  right: number;
  top: number;
  bottom: number;
  rowH: number;
  perColumn: number;
  columnW: number;
  sx: (x: number) => number;
  syAxis: (v: number) => number;
  syRight: (v: number) => number;
  /** The y scale of a series' axis. */
  yOf: (s: Series) => (y: number) => number;
  /** A point drawn (finite; positive on a log axis unless on the right one). */
  ok: (p: [number, number], right?: boolean) => boolean;
}

const onRight = (s: Series) => s.axis === "right";

/** The data's extent, the axes over it, and the layout: the legend takes a right-hand column as wide as the longest name. */
function frame(o: LineChartOptions): Frame {
  const W = o.width ?? 720, H = o.height ?? 420;
  const logY = o.logY ?? false;
  if (!o.yRight && o.series.some(onRight)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot draw series '${o.series.find(onRight)!.name}' on the right axis as the chart has no 'yRight'`);
  }
  const ok = (p: [number, number], right = false) => Number.isFinite(p[0]) && Number.isFinite(p[1]) && (right || !logY || p[1] > 0);
  let xMin = Infinity, xMax = -Infinity, yMin = Infinity, yMax = -Infinity, rMin = Infinity, rMax = -Infinity;
  for (const s of o.series) {
    const right = onRight(s);
    for (const p of s.points) {
      if (!ok(p, right)) continue;
      xMin = Math.min(xMin, p[0]), xMax = Math.max(xMax, p[0]);
      if (right) rMin = Math.min(rMin, p[1]), rMax = Math.max(rMax, p[1]);
      else yMin = Math.min(yMin, p[1]), yMax = Math.max(yMax, p[1]);
    }
  }
  const xa = linearAxis(xMin, xMax, undefined, undefined, o.integerX ? 1 : 0);
  const ya = logY ? logAxis(yMin, yMax, o.yMin, o.yMax) : linearAxis(yMin, yMax, o.yMin, o.yMax);
  const ra = o.yRight && linearAxis(rMin, rMax, o.yRight.min, o.yRight.max);
  // Legend rows of 16 px, squeezed down to 10 px, then more columns.
  const left = 72, top = 40, bottom = H - 48;
  const n = o.series.length;
  const rowH = Math.max(10, Math.min(16, (bottom - top) / Math.max(1, n)));
  const perColumn = Math.max(1, Math.floor((bottom - top) / rowH));
  const columns = Math.ceil(n / perColumn);
  const longest = Math.max(0, ...o.series.map((s) => s.name.length));
  const columnW = Math.min(220, 34 + longest * (rowH < 14 ? 0.82 : 1) * CHAR_PX);
  // The right axis' tick labels and title sit between the plot area and the legend.
  const right = W - 16 - columns * columnW - (ra ? 64 : 0);
  const sx = (x: number) => left + ((x - xa.lo) / (xa.hi - xa.lo)) * (right - left);
  const sy = (y: number) => bottom - (((logY ? Math.log10(y) : y) - ya.lo) / (ya.hi - ya.lo)) * (bottom - top);
  const syAxis = (v: number) => bottom - ((v - ya.lo) / (ya.hi - ya.lo)) * (bottom - top);
  const syRight = (v: number) => bottom - ((v - (ra as Axis).lo) / ((ra as Axis).hi - (ra as Axis).lo)) * (bottom - top);
  return { W, H, logY, xa, ya, ra, left, right, top, bottom, rowH, perColumn, columnW, sx, syAxis, syRight, yOf: (s) => (onRight(s) ? syRight : sy), ok };
}

/** The document's start: size, title, background, the plot area's clip. */
function head(o: LineChartOptions, f: Frame): string[] {
  const { W, H, left, right, top, bottom } = f;
  // A long title shrinks (to 9 px at least) rather than running off the picture.
  const titlePx = Math.max(9, Math.min(15, Math.floor((W - 24) / (0.56 * Math.max(1, o.title.length)))));
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`,
    `<title>${esc(o.title)}</title>`,
    `<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`,
    `<defs><clipPath id="plot-clip"><rect x="${px(left)}" y="${px(top)}" width="${px(right - left)}" height="${px(bottom - top)}"/></clipPath></defs>`,
    `<text x="${px(W / 2)}" y="24" text-anchor="middle" font-size="${titlePx}" ${FONT}>${esc(o.title)}</text>`,
  ];
}

/** Grid lines, ticks and their labels on each axis, the plot area's frame, the axis titles. */
function grid(o: LineChartOptions, f: Frame): string[] {
  const { H, xa, ya, ra, left, right, top, bottom, sx, syAxis, syRight, logY } = f;
  const out: string[] = [];
  out.push(`<g class="x-ticks" font-size="11" ${FONT} text-anchor="middle" fill="#333333">`);
  for (const t of xa.ticks) {
    const x = px(sx(t));
    out.push(`<line x1="${x}" y1="${px(top)}" x2="${x}" y2="${px(bottom)}" stroke="#e6e6e6"/>`);
    out.push(`<text x="${x}" y="${px(bottom + 16)}" data-value="${t}">${esc(xa.label(t))}</text>`);
  }
  out.push("</g>");
  out.push(`<g class="y-ticks" font-size="11" ${FONT} text-anchor="end" fill="#333333">`);
  for (const t of ya.ticks) {
    const y = px(syAxis(t));
    const value = logY ? 10 ** t : t;
    out.push(`<line x1="${px(left)}" y1="${y}" x2="${px(right)}" y2="${y}" stroke="#e6e6e6"/>`);
    out.push(`<text x="${px(left - 6)}" y="${y}" dy="4" data-value="${value}">${esc(ya.label(t))}</text>`);
  }
  out.push("</g>");
  if (ra) {
    out.push(`<g class="y-right-ticks" font-size="11" ${FONT} text-anchor="start" fill="#333333">`);
    for (const t of ra.ticks) out.push(`<text x="${px(right + 6)}" y="${px(syRight(t))}" dy="4" data-value="${t}">${esc(ra.label(t))}</text>`);
    out.push("</g>");
    out.push(`<text transform="translate(${px(right + 54)} ${px((top + bottom) / 2)}) rotate(-90)" text-anchor="middle" font-size="12" ${FONT}>${esc(o.yRight!.label)}</text>`);
  }
  out.push(`<rect class="plot-area" x="${px(left)}" y="${px(top)}" width="${px(right - left)}" height="${px(bottom - top)}" fill="none" stroke="#333333"/>`);
  out.push(`<text x="${px((left + right) / 2)}" y="${H - 10}" text-anchor="middle" font-size="12" ${FONT}>${esc(o.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${px((top + bottom) / 2)}) rotate(-90)" text-anchor="middle" font-size="12" ${FONT}>${esc(o.yLabel)}</text>`);
  return out;
}

/** One path per series; a skipped point starts a new subpath. */
function lines(o: LineChartOptions, f: Frame): string[] {
  const out = ['<g class="series" clip-path="url(#plot-clip)" fill="none" stroke-width="1.5" stroke-linejoin="round">'];
  o.series.forEach((s, i) => {
    const runs: string[][] = [[]];
    const y = f.yOf(s);
    for (const p of s.points) {
      if (f.ok(p, onRight(s))) runs[runs.length - 1].push(`${px(f.sx(p[0]))},${px(y(p[1]))}`);
      else if (runs[runs.length - 1].length) runs.push([]);
    }
    // A lone point draws nothing as a line: a zero-length segment with round caps shows it.
    const d = runs.filter((r) => r.length).map((r) => `M${r.join("L")}${r.length === 1 ? `L${r[0]}` : ""}`).join(" ");
    if (d) out.push(`<path data-series="${esc(s.name)}" d="${d}" stroke="${colour(i)}" stroke-linecap="round"${dash(s)}/>`);
  });
  out.push("</g>");
  return out;
}

/** A dot per point, not clipped, so a point on the plot area's edge shows whole; a point outside fixed axes has none. */
function markers(o: LineChartOptions, f: Frame): string[] {
  const { left, right, top, bottom } = f;
  const inside = (x: number, y: number) => x >= left - 0.01 && x <= right + 0.01 && y >= top - 0.01 && y <= bottom + 0.01;
  const out = ['<g class="markers">'];
  o.series.forEach((s, i) => {
    const y = f.yOf(s);
    // Smaller where a series' points crowd (a dot per training step), 2.5 px where they are sparse.
    const r = px(Math.max(1, Math.min(2.5, (right - left) / Math.max(1, s.points.length) / 2)));
    for (const p of s.points) {
      if (!f.ok(p, onRight(s))) continue;
      const cx = f.sx(p[0]), cy = y(p[1]);
      if (inside(cx, cy)) out.push(`<circle data-series="${esc(s.name)}" cx="${px(cx)}" cy="${px(cy)}" r="${r}" fill="${colour(i)}"/>`);
    }
  });
  out.push("</g>");
  return out;
}

/** Each series' swatch and name, in columns right of the plot. */
function legend(o: LineChartOptions, f: Frame): string[] {
  if (!o.series.length) return [];
  const out = [`<g class="legend" font-size="${f.rowH < 14 ? 9 : 11}" ${FONT}>`];
  o.series.forEach((s, i) => {
    const y = f.top + 6 + (i % f.perColumn) * f.rowH, x = f.right + Math.floor(i / f.perColumn) * f.columnW;
    out.push(`<line x1="${px(x + 12)}" y1="${px(y)}" x2="${px(x + 28)}" y2="${px(y)}" stroke="${colour(i)}" stroke-width="3"${dash(s)}/>`);
    out.push(`<text x="${px(x + 32)}" y="${px(y)}" dy="4">${esc(s.name)}</text>`);
  });
  out.push("</g>");
  return out;
}
