/**
 * A long fuzz run of the JPEG and PNG decoders, as a benchmark: how many hostile inputs a
 * second they turn away (or decode), and that none crashes or hangs. The inputs are the fuzz
 * tests' mutations (test/_support/jpeg_mutate.ts: byte mutations and structure-aware ones, wrong
 * segment lengths, bad DHT/DQT, odd sampling, out-of-range Ss/Se/Ah/Al, restarts, cut scans;
 * test/_support/png_mutate.ts), decoded through the tests' loop (test/_support/fuzz.ts) in
 * one worker, with decode, decodeInto at an offset and (JPEG) coefficients.
 *
 *   node_modules/.bin/bun bench/fuzz.bench.ts --quick                 # 100 000 inputs
 *   nice -n 19 node_modules/.bin/bun bench/fuzz.bench.ts --inputs 10000000 --minutes 60
 *
 * A crash is any throw other than the decoder's named error (JpegError, PngError) with a known
 * reason and an offset inside the input, or a result of the wrong size; a hang is an input over
 * the per-input bound (--max-ms, timed again three times to rule out the scheduler), or one that
 * never returns (the worker is then replaced after --stall-s). Each is written to --out with its
 * seed and index; `--seed S --first I --inputs I+1` replays it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { benchArgs } from "./_lib/args.ts";
import { runtime, type WorkerHandle } from "../runtime-adapters/index.ts";
import { jpegBytes } from "../test/decode/_fixtures.ts";
import { rng } from "../test/_support/random.ts";
import { PngWorkshop } from "../test/_support/png_encoders.ts";
import { pngSeedFiles } from "../test/_support/png_mutate.ts";
import { type Format, makeInput } from "./fuzz/inputs.ts";

const args = benchArgs({
  program: "bench/fuzz.bench.ts",
  usage: `usage: bun bench/fuzz.bench.ts [--quick] [--inputs N] [--seed S] [--json] [options]

  Fuzzes the JPEG and PNG decoders with seeded mutations of small files (byte and
  structure-aware) in one worker; prints inputs, inputs/s, crashes, hangs and the named
  errors by reason. Exit status 1 when anything crashed or hung.

  --quick          100 000 inputs
  --inputs N       inputs to run (default 10 000 000)
  --first I        start at input I (to replay one: --first I --inputs I+1)
  --seed S         the run's seed (default: a fresh one, printed)
  --minutes M      stop after M minutes, whatever is left
  --format F       jpeg, png or both (default both: one input in five is PNG)
  --max-ms MS      per-input time bound (default 250)
  --stall-s S      an input still running after S seconds is a hang: the worker is replaced (default 20)
  --out DIR        where crashing and hanging inputs go (default .tmp/fuzz-finds)
  --json           one JSON object on stdout at the end instead of the table`,
  valued: ["inputs", "first", "seed", "minutes", "format", "max-ms", "stall-s", "out"],
  flags: ["quick", "json"],
});
const json = args.has("json");
const total = args.int("inputs", args.has("quick") ? 100_000 : 10_000_000);
const first = args.int("first", 0, 0);
const seed = args.int("seed", (Math.random() * 2 ** 31) >>> 0, 0);
const minutes = args.num("minutes", Infinity);
const formatArg = args.str("format", "both");
if (!["jpeg", "png", "both"].includes(formatArg)) args.fail(`--format must be jpeg, png or both: current value is ${formatArg}`);
const formats: Format[] = formatArg === "both" ? ["jpeg", "png"] : [formatArg as Format];
const maxMs = args.num("max-ms", 250);
const stallMs = args.num("stall-s", 20) * 1000;
const out = args.str("out", fileURLToPath(new URL("../.tmp/fuzz-finds/", import.meta.url)));
const log = (s: string) => (json ? console.error(s) : console.log(s));

// Seed files: the JPEG fuzz test's, and a few more codings (4:1:1, 4:4:0, YCCK, restarts each
// MCU, progressive 4:4:4); PNGs of every colour type from pypng, as the PNG fuzz test makes.
const JPEG_SEEDS = [
  "px17x33_420_prog.jpg", "px17x33_422_q90.jpg", "px7x9_444_q90.jpg", "px1_420_q90.jpg", "fmnist_gray_q90.jpg",
  "flower_420_q75.jpg", "flower_422_prog_rst.jpg", "china_444_rst3b.jpg", "china_gray_prog.jpg", "china_420_arith.jpg",
  "px7x9_420_q90.jpg", "china_411_q90.jpg", "china_440_q90.jpg", "china_ycck_q90.jpg", "china_420_rst1.jpg", "china_444_prog.jpg",
];
const jpegs = JPEG_SEEDS.map(jpegBytes);
let pngs: Uint8Array[] = [];
if (formats.includes("png")) {
  const shop = new PngWorkshop();
  try {
    pngs = pngSeedFiles(shop, rng(seed)).map((s) => s.bytes);
  } finally {
    shop.close();
  }
}

interface Find { i: number; kind: "crash" | "hang"; format: string; detail: string; file: string }
const reasons = { jpeg: new Map<string, number>(), png: new Map<string, number>() };
const totals = { inputs: 0, images: 0, errors: 0, crashes: 0, hangs: 0, slowerReruns: 0, slowest: 0, slowestAt: -1 };
const finds: Find[] = [];
const progress = new Int32Array(new SharedArrayBuffer(4));
const t0 = runtime.now();
const deadline = t0 + minutes * 60_000;

function write(i: number, kind: "crash" | "hang", format: string, bytes: Uint8Array, about: object): string {
  mkdirSync(out, { recursive: true });
  const base = `${out}/${format}-${kind}-seed${seed}-i${i}`;
  writeFileSync(`${base}.${format === "jpeg" ? "jpg" : "png"}`, bytes);
  writeFileSync(`${base}.json`, JSON.stringify({ seed, i, kind, format, replay: `bun bench/fuzz.bench.ts --seed ${seed} --first ${i} --inputs ${i + 1} --format ${format}`, ...about }, null, 2));
  return base;
}

/** Runs inputs [from, end) in a fresh worker; resolves with where it stopped (end, or past a stalled input). */
function runWorker(from: number, end: number): Promise<number> {
  return new Promise((resolve) => {
    const w: WorkerHandle = runtime.spawnWorker(new URL("./fuzz/worker.ts", import.meta.url));
    let last = -1, since = runtime.now(), done = false;
    const finish = (at: number) => {
      if (done) return;
      done = true;
      clearInterval(watch);
      w.terminate();
      resolve(at);
    };
    const watch = setInterval(() => {
      const now = runtime.now();
      const at = Atomics.load(progress, 0);
      if (at !== last) return void ((last = at), (since = now));
      if (now - since < stallMs) return;
      // The worker has been on input `at` for stallMs: a hang. Write it out, go on past it.
      const inp = makeInput(seed, at, formats, jpegs, pngs);
      const file = write(at, "hang", inp.format, inp.bytes, { detail: `no answer after ${stallMs} ms`, did: inp.did, call: inp.call, options: inp.options, offset: inp.offset });
      totals.hangs++;
      totals.inputs++;
      finds.push({ i: at, kind: "hang", format: inp.format, detail: `no answer after ${stallMs} ms`, file });
      log(`  HANG at input ${at} (${inp.format}, ${inp.did}): written to ${file}`);
      finish(at + 1);
    }, 1000);
    w.onerror = (e) => {
      log(`  worker died: ${e?.message ?? e}`);
      finish(Math.max(from, Atomics.load(progress, 0) + 1));
    };
    w.onmessage = ({ data }) => {
      const m = data as Record<string, any>;
      if (m.t === "ready") w.postMessage({ t: "run", first: from, end });
      else if (m.t === "slice") {
        const { tally, format } = m;
        totals.inputs += tally.images + tally.errors + tally.crashes;
        totals.images += tally.images;
        totals.errors += tally.errors;
        if (tally.slowest > totals.slowest) (totals.slowest = tally.slowest), (totals.slowestAt = tally.slowestAt);
        totals.slowerReruns += tally.slowOnce;
        for (const [r, n] of tally.reasons as [string, number][]) reasons[format as Format].set(r, (reasons[format as Format].get(r) ?? 0) + n);
        if (runtime.now() > deadline) finish(m.end);
      } else if (m.t === "failure") {
        const file = write(m.i, m.kind, m.format, m.bytes, { detail: m.detail, did: m.did, call: m.call, options: m.options, offset: m.offset });
        totals[m.kind === "crash" ? "crashes" : "hangs"]++;
        finds.push({ i: m.i, kind: m.kind, format: m.format, detail: m.detail.split("\n")[0], file });
        log(`  ${m.kind.toUpperCase()} at input ${m.i} (${m.format}, ${m.did}, ${m.call}): ${m.detail.split("\n")[0]}\n    written to ${file}`);
      } else if (m.t === "finished") finish(end);
    };
    w.postMessage({ t: "setup", seed, formats, jpegs, pngs, maxMs, progress });
  });
}

