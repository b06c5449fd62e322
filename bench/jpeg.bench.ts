/**
 * How fast does cassette's wasm JPEG decoder turn JPEG into RGB pixels, next to its peers, on
 * the same inputs in the same run, one thread? And how much do two decode workers give over one?
 *
 *   node_modules/.bin/bun bench/jpeg.bench.ts            # full: 11 rounds, every group
 *   node_modules/.bin/bun bench/jpeg.bench.ts --quick    # 3 rounds, fewer images
 *
 * Peers: jpeg-js (pure JS), @jsquash/jpeg (MozJPEG in wasm), sharp (libvips, native,
 * concurrency 1), and libjpeg-turbo with SIMD called in-process from a C loop
 * (bench/jpeg/turbo_loop.c, built here with cc against Debian's libjpeg62-turbo-dev): the
 * limit on this CPU. Inputs come from bench/jpeg/make_inputs.sh (real photos, see there).
 * Figures: megapixels of output per second, fastest round (the median beside it).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { compare, printTable, type Contender, type Row } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";
import { runTurbo } from "./_lib/turbo.ts";
import { makeInputs } from "./_lib/inputs.ts";
import { createJpegDecoder } from "../src/decode/jpeg.ts";
import { createDecodePool } from "../src/decode/pool.ts";
import { runtime } from "../runtime-adapters/index.ts";

const args = benchArgs({
  program: "bench/jpeg.bench.ts",
  usage: `usage: bun bench/jpeg.bench.ts [--quick] [--only GROUP] [--no-pool] [--peers LIST]

  Decodes four groups of JPEGs (224×224 crops, large 4:2:0 photos, progressive, grey) with
  cassette, jpeg-js, @jsquash/jpeg, sharp and libjpeg-turbo (C), interleaved, one thread, and
  prints Mpx/s with ratios; then the worker pool with 1 and 2 workers.

  --quick       3 rounds instead of 11, 60 crops instead of 200
  --only GROUP  crops | large | progressive | gray | grey-out | into | pool
                (into: decode() against decodeInto() into one reused buffer, paired round by
                round in process CPU time, on the crops, the large photos and Fashion-MNIST)
  --no-pool     skip the worker-pool comparison
  --peers LIST  the JS/wasm/native-module peers to run beside cassette: any of jpeg-js,jsquash,sharp,
                or none (default all three; libjpeg-turbo (C) runs whenever cc and libjpeg are there).
                A peer whose package is not installed is skipped with a line saying so.`,
  valued: ["only", "peers"],
  flags: ["quick", "no-pool"],
});
const quick = args.has("quick");
const only = args.str("only");
const ONLY = ["crops", "large", "progressive", "gray", "grey-out", "into", "pool"];
if (only !== undefined && !ONLY.includes(only)) args.fail(`--only must be one of ${ONLY.join(", ")}: current value is ${only}`);
const ROUNDS = quick ? 3 : 11;

const HERE = fileURLToPath(new URL("./jpeg/", import.meta.url));
makeInputs("jpeg.bench.ts", HERE + "make_inputs.sh",
  "a first run fetches photos from two Debian packages (apt-get download, into ~/.cache/cassette/jpeg-sources), " +
  "which needs the network: run `bash bench/jpeg/make_inputs.sh` once where there is one");

function files(group: string): string[] {
  const dir = `${HERE}data/${group}/`;
  const all = readdirSync(dir).filter((f) => f.endsWith(".jpg")).sort().map((f) => dir + f);
  return quick && group === "crops" ? all.filter((_, i) => i % 10 < 3) : all;
}

// ─── peers ────────────────────────────────────────────────────────────────────────────────────

const cassette = await createJpegDecoder();
/** decodeInto's target, reused: as large as the largest image of the run. */
let target = new Uint8Array(0);
function intoAll(inputs: Uint8Array[]): void {
  for (const b of inputs) cassette.decodeInto(b, target, 0);
}
function sizeTarget(inputs: Uint8Array[]): void {
  let most = 0;
  for (const b of inputs) {
    const img = cassette.decode(b);
    most = Math.max(most, img.data.length);
  }
  if (most > target.length) target = new Uint8Array(most);
}

