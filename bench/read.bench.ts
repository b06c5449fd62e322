/**
 * The tight-loop read of "Hiding Latencies…" (arXiv:2503.22643) at this machine's scale: JPEGs from
 * a real Cassandra node, at RTT 0, 20 ms and 150 ms through the project's TCP latency proxy, and
 * with one connection in four congested. In each setting, side by side in one run:
 *
 *   raw driver    the same prepared SELECT, up to the same number in flight (slow start from 64),
 *                 no loader logic: the ceiling
 *   ready order   the Loader, batches from whatever arrived (cassette's default)
 *   strict order  the Loader, batches in plan order (the classic loader)
 *
 * Two sets: Fashion-MNIST (~1 kB greyscale JPEGs) and an ImageNet-like set (~110 kB, 500×375
 * colour JPEGs made from real photographs: bench/read/README.md). `--step-ms S` makes the
 * consumer spend S ms per batch (awaited, as a GPU step is; `--step-kind busy` holds the
 * thread instead), standing in for a training step, so that batch-time
 * percentiles measure stalls rather than bursts.
 *
 * Figures (SVG, into --out, default bench/read/figures): batch time over time, ready vs strict
 * (the paper's Fig. 4), and each connection's throughput over time under each order (Figs. 5–6),
 * from the last round of each setting. The proxy runs in its own process and reports every
 * connection's byte count every 100 ms (tools/proxy/main.ts --sample-ms, via bench/read/timeline.ts).
 *
 *   bun bench/read.bench.ts [--set fmnist|imagenet|both] [--samples N] [--rounds R] [--batch B]
 *       [--prefetch K|auto] [--step-ms S] [--step-kind sleep|busy] [--hedge] [--settings rtt0,rtt20,rtt150,uneven,moving] [--balance driver|rate|both]
 *       [--out DIR] [--imagenet-dir DIR] [--quick] [--json FILE] [--store cassandra://…/KEYSPACE]
 * Needs a running node (cassette cassandra start). Prints tables; records go in bench/RESULTS.md.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { homedir } from "node:os";
import { runtime } from "../runtime-adapters/index.ts";
import { CassandraStore } from "../src/source/cassandra/cassandra.ts";
import { CassandraSource } from "../src/source/cassandra/cassandra_source.ts";
import { ingest } from "../src/dataset/ingest.ts";
import { tables } from "../src/dataset/schema.ts";
import { Loader } from "../src/loader.ts";
import { parseStoreAddress } from "../src/source/kinds.ts";
import { lineChart } from "../src/observe/svg.ts";
import { percentiles } from "../src/observe/stats.ts";
import { compare, type Contender } from "./_lib/compare.ts";
import { startTimelineProxy, wall } from "./read/timeline.ts";
import { type BenchArgs, benchArgs } from "./_lib/args.ts";

const USAGE = `usage: bun bench/read.bench.ts [options]
  --set fmnist|imagenet|both   which data set(s) (default fmnist)
  --samples N                  samples read per epoch (default 20000 fmnist, 1500 imagenet; --quick: 3000 / 600)
  --rounds R                   measured rounds, interleaved (default 3; --quick: 1)
  --batch B                    batch size (default 128 fmnist, 32 imagenet)
  --prefetch K|auto            window in batches (default auto)
  --step-ms S                  the consumer spends S ms per batch (default 0: a tight loop)
  --step-kind sleep|busy       the step awaits (default, like a GPU step) or holds the thread
  --hedge                      the loader hedges slow requests (option hedge; the raw driver does not)
  --quick                      fewer samples and rounds (bench/main.ts --quick)
  --settings LIST              any of rtt0,rtt20,rtt150,uneven,moving (default the first four)
  --balance driver|rate|both   how requests are spread over connections (default rate; both: side by side,
                               not with uneven or moving)
  --connections LIST           connections per node, each a number or auto, side by side (default 4,
                               the tuned runs in RESULTS); auto: the address names none, so cassette's
                               defaults apply (2, growing while requests wait for a slot), and the
                               congested settings congest 1 in 2 (the pool's 2nd of the first 2);
                               uneven and moving take one value
  --ramp-start LIST            the Loader's rampStart (batches of an epoch's first window), each a
                               number or default, side by side on the same client (default: default)
  --out DIR                    where the SVG figures go (default bench/read/figures)
  --imagenet-dir DIR           the ImageNet-like folder (default $CASSETTE_CACHE/imagenet-like, from bench/read/make_imagenet_like.sh)
  --json FILE                  also write the summary as JSON
  --store URL                  cassandra://HOST:PORT/KEYSPACE (default the local node, keyspace cassette_bench)`;

// Typed, so that a check that ends in args.fail() narrows (the store address below).
const args: BenchArgs = benchArgs({
  program: "bench/read.bench.ts",
  usage: USAGE,
  // --json takes a file here (the summary), not the usual flag.
  valued: ["set", "samples", "rounds", "batch", "prefetch", "step-ms", "step-kind", "settings", "balance", "connections", "ramp-start", "out", "imagenet-dir", "json", "store"],
  flags: ["hedge", "quick"],
});
const quick = args.has("quick");
const setArg = args.str("set", "fmnist");
const sets = setArg === "both" ? ["fmnist", "imagenet"] : [setArg];
for (const s of sets) if (s !== "fmnist" && s !== "imagenet") args.fail(`--set must be fmnist, imagenet or both: current value is ${setArg}`);
const rounds = args.int("rounds", quick ? 1 : 3);
const prefetch: number | "auto" = args.str("prefetch", "auto") === "auto" ? "auto" : args.int("prefetch", 0);
const stepMs = args.num("step-ms", 0);
const stepKind = args.str("step-kind", "sleep");
if (stepKind !== "sleep" && stepKind !== "busy") args.fail(`--step-kind must be sleep or busy: current value is ${stepKind}`);
const hedge = args.has("hedge");
const settingNames = args.list("settings", ["rtt0", "rtt20", "rtt150", "uneven"]);
const balanceArg = args.str("balance", "rate");
if (!["driver", "rate", "both"].includes(balanceArg)) args.fail(`--balance must be driver, rate or both: current value is ${balanceArg}`);
const balances = (balanceArg === "both" ? ["driver", "rate"] : [balanceArg]) as ("driver" | "rate")[];
// Connections per node, side by side: a number, or "auto" (the address names none).
const connectionsList = args.list("connections", ["4"]).map((c) => {
  if (c === "auto") return undefined;
  const n = Number(c);
  if (!Number.isInteger(n) || n < 1) args.fail(`--connections takes positive integers or auto: current value is ${c}`);
  return n;
});
// The proxy numbers connections from 0 in the order they open; the driver's control connection
// is the pool's first (the driver offers protocol v4 first, so no refused offer opens one more):
// "every 4" congests the pool's 4th of 4; with cassette's 2 to start, "every 2" congests the 2nd
// (and with congestion moving, the two take turns; a pool grown to 4 would hold 2 congested).
// With two clients on one proxy their connections interleave, so a congested setting takes one
// --connections value.
const congestEvery = String(connectionsList[0] === undefined ? 2 : 4);
/** One client and source per (balance, connections): each contender reads through its own. */
interface Variant { key: string; balance: "driver" | "rate"; connections?: number }
const variants: Variant[] = balances.flatMap((balance) => connectionsList.map((connections) => ({
  balance,
  connections,
  key: [balances.length > 1 ? `${balance} balance` : "", connectionsList.length > 1 ? (connections ? `${connections} connections` : "default connections") : ""]
    .filter(Boolean).join(", "),
})));
const suffixOf = (v: Variant) => (v.key ? ` (${v.key})` : "");
for (const congested of ["uneven", "moving"]) {
  if (variants.length > 1 && settingNames.includes(congested)) {
    args.fail(`setting '${congested}' takes one --connections value and one --balance: the proxy numbers every client's connections in one sequence, so which client it congests would be left to chance`);
  }
}
// The first window's size, side by side on one client: what a wider start buys a far link's first epoch.
const rampStarts = args.list("ramp-start", ["default"]).map((r) => {
  if (r === "default") return undefined;
  const n = Number(r);
  if (!Number.isInteger(n) || n < 1) args.fail(`--ramp-start takes positive integers or default: current value is ${r}`);
  return n;
});
const rampSuffix = (r: number | undefined) => (rampStarts.length > 1 ? ` [ramp start ${r ?? "default"}]` : "");
const outDir = args.str("out") ?? new URL("./read/figures", import.meta.url).pathname;
const base = args.str("store", "cassandra://127.0.0.1:9042/cassette_bench");
const parsed = parseStoreAddress(base);
if (parsed.kind !== "cassandra") args.fail("--store must be a cassandra:// address");
const a = parsed; // narrowed for the functions below
mkdirSync(outDir, { recursive: true });