log(`fuzz: seed ${seed}, inputs ${first} … ${total - 1}, ${formats.join(" + ")}, bound ${maxMs} ms an input${Number.isFinite(minutes) ? `, at most ${minutes} min` : ""}`);
const report = setInterval(() => {
  const s = (runtime.now() - t0) / 1000;
  log(`  ${totals.inputs} inputs in ${s.toFixed(0)} s (${(totals.inputs / s).toFixed(0)}/s), ${totals.crashes} crashes, ${totals.hangs} hangs`);
}, 60_000);
let at = first;
while (at < total && runtime.now() < deadline) at = await runWorker(at, total);
clearInterval(report);

const seconds = (runtime.now() - t0) / 1000;
const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
const result = {
  seed, first, last: at - 1, inputs: totals.inputs, seconds: Math.round(seconds), rate: Math.round(totals.inputs / seconds),
  images: totals.images, errors: totals.errors, crashes: totals.crashes, hangs: totals.hangs,
  slowestMs: Math.round(totals.slowest * 10) / 10, slowestInput: totals.slowestAt, slowOnceNotAgain: totals.slowerReruns,
  reasons: { jpeg: Object.fromEntries(sorted(reasons.jpeg)), png: Object.fromEntries(sorted(reasons.png)) }, finds,
};
if (json) console.log(JSON.stringify(result));
else {
  console.log(`\n${result.inputs} inputs in ${result.seconds} s: ${result.rate} inputs/s; ${result.images} images, ${result.errors} named errors; ${result.crashes} crashes, ${result.hangs} hangs (bound ${maxMs} ms; slowest ${result.slowestMs} ms, input ${result.slowestInput}; ${result.slowOnceNotAgain} over it once, not on rerun)`);
  for (const f of formats) {
    console.log(`\n${f} errors by reason:`);
    const all = [...reasons[f].values()].reduce((a, b) => a + b, 0);
    for (const [r, n] of sorted(reasons[f])) console.log(`  ${r.padEnd(20)} ${String(n).padStart(10)}  ${(n / Math.max(1, all) * 100).toFixed(1).padStart(5)} %`);
  }
  for (const f of finds) console.log(`${f.kind} ${f.format} input ${f.i}: ${f.detail} → ${f.file}`);
}
runtime.exit(result.crashes + result.hangs > 0 ? 1 : 0);
