/**
 * The live dashboard (src/observe/dashboard.ts): its Prometheus text checked by a strict parser,
 * its event stream, its bounded history, loopback by default, a port in use named, close()
 * letting the process exit; then a real `cassette read --dashboard` watched in headless
 * Chromium, whose figures must move during the read and end equal to the read's --json.
 * The screenshot is written to data/test-artifacts/dashboard-RUNTIME.png (data/ is git-ignored).
 */
import * as assert from "uvu/assert";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cassette, startCassette } from "../_support/cli.ts";
import { openPage } from "../_support/browser.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { expectError } from "../_support/expect.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { BATCH_BUCKETS_MS, type DashboardFrame, frameFromStats, HISTORY_CAP, startDashboard } from "../../src/observe/dashboard.ts";
import type { LoaderStats } from "../../src/observe/stats.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-dashboard-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ARTIFACTS = join(runtime.cwd(), "data", "test-artifacts");

// --- a strict reader of Prometheus' text format (0.0.4) ------------------------------------------

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: "counter" | "gauge" | "histogram";
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/**
 * Parses `text`, refusing what Prometheus' parser refuses and what the format's conventions
 * forbid: HELP and TYPE before a family's samples, once each; samples of a family only under
 * its own names; counters ending in `_total`; histograms with ascending `le` buckets that are
 * cumulative and end at +Inf, whose `_count` equals the +Inf bucket.
 */