/** Megapixels of output in one pass over `inputs` (each contender's work per round). */
function megapixels(inputs: Uint8Array[]): number {
  let mpx = 0;
  for (const b of inputs) {
    const img = cassette.decode(b);
    mpx += (img.width * img.height) / 1e6;
  }
  return mpx;
}

const PEERS = ["jpeg-js", "jsquash", "sharp"];
const peersArg = args.str("peers", PEERS.join(","));
const wanted = peersArg === "none" ? [] : peersArg.split(",");
for (const p of wanted) if (!PEERS.includes(p)) args.fail(`--peers takes any of ${PEERS.join(", ")} or none: ${p} is not one (value ${peersArg})`);

/** Loads a peer's package, or says why it is skipped (the lent GPU machine carries none of them). */
async function peer<T>(name: string, load: () => Promise<T>): Promise<T | undefined> {
  if (!wanted.includes(name)) return undefined;
  try {
    return await load();
  } catch (e) {
    console.log(`${name} skipped: its package does not load here (${(e as Error).message.split("\n")[0]})`);
    return undefined;
  }
}
const jpegjs = await peer("jpeg-js", async () => (await import("jpeg-js")).default);
const jsquash = await peer("jsquash", async () => {
  const m = await import("@jsquash/jpeg/decode.js");
  const wasm = new URL("../node_modules/@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm", import.meta.url);
  await m.init(await WebAssembly.compile(readFileSync(fileURLToPath(wasm))));
  return m;
});
const sharp = await peer("sharp", async () => {
  const s = (await import("sharp")).default;
  s.concurrency(1);
  s.cache(false);
  return s;
});

// ─── single-thread groups ─────────────────────────────────────────────────────────────────────

const GROUPS: Array<[string, string]> = [
  ["crops", "200 × 224×224 q90 4:2:0 crops of real photos"],
  ["large", "large photos (4.1 and 8.2 Mpx), q90 4:2:0"],
  ["progressive", "progressive (4.1 Mpx photos, q90 4:2:0)"],
  ["gray", "greyscale (4.1 Mpx photos, q90)"],
];

const summary: Array<{ group: string; rows: Row[] }> = [];
for (const [group, title] of GROUPS) {
  if (only && only !== group) continue;
  const list = files(group);
  const inputs = list.map((f) => new Uint8Array(readFileSync(f)));
  const mpx = megapixels(inputs);
  sizeTarget(inputs);
  const contenders: Contender[] = [
    { name: "cassette (wasm)", run: () => { for (const b of inputs) cassette.decode(b); }, work: mpx, baseline: true },
    { name: "cassette into", run: () => intoAll(inputs), work: mpx },
  ];
  if (jpegjs) contenders.push({ name: "jpeg-js", run: () => { for (const b of inputs) jpegjs.decode(b, { useTArray: true, formatAsRGBA: false, maxMemoryUsageInMB: 4096 }); }, work: mpx });
  if (jsquash) contenders.push({ name: "@jsquash/jpeg", run: async () => { for (const b of inputs) await jsquash.default(b.buffer as ArrayBuffer); }, work: mpx });
  if (sharp) contenders.push({ name: "sharp", run: async () => { for (const b of inputs) await sharp(b).raw().toBuffer(); }, work: mpx });
  const rows = await compare(`${title}: ${inputs.length} files, ${mpx.toFixed(1)} Mpx a round`, { rounds: ROUNDS, unit: "Mpx/s" }, contenders);
  const t = runTurbo(list, ROUNDS);
  if (t) {
    const base = rows.find((r) => r.name === "cassette (wasm)")!;
    rows.push({ name: "libjpeg-turbo (C)", best: t.best, median: t.median, spread: t.spread, ratio: t.best / base.best });
    rows.sort((a, b) => b.best - a.best);
    printTable(`${title}, with libjpeg-turbo (C, timed inside its own process)`, "Mpx/s", rows, "cassette (wasm)", ROUNDS);
  }
  summary.push({ group, rows });
  // A decoder's wasm memory only grows: this is the high-water mark of every group so far.
  console.log(`  cassette's decoder holds ${(cassette.memoryBytes / 2 ** 20).toFixed(1)} MiB of wasm memory after this group`);
}