interface SetSpec {
  name: string;
  dataset: string;
  batchSize: number;
  samples: number;
}
const SETS: Record<string, SetSpec> = {
  fmnist: { name: "fmnist", dataset: "fashion-mnist", batchSize: args.int("batch", 128), samples: args.int("samples", quick ? 3000 : 20000) },
  imagenet: { name: "imagenet", dataset: "imagenet-like", batchSize: args.int("batch", 32), samples: args.int("samples", quick ? 600 : 1500) },
};
const IMAGENET_DIR = args.str("imagenet-dir") ??
  join((globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.CASSETTE_CACHE ?? join(homedir(), ".cache", "cassette"), "imagenet-like");

/** Ingests the set if needed (idempotent) and returns `samples` of its ids. */
async function prepare(spec: SetSpec): Promise<{ ids: string[]; meanBytes: number }> {
  const direct = await CassandraStore.open(base);
  try {
    let written: number;
    if (spec.name === "fmnist") {
      written = (await ingest(direct, "idx:/usr/share/datasets/fashion-mnist/", { dataset: spec.dataset, limit: Math.ceil(spec.samples / 2) })).written;
    } else {
      if (!existsSync(IMAGENET_DIR)) throw new Error(`Cannot find ${IMAGENET_DIR}: make it first with 'bash bench/read/make_imagenet_like.sh' (bench/read/README.md) or pass --imagenet-dir`);
      written = (await ingest(direct, IMAGENET_DIR, { dataset: spec.dataset })).written;
    }
    const ids: string[] = [];
    for await (const page of direct.scanNat(spec.dataset)) for (const r of page) ids.push(r.id);
    ids.sort(); // a stable choice of `samples` ids whatever the scan order
    ids.length = Math.min(ids.length, spec.samples);
    const probe = await direct.get(spec.dataset, ids.slice(0, 64));
    const meanBytes = probe.reduce((s, x) => s + x.data.length, 0) / Math.max(1, probe.length);
    console.log(`${runtime.name} ${runtime.version}: ${ids.length} ${spec.dataset} JPEGs of ${(meanBytes / 1000).toFixed(1)} kB on average in ${direct.address} (${written} ingested now); batch ${spec.batchSize}, prefetch ${prefetch}, step ${stepMs} ms${hedge ? ", hedged" : ""}, ${rounds} rounds`);
    return { ids, meanBytes };
  } finally {
    await direct.close();
  }
}

/** Busy-waits `ms`: a training step holds the thread (and the event loop) as a GPU submit-and-wait would. */
/**
 * The consumer's work per batch. "sleep" (default) awaits, as a training step awaits its GPU
 * work: the event loop (the driver's sockets) runs meanwhile. "busy" holds the thread, as a
 * step computed on the loader's own thread would: replies then pile up unread in the sockets
 * until the step ends, and every request's latency stretches to the window's length.
 */
async function step(ms: number): Promise<void> {
  if (ms <= 0) return;
  if (stepKind === "sleep") return new Promise<void>((r) => setTimeout(r, ms));
  const end = runtime.now() + ms;
  while (runtime.now() < end) { /* busy */ }
}

interface Trace {
  /** wall-clock ms of the run's start and end. */
  start: number;
  end: number;
  /** [seconds since start, ms since the previous batch] per batch handed over. */
  batches: [number, number][];
  /** Index in `batches` where the second epoch starts, and samples read in it. */
  epoch1At: number;
  epoch1Samples: number;
}

interface SettingResult {
  set: string;
  setting: string;
  samplesPerSec: Record<string, number>;
  mbPerSec: Record<string, number>;
  /** All batches of the last round (LoaderStats.batchMs). */
  batchMs: Record<string, { p50: number; p99: number; max: number }>;
  /** The second epoch of the last round: after the first start's ramp (the paper's "after the initial transient"). */
  epoch1BatchMs: Record<string, { p50: number; p99: number; max: number }>;
  /** Samples/s of the last round's second epoch, from its first request to its last batch. */
  epoch1SamplesPerSec: Record<string, number>;
  maxOutstanding: Record<string, number>;
  spread: Record<string, number>;
}
const results: SettingResult[] = [];

const SETTINGS: Record<string, { label: string; proxy: string[] }> = {
  rtt0: { label: "RTT 0 (proxy, no delay)", proxy: ["--delay-ms", "0"] },
  rtt20: { label: "RTT 20 ms", proxy: ["--delay-ms", "10"] },
  rtt150: { label: "RTT 150 ms", proxy: ["--delay-ms", "75"] },
  uneven: { label: `uneven: 1 connection in ${congestEvery} at 1 MB/s, RTT 20 ms`, proxy: ["--delay-ms", "10", "--congest-every", congestEvery, "--congest-bps", "1000000"] },
  // The paper's case (§3.3): congestion comes and goes on routes, so no connection is known to
  // be slow for long; requests already queued on one that turns slow are stuck there.
  moving: {
    label: `moving congestion: 1 connection in ${congestEvery} at 1 MB/s, a different one every 2 s, RTT 20 ms`,
    proxy: ["--delay-ms", "10", "--congest-every", congestEvery, "--congest-bps", "1000000", "--congest-rotate-ms", "2000"],
  },
};

async function setting(spec: SetSpec, ids: string[], meanBytes: number, key: string) {
  const st = SETTINGS[key];
  if (!st) throw new Error(`unknown setting '${key}' (${Object.keys(SETTINGS).join(", ")})`);
  const B = spec.batchSize;
  const proxy = await startTimelineProxy(`${a.hosts[0]}:${a.port}`, 0, st.proxy);
  const auth = a.username ? `${a.username}:${a.password}@` : "";
  // One client per variant: "rate" patches its client's hosts (NOTE [ Connection choice ]).
  const stores: Record<string, CassandraStore> = {};
  const sources: Record<string, CassandraSource> = {};
  const open = async (v: Variant) => {
    stores[v.key] = await CassandraStore.open(`cassandra://${auth}127.0.0.1:${proxy.port}/${a.keyspace}${v.connections ? `?connections=${v.connections}` : ""}`);
    await stores[v.key].getDataset(spec.dataset);
    sources[v.key] = new CassandraSource(stores[v.key], spec.dataset, undefined, { balance: v.balance });
    await sources[v.key].prepared;
  };
  for (const v of variants) await open(v);
  // Under congestion a run leaves requests queued on the slow connection (a loader closed with
  // samples in flight; at 1 MB/s 200 photographs take 20 s to drain), and the next contender
  // on the same client would meet them: each run there gets a fresh client, opened untimed.
  const congested = key === "uneven" || key === "moving";
  const fresh = (v: Variant) => congested ? async () => {
    const old = stores[v.key];
    await open(v);
    await old.close();
  } : undefined;
  // The raw driver uses the last client ("rate" balance when both are compared): with the
  // driver's own balance, 2048 requests in flight put ~512 on a 1 MB/s connection, and with
  // 110 kB samples the last of them waits past the driver's 30 s read timeout.
  const lastVariant = variants[variants.length - 1];
  const window = B * (prefetch === "auto" ? 64 : prefetch);
  // The raw driver keeps as many requests in flight as the loader can: its window, capped by
  // what the driver's connections accept (the source's capacity).
  const inFlight = Math.min(window, sources[lastVariant.key].capacity);
  const cql = `SELECT label, data FROM ${stores[lastVariant.key].keyspace}.${tables(spec.dataset).data} WHERE id = ?`;
  const seeds: Record<string, number> = {};
  const last: Record<string, { loader: Loader; trace: Trace }> = {};

  // Each repetition is two epochs of one loader, as training reads: the first ramps the
  // window up ("Hiding Latencies…" (arXiv:2503.22643), §3.4), the second starts at the depth the
  // first learned.
  const run = (name: string, order: "ready" | "strict", v: Variant, rampStart?: number) => async () => {
    const loader = new Loader({ store: sources[v.key], ids, batchSize: B, prefetch, order, hedge, reaskTail: true, rampStart, seed: (seeds[name] = (seeds[name] ?? 0) + 1) });
    const trace: Trace = { start: wall(), end: 0, batches: [], epoch1At: 0, epoch1Samples: 0 };
    let prev = runtime.now();
    for (const e of [0, 1]) {
      if (e === 1) trace.epoch1At = trace.batches.length;
      // Training reads epochs in sequence: the second epoch's first samples are read during the
      // first one's tail (option readAhead), as train.ts does.
      for await (const b of loader.epoch(e, { readAhead: e === 0 })) {
        if (e === 1) trace.epoch1Samples += b.ids.length;
        const now = runtime.now();
        trace.batches.push([(wall() - trace.start) / 1000, now - prev]);
        await step(stepMs);
        prev = now; // a gap runs from hand-over to hand-over, the step included (as LoaderStats.batchMs)
      }
    }
    trace.end = wall();
    last[name] = { loader, trace };
  };
  const contenders: Contender[] = [
    {
      name: "raw driver", work: 2 * ids.length, baseline: true, before: fresh(lastVariant), run: async () => {
        const store = stores[lastVariant.key];
        for (const _ of [0, 1]) {
          // Slow start: 64 requests, then one more for each completion (doubling per round
          // trip) up to `inFlight`. All at once would put a quarter of them on a congested
          // connection before any rate is known (NOTE [ Connection choice ]).
          let next = 0, done = 0, workers = 0;
          const all: Promise<void>[] = [];
          // With a step, a consumer takes B answers per step and the workers keep at most
          // `inFlight` answers not yet taken, as the loader's window does.
          let taken = 0;
          const waiting: (() => void)[] = []; // workers held by the window
          let consumer: (() => void) | undefined; // the consumer, waiting for a batch's answers
          const worker = async () => {
            while (next < ids.length) {
              while (stepMs > 0 && next >= taken + inFlight) await new Promise<void>((r) => waiting.push(r));
              await store.client.execute(cql, [ids[next++]], { prepare: true });
              done++;
              consumer?.();
              if (workers < inFlight) workers++, all.push(worker());
            }
          };
          for (; workers < Math.min(64, inFlight); workers++) all.push(worker());
          if (stepMs > 0) {
            while (taken < ids.length) {
              while (done < Math.min(ids.length, taken + B)) await new Promise<void>((r) => (consumer = r));
              consumer = undefined;
              taken = Math.min(ids.length, taken + B);
              for (const w of waiting.splice(0)) w();
              await step(stepMs);
            }
          }
          for (let i = 0; i < all.length; i++) await all[i];
        }
      },
    },
  ];
  for (const v of variants) {
    for (const rs of rampStarts) {
      const suffix = suffixOf(v) + rampSuffix(rs);
      contenders.push({ name: `ready order${suffix}`, work: 2 * ids.length, before: fresh(v), run: run(`ready order${suffix}`, "ready", v, rs) });
      contenders.push({ name: `strict order${suffix}`, work: 2 * ids.length, before: fresh(v), run: run(`strict order${suffix}`, "strict", v, rs) });
    }
  }
  const title = `${spec.name}, ${st.label}: tight-loop read${stepMs ? `, ${stepMs} ms step` : ""} (samples/s)`;
  const rows = await compare(title, { unit: "samples/s", rounds, warmup: 1 }, contenders);
  console.log(`  connections open at the end: ${variants.map((v) => `${sources[v.key].connections}${suffixOf(v)}`).join(", ")}` +
    (connectionsList.includes(undefined) ? " (cassette's default: 2 to start, more while requests wait for a slot)" : ""));
  const r: SettingResult = { set: spec.name, setting: key, samplesPerSec: {}, mbPerSec: {}, batchMs: {}, epoch1BatchMs: {}, epoch1SamplesPerSec: {}, maxOutstanding: {}, spread: {} };
  for (const row of rows) {
    r.samplesPerSec[row.name] = row.best;
    r.mbPerSec[row.name] = (row.best * meanBytes) / 1e6;
    r.spread[row.name] = row.spread;
  }
  for (const [name, { loader, trace }] of Object.entries(last)) {
    const s = loader.stats();
    r.batchMs[name] = s.batchMs;
    const e1 = trace.batches.slice(trace.epoch1At);
    r.epoch1BatchMs[name] = percentiles(e1.map(([, ms]) => ms));
    // From the end of epoch 0 (the last batch before it) to the end of epoch 1.
    const e1Start = trace.epoch1At > 0 ? trace.batches[trace.epoch1At - 1][0] : 0;
    r.epoch1SamplesPerSec[name] = trace.epoch1Samples / ((trace.end - trace.start) / 1000 - e1Start);
    r.maxOutstanding[name] = s.maxOutstanding;
    const x = (p: { p50: number; p99: number }) => (p.p99 / Math.max(p.p50, 1e-3)).toFixed(1);
    const e = r.epoch1BatchMs[name];
    console.log(`  ${name}: batch p50 ${s.batchMs.p50.toFixed(1)} ms, p99 ${s.batchMs.p99.toFixed(1)} ms (${x(s.batchMs)}× p50), max ${s.batchMs.max.toFixed(1)} ms; 2nd epoch: p50 ${e.p50.toFixed(1)}, p99 ${e.p99.toFixed(1)} (${x(e)}×), ${r.epoch1SamplesPerSec[name].toFixed(0)} samples/s; most outstanding ${s.maxOutstanding}, window ${s.prefetch} batches at the end`);
  }
  results.push(r);
  figures(spec, key, st.label, last, proxy);
  for (const s of Object.values(stores)) await s.close();
  await proxy.close();
}

/** The last round's traces as SVG: batch time over time, and each connection's MB/s over time per order. */
function figures(spec: SetSpec, key: string, label: string, last: Record<string, { trace: Trace }>, proxy: Awaited<ReturnType<typeof startTimelineProxy>>) {
  const stem = join(outDir, `${spec.name}-${key}`);
  const names = Object.keys(last);
  writeFileSync(`${stem}-batch-time.svg`, lineChart({
    title: `${spec.dataset}, ${label}: time between batches${stepMs ? ` (${stepMs} ms step)` : ""}`,
    xLabel: "seconds since the loader started (2 epochs)", yLabel: "ms between batches (log)", logY: true,
    series: names.map((n) => ({ name: n, points: last[n].trace.batches.map(([t, ms]) => [t, Math.max(ms, 0.01)] as [number, number]) })),
  }));
  for (const n of names) {
    const { start, end } = last[n].trace;
    const rates = [...proxy.rates(start, end)].sort((x, y) => x[0] - y[0]);
    const total = new Map<number, number>();
    for (const [, pts] of rates) for (const [t, v] of pts) total.set(t, (total.get(t) ?? 0) + v);
    writeFileSync(`${stem}-connections-${n.replace(/[^a-z]+/g, "-").replace(/-$/, "")}.svg`, lineChart({
      title: `${spec.dataset}, ${label}, ${n}: throughput per connection`,
      xLabel: "seconds since the loader started (2 epochs)", yLabel: "MB/s received (100 ms intervals)",
      series: [
        ...rates.map(([k, pts]) => ({ name: `conn ${k}${proxy.capped(k) ? " (congested)" : ""}`, points: pts })),
        { name: "all", points: [...total].sort((x, y) => x[0] - y[0]) },
      ],
    }));
  }
}

for (const name of sets) {
  const spec = SETS[name];
  const { ids, meanBytes } = await prepare(spec);
  for (const key of settingNames) await setting(spec, ids, meanBytes, key);
}

console.log("\nsummary (best samples/s; ratios of bests)");
for (const r of results) {
  const r0 = results.find((x) => x.set === r.set && x.setting === "rtt0");
  for (const b of variants) for (const rs of rampStarts) {
    const readyName = `ready order${suffixOf(b)}${rampSuffix(rs)}`, strictName = `strict order${suffixOf(b)}${rampSuffix(rs)}`;
    const ready = r.samplesPerSec[readyName], strict = r.samplesPerSec[strictName], raw = r.samplesPerSec["raw driver"];
    const bm = r.batchMs[readyName];
    const e1 = r.epoch1SamplesPerSec[readyName], e1r0 = r0?.epoch1SamplesPerSec[readyName];
    const vs0 = r0 ? `, ${((100 * ready) / r0.samplesPerSec[readyName]).toFixed(0)} % of RTT 0 (2nd epoch: ${((100 * e1) / e1r0!).toFixed(0)} %)` : "";
    const be = r.epoch1BatchMs[readyName];
    console.log(`  ${r.set} ${r.setting}${b.key ? ` (${b.key})` : ""}${rampSuffix(rs)}: ready ${ready.toFixed(0)} (${r.mbPerSec[readyName].toFixed(1)} MB/s, ${((100 * ready) / raw).toFixed(0)} % of raw${vs0}), strict ${strict.toFixed(0)}, ready/strict ${(ready / strict).toFixed(2)}×, ready p99/p50 ${(bm.p99 / Math.max(bm.p50, 1e-3)).toFixed(1)} (2nd epoch ${(be.p99 / Math.max(be.p50, 1e-3)).toFixed(1)}; strict ${(r.batchMs[strictName].p99 / Math.max(r.batchMs[strictName].p50, 1e-3)).toFixed(1)})`);
  }
}
const jsonOut = args.str("json");
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ runtime: `${runtime.name} ${runtime.version}`, stepMs, rounds, prefetch, results }, null, 1));
console.log(`figures in ${outDir}`);
runtime.exit(0);