function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  if (text === "") return families;
  assert.ok(text.endsWith("\n"), "the exposition ends with a newline");
  let current: Family | undefined;
  let help: { name: string; text: string } | undefined;
  const lines = text.slice(0, -1).split("\n");
  lines.forEach((line, i) => {
    const where = `line ${i + 1}: ${line}`;
    if (line.startsWith("# HELP ")) {
      const m = /^# HELP (\S+) (.*)$/.exec(line);
      assert.ok(m && NAME.test(m[1]), `bad HELP, ${where}`);
      assert.not.ok(families.has(m![1]), `a second HELP for ${m![1]}, ${where}`);
      help = { name: m![1], text: m![2] };
      return;
    }
    if (line.startsWith("# TYPE ")) {
      const m = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      assert.ok(m, `bad TYPE, ${where}`);
      assert.is(help?.name, m![1], `TYPE without its HELP just before, ${where}`);
      assert.ok(m![2] !== "summary" && m![2] !== "untyped", `unexpected type, ${where}`);
      if (m![2] === "counter") assert.ok(m![1].endsWith("_total"), `a counter not named *_total, ${where}`);
      current = { name: m![1], type: m![2] as Family["type"], help: help!.text, samples: [] };
      families.set(current.name, current);
      help = undefined;
      return;
    }
    assert.ok(!line.startsWith("#") && line.trim() !== "", `unexpected comment or blank line, ${where}`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line, ${where}`);
    const [, name, , labelText, valueText] = m!;
    assert.ok(current, `a sample before any TYPE, ${where}`);
    const own = current!.type === "histogram" ? [`${current!.name}_bucket`, `${current!.name}_sum`, `${current!.name}_count`] : [current!.name];
    assert.ok(own.includes(name), `sample ${name} is not of family ${current!.name}, ${where}`);
    const labels: Record<string, string> = {};
    if (labelText !== undefined) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y;
      let at = 0;
      while (at < labelText.length) {
        re.lastIndex = at;
        const l = re.exec(labelText);
        assert.ok(l, `bad label set at ${at}, ${where}`);
        assert.not.ok(l![1] in labels, `label ${l![1]} twice, ${where}`);
        labels[l![1]] = l![2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
        at = re.lastIndex;
      }
    }
    const value = valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : valueText === "NaN" ? NaN : Number(valueText);
    assert.ok(valueText === "NaN" || !Number.isNaN(value), `bad value, ${where}`);
    current!.samples.push({ name, labels, value });
  });
  assert.is(help, undefined, "a HELP without its TYPE at the end");
  for (const f of families.values()) {
    assert.ok(f.samples.length > 0, `family ${f.name} has no samples`);
    if (f.type !== "histogram") continue;
    const buckets = f.samples.filter((s) => s.name.endsWith("_bucket"));
    const les = buckets.map((b) => (b.labels.le === "+Inf" ? Infinity : Number(b.labels.le)));
    assert.is(les[les.length - 1], Infinity, `${f.name}: the last bucket is +Inf`);
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(les[i] > les[i - 1], `${f.name}: le ascending`);
      assert.ok(buckets[i].value >= buckets[i - 1].value, `${f.name}: buckets cumulative`);
    }
    assert.is(f.samples.find((s) => s.name.endsWith("_count"))!.value, buckets[buckets.length - 1].value, `${f.name}: _count is the +Inf bucket`);
    assert.ok(f.samples.some((s) => s.name.endsWith("_sum")), `${f.name}: has _sum`);
  }
  return families;
}

/** The value of the sample named `name` (a histogram's `_sum`, `_bucket`… too) with these labels. */
function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const samples = [...families.values()].flatMap((f) => f.samples).filter((s) => s.name === name);
  return samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

function fullFrame(i: number, batchTimesMs: number[]): DashboardFrame {
  return {
    seconds: i * 0.25, epoch: 1, step: i * 4, samples: i * 128, bytes: i * 100_000, imagesPerSec: 512, mbPerSec: 0.4,
    waitShare: 0.125, loss: { train: 1 / (i + 1), test: 1.5 / (i + 1) }, accuracy: { train: 0.5, test: 0.25 },
    batchMs: { p50: 12, p99: 80, max: 95 }, batchTimesMs,
    connections: { "127.0.0.1:9042": { bytes: i * 60_000, samples: i * 80 }, 'node "b"\\x': { bytes: i * 40_000, samples: i * 48 } },
    prefetch: 8 + i, maxOutstanding: 256, retries: i, hedged: 2 * i, hedgeWins: i, reasked: 3, skipped: 1, duplicates: 0,
    workers: 4, slowLane: 5, stolen: 2,
  };
}

/** Server-sent events from `url` as they come: { event, data } each. */
async function* sse(url: string, signal: AbortSignal): AsyncGenerator<{ event: string; data: unknown }> {
  const res = await fetch(url, { signal });
  assert.is(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value: chunk, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(chunk, { stream: true });
    for (let end = buf.indexOf("\n\n"); end >= 0; end = buf.indexOf("\n\n")) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data !== undefined) yield { event, data: JSON.parse(data) };
    }
  }
}

// --- the server -----------------------------------------------------------------------------------

test("/metrics is strict Prometheus text whose values are the latest frame's; /frame.json is that frame", async () => {
  const dash = await startDashboard();
  try {
    // Before any frame: valid and empty.
    assert.is(parsePrometheus(await (await fetch(`${dash.url}metrics`)).text()).size, 0);
    const times = [[0.5, 3, 7], [15, 150, 4000], [20_000, 1, 10]];
    for (let i = 1; i <= 3; i++) dash.update(fullFrame(i, times[i - 1]));
    const res = await fetch(`${dash.url}metrics`);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const m = parsePrometheus(await res.text());
    const f = fullFrame(3, []);
    for (const name of m.keys()) assert.match(name, /^cassette_/);
    assert.is(m.get("cassette_samples_total")?.type, "counter");
    assert.is(m.get("cassette_images_per_second")?.type, "gauge");
    assert.is(m.get("cassette_batch_seconds")?.type, "histogram");
    const want: [string, number, Record<string, string>?][] = [
      ["cassette_run_seconds", f.seconds], ["cassette_epoch", 1], ["cassette_steps_total", f.step], ["cassette_samples_total", f.samples],
      ["cassette_bytes_total", f.bytes!], ["cassette_images_per_second", 512], ["cassette_wait_share", 0.125],
      ["cassette_loss", 0.25, { split: "train" }], ["cassette_loss", 0.375, { split: "test" }],
      ["cassette_accuracy", 0.5, { split: "train" }], ["cassette_accuracy", 0.25, { split: "test" }],
      ["cassette_connection_bytes_total", 180_000, { connection: "127.0.0.1:9042" }],
      ["cassette_connection_bytes_total", 120_000, { connection: 'node "b"\\x' }], // escaped and read back
      ["cassette_connection_samples_total", 240, { connection: "127.0.0.1:9042" }],
      ["cassette_prefetch_batches", 11], ["cassette_max_outstanding_samples", 256], ["cassette_retries_total", 3],
      ["cassette_hedged_total", 6], ["cassette_hedge_wins_total", 3], ["cassette_reasked_total", 3], ["cassette_skipped_total", 1],
      ["cassette_workers", 4], ["cassette_slow_lane_total", 5], ["cassette_stolen_total", 2],
    ];
    for (const [name, v, labels] of want) assert.is(value(m, name, labels), v, `${name}${JSON.stringify(labels ?? {})}`);
    // The histogram holds every batch time pushed, in seconds: 9 of them.
    const all = times.flat();
    const le = (s: number) => value(m, "cassette_batch_seconds_bucket", { le: String(s) });
    assert.is(value(m, "cassette_batch_seconds_count"), all.length);
    assert.ok(Math.abs(value(m, "cassette_batch_seconds_sum")! - all.reduce((a, b) => a + b, 0) / 1000) < 1e-9);
    assert.is(le(0.001), 2); // 0.5, 1
    assert.is(le(0.01), 5); // + 3, 7, 10 (a bound is in its bucket)
    assert.is(le(5), 8); // all but 20 s
    assert.is(value(m, "cassette_batch_seconds_bucket", { le: "+Inf" }), 9);
    assert.is(m.get("cassette_batch_seconds")!.samples.filter((s) => s.name.endsWith("_bucket")).length, BATCH_BUCKETS_MS.length + 1);
    // The frame as served: the caller's figures with the derived ones.
    const served = await (await fetch(`${dash.url}frame.json`)).json();
    assert.is(served.samples, f.samples);
    assert.equal(served.connections, f.connections);
    assert.is(served.batchHistogram.count, 9);
    assert.is(served.batchTimesMs, undefined);
    // Since the oldest frame of the last second: 384 - 128 samples, 180 000 - 60 000 bytes over 0.75 - 0.25 s.
    assert.is(served.imagesPerSecNow, 512);
    assert.is(served.connectionsBytesPerSec["127.0.0.1:9042"], 240_000);
    // A read has no loss: the families are left out, not written empty.
    dash.update({ seconds: 1, step: 1, samples: 1, imagesPerSec: 1, waitShare: 0 });
    const read = parsePrometheus(await (await fetch(`${dash.url}metrics`)).text());
    assert.not.ok(read.has("cassette_loss") || read.has("cassette_accuracy") || read.has("cassette_workers"));
  } finally {
    await dash.close();
  }
});

test("frameFromStats takes a loader's figures; what the caller adds wins", () => {
  const stats: LoaderStats = {
    epochs: 2, batches: 10, samples: 1280, bytes: 1e6, seconds: 4, samplesPerSec: 320, mbPerSec: 0.25,
    batchMs: { p50: 10, p99: 30, max: 40 }, waitSeconds: 1, waitMs: { p50: 1, p99: 3, max: 4 }, errors: 2, retries: 3,
    hedged: 4, hedgeWins: 1, duplicates: 0, maxOutstanding: 256, reasked: 5, reaskWins: 2, readAhead: 0, readAheadDropped: 0,
    prefetch: 12, perConnection: { a: 600_000, b: 400_000 }, samplesPerConnection: { a: 700, b: 580 },
    prepare: { workers: 3, history: [], jobs: 9, slowLane: 6, stolen: 1, thresholdMs: 5, percentile: 75, jobMs: { p50: 1, p99: 2, max: 3 }, periods: [] },
  };
  const f = frameFromStats(stats, { epoch: 7, loss: { train: 0.5 } });
  assert.equal(f, {
    seconds: 4, epoch: 7, step: 10, samples: 1280, bytes: 1e6, imagesPerSec: 320, mbPerSec: 0.25, waitShare: 0.25,
    batchMs: { p50: 10, p99: 30, max: 40 }, connections: { a: { bytes: 600_000, samples: 700 }, b: { bytes: 400_000, samples: 580 } },
    prefetch: 12, maxOutstanding: 256, retries: 3, hedged: 4, hedgeWins: 1, reasked: 5, skipped: 2, duplicates: 0,
    workers: 3, slowLane: 6, stolen: 1, loss: { train: 0.5 },
  });
  assert.is(frameFromStats({ ...stats, seconds: 0, prepare: undefined }).waitShare, 0);
});

test("/events sends the history and the latest frame at once, then every frame", async () => {
  const dash = await startDashboard();
  const abort = new AbortController();
  try {
    dash.update(fullFrame(1, [5]));
    dash.update(fullFrame(2, [6]));
    const events = sse(`${dash.url}events`, abort.signal);
    const history = (await events.next()).value!;
    assert.is(history.event, "history");
    assert.equal((history.data as { samples: number }[]).map((p) => p.samples), [128, 256]);
    const first = (await events.next()).value!;
    assert.is(first.event, "frame");
    assert.is((first.data as { frame: { samples: number } }).frame.samples, 256);
    for (let i = 3; i <= 6; i++) dash.update(fullFrame(i, [i]));
    for (let i = 3; i <= 6; i++) {
      const e = (await events.next()).value!;
      const { frame, point } = e.data as { frame: { samples: number; batchHistogram: { count: number } }; point: { samples: number } };
      assert.is(e.event, "frame");
      assert.is(frame.samples, i * 128);
      assert.is(point.samples, i * 128);
      assert.is(frame.batchHistogram.count, i);
    }
    // Closing ends the stream after what was sent.
    dash.update({ ...fullFrame(7, []), done: true });
    await dash.close();
    const last = (await events.next()).value!;
    assert.is((last.data as { frame: { done: boolean } }).frame.done, true);
    assert.is((await events.next()).done, true);
  } finally {
    abort.abort();
    await dash.close();
  }
});

test("after 10 000 updates the history is capped and still spans the whole run", async () => {
  const dash = await startDashboard();
  try {
    for (let i = 0; i < 10_000; i++) dash.update({ seconds: i / 10, step: i, samples: i * 32, imagesPerSec: 320, waitShare: 0.1, batchTimesMs: [10] });
    const h = dash.history();
    assert.ok(h.length <= HISTORY_CAP && h.length >= HISTORY_CAP / 4, `history of ${h.length} points`);
    assert.is(h[0].seconds, 0);
    assert.ok(h[h.length - 1].seconds > 990, `the last point is at ${h[h.length - 1].seconds} s`);
    // Evenly spaced: the stride is the same everywhere.
    const gaps = new Set(h.slice(1).map((p, i) => p.step - h[i].step));
    assert.is(gaps.size, 1, `gaps ${[...gaps]}`);
    assert.is(dash.latest()!.step, 9_999);
    assert.is(dash.latest()!.batchHistogram.count, 10_000);
    // A page opened now gets the capped history, not 10 000 points.
    const abort = new AbortController();
    const events = sse(`${dash.url}events`, abort.signal);
    assert.is(((await events.next()).value!.data as unknown[]).length, h.length);
    abort.abort();
  } finally {
    await dash.close();
  }
});

test("serves loopback only by default; answers loopback names only; unknown paths are 404", async () => {
  const dash = await startDashboard({ title: "<b>t</b>" });
  try {
    assert.match(dash.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    assert.is(dash.url, `http://127.0.0.1:${dash.port}/`);
    const page = await (await fetch(dash.url)).text();
    assert.match(page, /<title>&lt;b&gt;t&lt;\/b&gt;<\/title>/);
    assert.not.match(page, /(src|href)="http/); // self-contained
    assert.is((await fetch(`http://localhost:${dash.port}/frame.json`)).status, 200);
    // Another of this machine's addresses is not listened on.
    const other = Object.values(networkInterfaces()).flat().find((a) => a && a.family === "IPv4" && !a.internal);
    if (other) {
      const err = await fetch(`http://${other.address}:${dash.port}/`).then(() => undefined, (e: Error) => e);
      assert.ok(err, `the dashboard answered on ${other.address}`);
    }
    const rebind = await fetchWithHost(dash.port, "evil.example");
    assert.is(rebind, 403);
    assert.is((await fetch(`${dash.url}nothing`)).status, 404);
    assert.is((await fetch(`${dash.url}metrics`, { method: "POST" })).status, 405);
  } finally {
    await dash.close();
  }
});

/** GET / with a Host header of our choosing (fetch will not set one): the status. */
async function fetchWithHost(port: number, host: string): Promise<number> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
    req.end();
  });
}