// ─── grey out ─────────────────────────────────────────────────────────────────────────────────
// A model that takes grey input (train.ts's Fashion-MNIST models) needs one channel: `grey: true`
// keeps a YCbCr file's luma and skips the chroma's IDCT, upsampling and colour conversion.
// Peers: the same decoder to RGB, and libjpeg-turbo asked for JCS_GRAYSCALE (djpeg -grayscale).

if (!only || only === "grey-out") {
  const sets: Array<[string, string[]]> = [["200 × 224×224 q90 4:2:0 crops", files("crops")]];
  // Fashion-MNIST as ingest stores it, when Debian's dataset-fashion-mnist is installed.
  const fm = await fashionMnist();
  if (fm.length) sets.push(["2000 Fashion-MNIST 28×28 as ingest stores them (3 equal components, jpeg-js q90)", fm]);
  for (const [title, list] of sets) {
    const inputs = list.map((f) => new Uint8Array(readFileSync(f)));
    const mpx = megapixels(inputs);
    const rows = await compare(`grey out, ${title}: ${mpx.toFixed(2)} Mpx a round`, { rounds: ROUNDS, unit: "Mpx/s" }, [
      { name: "cassette, grey: true", run: () => { for (const b of inputs) cassette.decode(b, { grey: true }); }, work: mpx, baseline: true },
      { name: "cassette, RGB", run: () => { for (const b of inputs) cassette.decode(b); }, work: mpx },
    ]);
    const t = runTurbo(list, ROUNDS, true);
    if (t) {
      const base = rows.find((r) => r.name === "cassette, grey: true")!;
      rows.push({ name: "libjpeg-turbo (C), grey", best: t.best, median: t.median, spread: t.spread, ratio: t.best / base.best });
      rows.sort((a, b) => b.best - a.best);
      printTable(`grey out, ${title}, with libjpeg-turbo (C, JCS_GRAYSCALE, timed inside its own process)`, "Mpx/s", rows, "cassette, grey: true", ROUNDS);
    }
  }
}

// ─── decode vs decodeInto ─────────────────────────────────────────────────────────────────────
// What a fresh array per image costs: decode() against decodeInto() into one buffer reused
// (a packet, a batch), alternating round by round in one process, timed in process CPU time
// (the machine is shared: wall time moves more); the paired ratio per round, median and quartiles.

/** Fashion-MNIST as ingest stores it (three equal components, jpeg-js q90); [] without Debian's dataset-fashion-mnist. */
async function fashionMnist(): Promise<string[]> {
  const idx = "/usr/share/datasets/fashion-mnist/";
  if (!existsSync(idx)) return [];
  const { readIdxDataset } = await import("../src/dataset/idx.ts");
  const { encodeGrey } = await import("../src/dataset/ingest.ts");
  const train = (await readIdxDataset(idx))[0];
  const dir = `${HERE}data/fmnist/`;
  mkdirSync(dir, { recursive: true });
  const names: string[] = [];
  for (let i = 0; i < 2000; i++) {
    const name = `${dir}${String(i).padStart(4, "0")}.jpg`;
    if (!existsSync(name)) writeFileSync(name, encodeGrey(train.images.subarray(i * 784, (i + 1) * 784), 28, 28, 90));
    names.push(name);
  }
  return names;
}

