/**
 * Reading in worker threads (the Loader's `workers`, src/read/worker_source.ts) against
 * reading in the loader's own thread, which is the thread that feeds the GPU. Each contender
 * is a fresh Loader reading the same ids with JPEG decoding (`decode`, in the worker when
 * there are workers); contenders interleaved round by round, so that a shared machine's noise
 * hits them alike. Per round:
 * one epoch to start (workers, connections, the window's ramp), then one timed epoch.
 *
 *   bun bench/read_workers.bench.ts [--store ADDRESS] [--dataset NAME] [--workers 0,1,2]
 *                                   [--samples N] [--rounds R] [--step-ms S] [--idx PREFIX] [--grey] [--per-sample] [--no-lane] [--no-slabs] [--by-id] [--quick] [--json]
 *
 * Figures per contender: samples/s handed over, and the loader's thread's CPU time per sample
 * (Linux: /proc/self/task/PID/schedstat, ns). 1e6 ÷ that is the most samples per second
 * one thread could feed a GPU fast enough never to be the limit: the ceiling that matters on
 * a real card, where the store and the cores keep up.
 *
 * `--step-ms S` holds the loader's thread S ms of its CPU time per batch (busy; not counted in
 * its µs/sample), as training on
 * a CPU WebGPU adapter (lavapipe) does: then reading in that thread competes with training for
 * it, and workers read on the other cores meanwhile.
 *
 * `--grey` decodes to one channel (`decode: { grey: true }`), as train.ts does for its grey models.
 *
 * The consumer puts each batch's pixels into one staging buffer, as a GPU upload would: one
 * copy of the batch's image table where the batch has one (read workers' packets, NOTE
 * [ Packets ] in src/read/packet.ts), else one copy per sample's image.
 *
 * `--per-sample` runs each worker count twice: batches made of the workers' packets (the
 * default), and samples handed over one by one as before packets (a transform function on the
 * loader's thread asks for that: `transform: (s) => s`).
 *
 * `--no-lane` runs each worker count also without the read workers' slow lane (`slowLane:
 * false`; NOTE [ Read workers: the slow lane ] in src/read/worker_source.ts): what its claims,
 * stamps and checks cost where no sample is slow.
 *
 * `--no-slabs` runs each worker count also with packets in buffers of their own, transferred
 * (CASSETTE_PACKET_SLABS=0), not in slabs that cross once (NOTE [ Packet slabs ] in
 * src/read/packet.ts): what the receiving heap's collections cost the loader's thread.
 *
 * `--by-id` runs each worker count also with the SQLite store read as before NOTE [ Reading by
 * rowid ] (src/source/sqlite/sqlite.ts): every sample by its id, pages by read() (CASSETTE_SQLITE_BY_ID=1).
 *
 * Default store: the embedded Fashion-MNIST file train.ts makes (data/fashion-mnist.sqlite).
 * Fashion-MNIST is ingested into the store if absent, from Debian's dataset-fashion-mnist or
 * `--idx PREFIX`. With a cassandra:// store the
 * database server shares these cores: see bench/RESULTS.md.
 */
import process from "node:process";
import { runtime } from "../runtime-adapters/index.ts";
import { Loader } from "../src/loader.ts";
import type { Sample } from "../src/read/sample.ts";
import { openStore } from "../src/source/open.ts";
import { ingest } from "../src/dataset/ingest.ts";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/read_workers.bench.ts",
  usage: "usage: bun bench/read_workers.bench.ts [--store ADDRESS] [--dataset NAME] [--workers 0,1,2] [--samples N] [--rounds R] [--step-ms S] [--idx PREFIX] [--grey] [--per-sample] [--no-lane] [--no-slabs] [--by-id] [--quick] [--json]",
  valued: ["store", "dataset", "workers", "samples", "rounds", "step-ms", "idx"],
  flags: ["grey", "quick", "per-sample", "no-lane", "no-slabs", "by-id"],
});
const quick = args.has("quick");
const json = args.has("json");
const grey = args.has("grey");
const address = args.str("store", "sqlite:data/fashion-mnist.sqlite");
const dataset = args.str("dataset", "fashion-mnist");
const counts = args.list("workers", ["0", "1", "2"]).map(Number);
if (!counts.every((n) => Number.isInteger(n) && n >= 0)) args.fail(`--workers must be whole numbers: current value is ${args.str("workers")}`);
/**
 * A contender: a worker count and what differs from the defaults: (--per-sample) samples
 * handed over one by one, (--no-lane) no slow lane, (--no-slabs) packets transferred, not in
 * slabs, (--by-id) the SQLite store read by id through read(), without rowids or the mapping.
 */