test("a port in use is a named error, in the API and in cassette read --dashboard PORT", async () => {
  const first = await startDashboard();
  try {
    await expectError(startDashboard({ port: first.port }), "ERR_INVALID_OPTION", new RegExp(`127\\.0\\.0\\.1:${first.port} as port ${first.port} is in use`));
    await expectError(startDashboard({ port: 70000 }), "ERR_INVALID_OPTION", /0…65535: current value is 70000/);
    const store = join(tmp, "busy.sqlite");
    (await fashionMnistStore(store, "fm", 5)).store.close();
    const r = cassette("read", "--store", `sqlite:${store}`, "--dataset", "fm", "--dashboard", String(first.port));
    assert.is(r.code, 2, r.err);
    assert.match(r.err, new RegExp(`port ${first.port} is in use`));
    assert.match(cassette("read", "--store", `sqlite:${store}`, "--dataset", "fm", "--dashboard-host", "::1").err, /--dashboard-host needs --dashboard/);
  } finally {
    await first.close();
  }
});

test("close() ends open event streams and idle connections, and the process exits on its own", async () => {
  const flag = join(tmp, "close-now");
  const [cmd, ...args] = runtime.scriptCommand("test/observe/dashboard_exit_child.ts", [flag]);
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (d) => {
        out += d;
        const m = /^(http:\S+)$/m.exec(out);
        if (m) resolve(m[1]);
      });
      exited.then(() => reject(new Error(`the child exited before serving: ${err}`)));
    });
    // A page's stream, and a keep-alive connection left idle, as a browser tab holds them.
    const abort = new AbortController();
    const events = sse(`${url}events`, abort.signal);
    assert.is((await events.next()).value!.event, "history");
    await (await fetch(`${url}frame.json`)).text();
    writeFileSync(flag, "");
    const t0 = runtime.now();
    // The stream ends (the server closed it: this client would have waited for ever).
    for (let e = await events.next(); !e.done; e = await events.next());
    const code = await Promise.race([exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 5000))]);
    assert.is(code, 0, `the process did not exit by itself within 5 s of close() (${code}); stdout: ${out} stderr: ${err}`);
    assert.match(out, /closed in \d+ ms/);
    assert.ok(runtime.now() - t0 < 5000);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
});

