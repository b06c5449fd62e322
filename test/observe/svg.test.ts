import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { lineChart, type Series } from "../../src/observe/svg.ts";

/** Tags open and close in order (a stack), self-closing ones excepted; returns the element names seen. */
function balanced(svg: string): string[] {
  const body = svg.replace(/^<\?xml[^>]*\?>\s*/, "");
  const stack: string[] = [];
  const seen: string[] = [];
  for (const m of body.matchAll(/<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)) {
    const [, close, name, , self] = m;
    if (close) assert.is(stack.pop(), name, `</${name}> closes <${stack[stack.length] ?? "nothing"}>`);
    else if (!self) stack.push(name), seen.push(name);
    else seen.push(name);
  }
  assert.equal(stack, [], "unclosed tags");
  // Nothing that looks like markup was left unmatched by the tag grammar above (e.g. a bare '<').
  const stripped = body.replace(/<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g, "");
  assert.not.match(stripped, /[<>]/, "stray < or > outside tags");
  assert.not.match(stripped, /&(?!amp;|lt;|gt;|quot;|apos;)/, "unescaped &");
  return seen;
}

function attr(tag: string, name: string): number {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  assert.ok(m, `no ${name} in ${tag}`);
  return Number(m![1]);
}

function plotArea(svg: string) {
  const tag = svg.match(/<rect class="plot-area"[^>]*>/)![0];
  const x = attr(tag, "x"), y = attr(tag, "y"), w = attr(tag, "width"), h = attr(tag, "height");
  return { left: x, top: y, right: x + w, bottom: y + h };
}

/** The [x, y] pixel pairs of each subpath of a series' path. */
function subpaths(svg: string, name: string): [number, number][][] {
  const m = svg.match(new RegExp(`<path data-series="${name}" d="([^"]*)"`));
  assert.ok(m, `no path for ${name}`);
  return m![1].trim().split(/\s*M/).filter(Boolean).map((run) => run.split("L").map((p) => p.split(",").map(Number) as [number, number]));
}

function ticks(svg: string, axis: "x" | "y"): number[] {
  const g = svg.match(new RegExp(`<g class="${axis}-ticks"[\\s\\S]*?</g>`))![0];
  return [...g.matchAll(/data-value="([^"]*)"/g)].map((m) => Number(m[1]));
}