if (only === "into") {
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const sets: Array<[string, string[], number]> = [
    ["224×224 crops", files("crops"), 1], ["large photos", files("large"), 1], ["progressive", files("progressive"), 1],
    ["Fashion-MNIST 28×28", await fashionMnist(), 4],
  ];
  const rounds = quick ? 9 : 31;
  for (const [title, list, reps] of sets) {
    if (!list.length) continue;
    const inputs = list.map((f) => new Uint8Array(readFileSync(f)));
    sizeTarget(inputs);
    const mpx = megapixels(inputs) * reps;
    const a = () => { for (let r = 0; r < reps; r++) for (const b of inputs) cassette.decode(b); };
    const b = () => { for (let r = 0; r < reps; r++) intoAll(inputs); };
    a(), b(); // warm
    const ratios: number[] = [], ta: number[] = [], tb: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so neither always follows the other's garbage.
      const order = r % 2 === 0 ? [a, b] : [b, a];
      const t: number[] = [];
      for (const f of order) {
        const t0 = cpuMs();
        f();
        t.push(cpuMs() - t0);
      }
      const [da, db] = r % 2 === 0 ? t : [t[1], t[0]];
      ta.push(da), tb.push(db), ratios.push(da / db);
    }
    const q = (xs: number[], p: number) => xs.slice().sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
    console.log(`\ndecode vs decodeInto, ${title}: ${inputs.length} files × ${reps}, ${mpx.toFixed(1)} Mpx a round, ${rounds} rounds (process CPU time)`);
    console.log(`  decode():      best ${(mpx / (q(ta, 0) / 1000)).toFixed(1)} Mpx/s, median ${(mpx / (q(ta, 0.5) / 1000)).toFixed(1)}`);
    console.log(`  decodeInto():  best ${(mpx / (q(tb, 0) / 1000)).toFixed(1)} Mpx/s, median ${(mpx / (q(tb, 0.5) / 1000)).toFixed(1)}`);
    console.log(`  speed-up of decodeInto (decode time ÷ decodeInto time, per round): median ${q(ratios, 0.5).toFixed(3)}× (quartiles ${q(ratios, 0.25).toFixed(3)}–${q(ratios, 0.75).toFixed(3)})`);
  }
}

// ─── worker pool ──────────────────────────────────────────────────────────────────────────────

if (!args.has("no-pool") && (!only || only === "pool")) {
  const inputs = files("crops").map((f) => new Uint8Array(readFileSync(f)));
  const mpx = megapixels(inputs);
  const pools = [await createDecodePool({ workers: 1 }), await createDecodePool({ workers: 2 })];
  // Each round sends copies: the pool transfers (detaches) what it is given.
  const runPool = async (i: number) => {
    for await (const r of pools[i].decodeAll(inputs.map((b) => ({ bytes: b.slice() })))) if (r.error) throw r.error;
  };
  try {
    await compare(`worker pool on ${inputs.length} crops (${cpus().length} cores): 2 workers vs 1`, { rounds: ROUNDS, unit: "Mpx/s" }, [
      { name: "pool, 1 worker", run: () => runPool(0), work: mpx, baseline: true },
      { name: "pool, 2 workers", run: () => runPool(1), work: mpx },
    ]);
  } finally {
    for (const p of pools) p.close();
  }
}

console.log(`\n${runtime.name} ${runtime.version}, ${cpus()[0]?.model ?? "unknown CPU"} × ${cpus().length}`);
if (summary.length > 0) {
  console.log("\n| group | cassette decode | cassette into | jpeg-js | @jsquash/jpeg | sharp | libjpeg-turbo (C) | into ÷ turbo |\n|---|---:|---:|---:|---:|---:|---:|---:|");
  const cell = (rows: Row[], name: string) => {
    const r = rows.find((x) => x.name === name);
    return r ? `${r.best.toFixed(1)} (${r.ratio.toFixed(2)}×)` : "—";
  };
  for (const { group, rows } of summary) {
    const into = rows.find((x) => x.name === "cassette into"), turbo = rows.find((x) => x.name === "libjpeg-turbo (C)");
    const vs = into && turbo ? `**${(into.best / turbo.best).toFixed(2)}**` : "—";
    console.log(`| ${group} | ${cell(rows, "cassette (wasm)")} | ${cell(rows, "cassette into")} | ${cell(rows, "jpeg-js")} | ${cell(rows, "@jsquash/jpeg")} | ${cell(rows, "sharp")} | ${cell(rows, "libjpeg-turbo (C)")} | ${vs} |`);
  }
}