// --- a real read, watched in a real browser ---------------------------------------------------------

test("cassette read --dashboard: Chromium shows figures that move during the read and end equal to its --json", async () => {
  const store = join(tmp, "fm.sqlite");
  // 200 samples (Node's ingest is slow: ~2 s for these), read twice in batches of 8, each
  // followed by a 60 ms step: 50 batches, about 3 s. The browser starts meanwhile (about a
  // second), so that it watches the read from its start.
  const [page] = await Promise.all([
    openPage(undefined, { width: 1280, height: 1000 }),
    fashionMnistStore(store, "fm", 100).then(({ store }) => store.close()),
  ]);
  const child = startCassette("read", "--store", `sqlite:${store}`, "--dataset", "fm", "--epochs", "2", "--batch", "8", "--step-ms", "60", "--json", "--dashboard");
  let out = "", err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  let ended = false;
  exited.then(() => (ended = true));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const m = /^dashboard: (http:\S+)$/m.exec(err);
        if (m) resolve(m[1]);
        else if (ended) reject(new Error(`cassette read exited without serving a dashboard:\n${err}`));
      }, 20);
      exited.finally(() => setTimeout(() => clearInterval(timer), 100));
    });
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    await page.goto(url);
    // While the read runs, the page's figures move.
    const seen: { samples: number; rate: number | null; prefetch: number | null }[] = [];
    while (!ended) {
      const m = await page.metrics();
      if (m.samples !== null && (seen.length === 0 || m.samples !== seen[seen.length - 1].samples)) {
        seen.push({ samples: m.samples, rate: m["images-per-sec-now"], prefetch: m.prefetch });
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    assert.is(await exited, 0, err);
    const report = JSON.parse(out);
    const during = seen.filter((s) => s.samples < report.samples);
    assert.ok(during.length >= 3, `the page showed ${during.length} different sample counts during the read (${JSON.stringify(seen)})`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].samples > seen[i - 1].samples, "samples only grow");
    assert.ok(during.some((s) => (s.rate ?? 0) > 0), "a rate above zero during the read");
    assert.ok(during.filter((s) => s.samples > 0).every((s) => (s.prefetch ?? 0) > 0), "the window's depth shown once batches come");
    // The last frame reached the page before the server closed: it shows the read's figures.
    await page.waitFor(`document.getElementById("status").dataset.status === "finished"`, 5000);
    const m = await page.metrics();
    const expect: [string, number][] = [
      ["samples", report.samples], ["step", report.samples / 8], ["seconds", report.seconds],
      ["images-per-sec", report.samplesPerSec], ["mb-per-sec", report.mbPerSec],
      ["batch-p50", report.batchMs.p50], ["batch-p99", report.batchMs.p99], ["batch-max", report.batchMs.max],
      ["prefetch", report.prefetch], ["max-outstanding", report.maxOutstanding],
      ["retries", report.retries], ["hedged", report.hedged], ["hedge-wins", report.hedgeWins], ["skipped", report.errors],
      ["workers", report.workers], ["epoch", 1],
    ];
    for (const [name, want] of expect) assert.is(m[name], want, `${name} on the page (${m[name]}) and in --json (${want})`);
    assert.is(report.samples, 400);
    // What the tiles show as text, not only their values.
    assert.is(await page.text("m-samples"), "400");
    const svg = await page.evaluate<number>(`document.querySelectorAll("#chart-histogram rect").length`);
    assert.ok(svg > 0, "the batch-time histogram has bars");
    // A read has no loss or accuracy: their four tiles and two charts are hidden, not empty.
    assert.equal(await page.evaluate(`[...document.querySelectorAll("[data-needs]")].map((e) => e.hidden)`), [true, true, true, true, true, true]);
    // Each line's legend has a swatch of the line's colour.
    assert.equal(await page.evaluate(`[...document.querySelectorAll("#chart-rate rect.swatch")].map((r) => r.getAttribute("fill"))`), ["#1f77b4"]);
    // "MB/s (now)" is the sum of the per-connection bars (the run's MB/s is another figure, named so).
    const bars = await page.evaluate<number[]>(`[...document.querySelectorAll("#chart-connections rect[data-value]")].map((r) => Number(r.dataset.value))`);
    assert.ok(bars.length > 0, "per-connection bars");
    assert.ok(Math.abs(m["mb-per-sec-now"]! - bars.reduce((a, b) => a + b, 0)) < 1e-9, `MB/s (now) ${m["mb-per-sec-now"]}, bars ${bars}`);
    assert.match((await page.text("m-mb-per-sec"))!, /./);
    assert.match(await page.evaluate<string>(`document.querySelector("#chart-connections").previousElementSibling.textContent`), /per connection over the last second \(their sum is MB\/s \(now\)\)/);
    const bytes = await page.screenshot(join(ARTIFACTS, `dashboard-${runtime.name}.png`));
    assert.ok(bytes > 10_000, `a screenshot of ${bytes} bytes`);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    await page.close();
  }
}, { timeoutMs: 60_000 });