test("a document: XML declaration, one <svg> root, balanced tags, a path per non-empty series", () => {
  const svg = lineChart({
    title: "t", xLabel: "x", yLabel: "y",
    series: [{ name: "a", points: [[0, 1], [1, 2]] }, { name: "empty", points: [] }, { name: "b", points: [[0, 3], [2, 1]] }],
  });
  assert.ok(svg.startsWith('<?xml version="1.0"'));
  const seen = balanced(svg);
  assert.is(seen[0], "svg");
  assert.is(seen.filter((n) => n === "svg").length, 1);
  assert.is(seen.filter((n) => n === "path").length, 2, "the empty series has no path");
  assert.match(svg, />empty</, "but it has a legend entry");
  assert.is(new Set([...svg.matchAll(/<path[^>]* stroke="([^"]*)"/g)].map((m) => m[1])).size, 2, "one colour per series");
});

test("points land on the right pixels: corners of fixed axes, the middle, and the plot area's size", () => {
  const svg = lineChart({
    title: "t", xLabel: "x", yLabel: "y", width: 800, height: 500, yMin: 0, yMax: 100,
    series: [{ name: "s", points: [[0, 0], [5, 50], [10, 100], [2.5, 75]] }],
  });
  const a = plotArea(svg);
  assert.is(attr(svg.match(/<svg[^>]*>/)![0], "width"), 800);
  assert.ok(a.right > a.left + 400 && a.bottom > a.top + 300, JSON.stringify(a));
  const [run] = subpaths(svg, "s");
  const near = (got: [number, number], want: [number, number]) =>
    assert.ok(Math.abs(got[0] - want[0]) <= 0.01 && Math.abs(got[1] - want[1]) <= 0.01, `${got} vs ${want}`);
  near(run[0], [a.left, a.bottom]); // x ticks 0…10 cover [0, 10] exactly
  near(run[1], [(a.left + a.right) / 2, (a.top + a.bottom) / 2]);
  near(run[2], [a.right, a.top]);
  near(run[3], [a.left + (a.right - a.left) / 4, a.bottom - 0.75 * (a.bottom - a.top)]);
});

test("logY: decades map linearly in log10; points ≤ 0 are skipped", () => {
  const svg = lineChart({ title: "t", xLabel: "x", yLabel: "y", logY: true, series: [{ name: "s", points: [[0, 1], [1, 10], [2, 0], [3, 100]] }] });
  const a = plotArea(svg);
  assert.equal(ticks(svg, "y"), [1, 10, 100]);
  const runs = subpaths(svg, "s");
  assert.is(runs.length, 2, "the 0 breaks the line");
  assert.ok(Math.abs(runs[0][1][1] - (a.top + a.bottom) / 2) < 0.01, "10 is halfway between 1 and 100");
  assert.ok(Math.abs(runs[1][0][1] - a.top) < 0.01);
});

test("NaN and ±Infinity are skipped and break the line; a lone point is still drawn", () => {
  const svg = lineChart({
    title: "t", xLabel: "x", yLabel: "y",
    series: [{ name: "s", points: [[0, 1], [1, 2], [2, NaN], [3, 4], [NaN, 5], [5, Infinity], [6, 1], [7, 2]] }],
  });
  const runs = subpaths(svg, "s");
  assert.is(runs.length, 3);
  assert.equal(runs.map((r) => r.length), [2, 2, 2]); // the lone [3, 4] is a zero-length segment
  assert.equal(runs[1][0], runs[1][1]);
  assert.not.match(svg, /NaN|Infinity/);
  balanced(svg);
});

test("text is XML-escaped: title, labels, series names", () => {
  const nasty = `<a href="x">&'</a>`;
  const svg = lineChart({ title: nasty, xLabel: nasty, yLabel: nasty, series: [{ name: nasty, points: [[0, 1], [1, 2]] }] });
  assert.not.ok(svg.includes(nasty));
  assert.ok(svg.includes("&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;"));
  balanced(svg);
});

test("empty input: no series, only empty series, one point, a constant — still a valid chart with a range", () => {
  for (const series of [[], [{ name: "e", points: [] }], [{ name: "p", points: [[3, 7]] }], [{ name: "c", points: [[0, 5], [9, 5]] }]] as Series[][]) {
    const svg = lineChart({ title: "t", xLabel: "x", yLabel: "y", series });
    balanced(svg);
    assert.not.match(svg, /NaN|Infinity/, JSON.stringify(series));
    assert.ok(ticks(svg, "x").length >= 2 && ticks(svg, "y").length >= 2, JSON.stringify(series));
  }
});

test("ticks are nice (1, 2 or 5 × 10^k apart), ascending, and cover the data, on random data", () => {
  const seed = freshSeed();
  const r = rng(seed);
  for (let k = 0; k < 200; k++) {
    const scale = 10 ** Math.floor(r() * 12 - 6), off = (r() - 0.5) * scale * 10 * (r() < 0.5 ? 1 : 0);
    const n = 1 + Math.floor(r() * 50);
    const points = Array.from({ length: n }, () => [off + r() * scale, off + (r() - 0.3) * scale] as [number, number]);
    const svg = lineChart({ title: "t", xLabel: "x", yLabel: "y", series: [{ name: "s", points }] });
    for (const [axis, i] of [["x", 0], ["y", 1]] as const) {
      const t = ticks(svg, axis);
      const vs = points.map((p) => p[i]);
      const lo = Math.min(...vs), hi = Math.max(...vs), step = t[1] - t[0];
      const why = `seed ${seed}, case ${k}, ${axis}: ticks ${t} for [${lo}, ${hi}]`;
      assert.ok(t.length >= 2 && t.length <= 12, why);
      assert.ok(t[0] <= lo + Math.abs(step) * 1e-6 && t[t.length - 1] >= hi - Math.abs(step) * 1e-6, why);
      const mant = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
      assert.ok([1, 2, 5, 10].some((m) => Math.abs(mant - m) < 1e-6), why);
      for (let j = 1; j < t.length; j++) assert.ok(Math.abs(t[j] - t[j - 1] - step) <= step * 1e-6, why);
    }
    // Every point of the path is inside the plot area (the axes cover it).
    const a = plotArea(svg);
    for (const run of subpaths(svg, "s")) {
      for (const [x, y] of run) assert.ok(x >= a.left - 0.01 && x <= a.right + 0.01 && y >= a.top - 0.01 && y <= a.bottom + 0.01, `seed ${seed}, case ${k}: ${x},${y}`);
    }
  }
});

test("many series get distinct colours and legend rows that stay inside the picture", () => {
  const series = Array.from({ length: 40 }, (_, i) => ({ name: `conn ${i}`, points: [[0, i], [1, i + 1]] as [number, number][] }));
  const svg = lineChart({ title: "t", xLabel: "x", yLabel: "y", series, height: 300 });
  const colours = [...svg.matchAll(/<path[^>]* stroke="([^"]*)"/g)].map((m) => m[1]);
  assert.is(new Set(colours).size, 40);
  const legendYs = [...svg.match(/<g class="legend"[\s\S]*?<\/g>/)![0].matchAll(/<text [^>]*y="([^"]*)"/g)].map((m) => Number(m[1]));
  assert.ok(Math.max(...legendYs) < 300, `legend row at ${Math.max(...legendYs)}`);
});