type Variant = "packets" | "per-sample" | "no-lane" | "no-slabs" | "by-id";
interface Contender { workers: number; variant: Variant }
const VARIANTS: Variant[] = ["per-sample", "no-lane", "no-slabs", "by-id"];
const contenders: Contender[] = counts.flatMap((w) =>
  w > 0 ? [{ workers: w, variant: "packets" as Variant }, ...VARIANTS.filter((v) => args.has(v)).map((variant) => ({ workers: w, variant }))] : [{ workers: 0, variant: "packets" as Variant }]
);
const rounds = args.int("rounds", quick ? 1 : 5);
const stepMs = args.num("step-ms", 0);
const log = (s: string) => json || console.log(s);

// The samples: the first N of the dataset. Fashion-MNIST is ingested on first use, only as much
// as N needs (half from each idx split): --quick does not pay for all 70 000; a later, larger
// run adds the rest (ingest skips what is stored).
const want = args.int("samples", quick ? 8192 : 60000);
const store = await openStore(address);
let ids: string[] = [];
try {
  const scan = async () => {
    ids = [];
    if ((await store.listDatasets()).some((d) => d.name === dataset)) for await (const page of store.scanNat(dataset)) ids.push(...page.map((r) => r.id));
  };
  await scan();
  if (ids.length < want) {
    if (dataset !== "fashion-mnist") {
      if (ids.length === 0) throw new Error(`bench: ${address} has no dataset '${dataset}'`);
    } else {
      log(`ingesting ${want} Fashion-MNIST samples into ${address} …`);
      await ingest(store, `idx:${args.str("idx", "/usr/share/datasets/fashion-mnist/")}`, { dataset, limit: Math.ceil(want / 2) });
      await scan();
    }
  }
} finally {
  await store.close();
}
ids = ids.slice(0, want);

/**
 * CPU time of the loader's thread in ms (runtime.threadCpuMs: Linux's schedstat, in ns; stat's
 * utime + stime count 10 ms ticks, too coarse for a thread that spends ~1 µs a sample), or NaN
 * off Linux.
 */
const threadCpuMs = () => runtime.threadCpuMs();

/** Holds the thread for `ms` of its own CPU time (not wall time: the workers share the cores); answers the CPU ms spent. */
function busy(ms: number): number {
  const c0 = threadCpuMs();
  if (Number.isNaN(c0)) {
    const end = runtime.now() + ms;
    while (runtime.now() < end);
    return ms;
  }
  let c = c0;
  while ((c = threadCpuMs()) - c0 < ms);
  return c - c0;
}

interface Result { samplesPerSec: number; threadUsPerSample: number }
/** Where the consumer puts each batch's pixels (a GPU staging buffer's stand-in). */
let staging = new Uint8Array(1 << 20);
async function once(c: Contender, seed: number): Promise<Result> {
  // Read when the workers start (WorkerSource's `slabs` default) and where the store opens: set for this contender only.
  setEnv("CASSETTE_PACKET_SLABS", c.variant === "no-slabs" ? "0" : undefined);
  setEnv("CASSETTE_SQLITE_BY_ID", c.variant === "by-id" ? "1" : undefined);
  const loader = new Loader({
    store: address, dataset, ids, batchSize: 128, prefetch: "auto", seed, readAhead: true, workers: c.workers, decode: grey ? { grey: true } : true, reaskTail: true,
    ...(c.variant === "no-lane" ? { slowLane: false } : {}),
    ...(c.variant === "per-sample" ? { transform: (s: Sample) => s } : {}),
  });
  try {
    for await (const b of loader.epoch(0)) if (stepMs) busy(stepMs), void b;
    const t0 = runtime.now(), c0 = threadCpuMs();
    let n = 0, px = 0, held = 0;
    for await (const b of loader.epoch(1)) {
      n += b.ids.length;
      if (b.images) {
        if (b.images.pixels.length > staging.length) staging = new Uint8Array(b.images.pixels.length * 2);
        staging.set(b.images.pixels);
        px += b.images.pixels.length;
        b.release?.();
      } else {
        let at = 0;
        for (const s of b.items) {
          const d = s.image!.data; // every sample decoded
          if (at + d.length > staging.length) staging = Uint8Array.from({ length: 2 * (at + d.length) }, (_, i) => staging[i] ?? 0);
          staging.set(d, at);
          at += (d.length + 3) & ~3;
        }
        px += at;
      }
      if (stepMs) held += busy(stepMs);
    }
    const ms = runtime.now() - t0, cpu = threadCpuMs() - c0 - held;
    if (n !== ids.length || px === 0) throw new Error(`bench: epoch 1 handed over ${n} of ${ids.length} samples`);
    return { samplesPerSec: (1000 * n) / ms, threadUsPerSample: (1000 * cpu) / n };
  } finally {
    await loader.close();
  }
}

function setEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

const name = (c: Contender) =>
  (c.workers === 0 ? "in the loader's thread" : `${c.workers} read worker${c.workers === 1 ? "" : "s"}`) +
  (c.workers === 0 ? "" : c.variant === "packets" ? ", packets" : c.variant === "by-id" ? ", SQLite by id" : `, ${c.variant.replace("-", " ")}`);
log(`${ids.length} samples of ${dataset} from ${address}, batch 128, decode on${grey ? " (grey)" : ""}, ${rounds} rounds` + (stepMs ? `, a busy step of ${stepMs} ms per batch` : ", tight loop"));
const runs = new Map<Contender, Result[]>(contenders.map((c) => [c, []]));
for (let r = 0; r < rounds; r++) {
  // Each round starts at another contender (a warm page cache, a compaction, a JIT that just settled).
  for (let k = 0; k < contenders.length; k++) {
    const w = contenders[(r + k) % contenders.length];
    const x = await once(w, r);
    runs.get(w)!.push(x);
    // As it goes: a run cut short by a time budget still leaves its figures.
    log(`  round ${r + 1}: ${name(w)}: ${x.samplesPerSec.toFixed(0)} samples/s, ${x.threadUsPerSample.toFixed(1)} µs/sample of the loader's thread`);
  }
}
const med = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
const base = runs.get(contenders[0])!;
const rows = contenders.map((w) => {
  const rs = runs.get(w)!;
  const rate = rs.map((x) => x.samplesPerSec), cpu = rs.map((x) => x.threadUsPerSample);
  // Paired: each round against the first contender's run of the same round.
  const paired = rs.map((x, i) => x.samplesPerSec / base[i].samplesPerSec);
  // Against linear scaling from the first contender's worker count (where both read in workers).
  const w0 = contenders[0].workers;
  const ofLinear = w0 > 0 && w.workers > 0 ? med(paired) / (w.workers / w0) : undefined;
  return { workers: w.workers, variant: w.variant, name: name(w), best: Math.max(...rate), median: med(rate), pairedRatio: med(paired), ofLinear, threadUsPerSample: med(cpu), feedCeiling: 1e6 / med(cpu) };
});
if (json) console.log(JSON.stringify({ address, dataset, samples: ids.length, rounds, stepMs, grey, rows }));
else {
  console.log(`\n  ${"".padEnd(26)} ${"best/s".padStart(8)} ${"median/s".padStart(9)} ${"ratio".padStart(7)} ${"÷ linear".padStart(8)}  ${"thread µs/sample".padStart(16)} ${"feed ceiling/s".padStart(15)}`);
  for (const r of rows) {
    console.log(`  ${r.name.padEnd(26)} ${r.best.toFixed(0).padStart(8)} ${r.median.toFixed(0).padStart(9)} ${(r.pairedRatio.toFixed(2) + "×").padStart(7)} ${(r.ofLinear === undefined ? "" : r.ofLinear.toFixed(2)).padStart(8)}  ${r.threadUsPerSample.toFixed(2).padStart(16)} ${r.feedCeiling.toFixed(0).padStart(15)}`);
  }
  console.log(`  ratio: median over rounds of samples/s ÷ the ${name(contenders[0])} run of the same round`);
}
