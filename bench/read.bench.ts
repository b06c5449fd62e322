/**
 * The 2025 paper's tight-loop read at this machine's scale: Fashion-MNIST JPEGs from a real
 * Cassandra node, at RTT 0, 20 ms and 150 ms through the project's TCP latency proxy, and with
 * one connection in four congested. In each setting, side by side in one run:
 *
 *   raw driver    the same prepared SELECT, the same number in flight, no loader logic: the ceiling
 *   ready order   the Loader, batches from whatever arrived (cassette's default)
 *   strict order  the Loader, batches in plan order (the classic loader)
 *
 *   bun bench/read.bench.ts [--samples N] [--rounds R] [--batch B] [--prefetch K] [--quick]
 *                            [--store cassandra://…/KEYSPACE]  (default: the local node, keyspace cassette_bench)
 * Needs a running node (cassette cassandra start). Prints tables; records go in bench/RESULTS.md.
 */
import { runtime } from "../runtime-adapters/index.ts";
import { startProxyProcess } from "./proxy/process.ts";
import { CassandraStore } from "../src/source/cassandra.ts";
import { ingest } from "../src/dataset/ingest.ts";
import { tables } from "../src/dataset/schema.ts";
import { Loader } from "../src/loader.ts";
import { openSource } from "../src/source/open.ts";
import { parseStoreAddress } from "../src/source/address.ts";
import { compare, type Contender } from "./_lib/compare.ts";

const args = runtime.args();
const opt = (n: string) => (args.includes(n) ? args[args.indexOf(n) + 1] : undefined);
if (args.includes("--help")) {
  console.log("usage: bun bench/read.bench.ts [--samples N] [--rounds R] [--batch B] [--prefetch K] [--quick] [--store URL]");
  runtime.exit(0);
}
const quick = args.includes("--quick");
const perSplit = Number(opt("--samples") ?? (quick ? 1500 : 5000)) / 2;
const rounds = Number(opt("--rounds") ?? (quick ? 1 : 3));
const batchSize = Number(opt("--batch") ?? 128);
const prefetchArg = opt("--prefetch") ?? "auto";
const prefetch: number | "auto" = prefetchArg === "auto" ? "auto" : Number(prefetchArg);
const base = opt("--store") ?? "cassandra://127.0.0.1:9042/cassette_bench";
const a = parseStoreAddress(base);
if (a.kind !== "cassandra") throw new Error("--store must be a cassandra:// address");
const DATASET = "fashion-mnist";

// The data: ingest once (idempotent), directly, not through a proxy.
const direct = await CassandraStore.open(base);
const ing = await ingest(direct, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: perSplit });
const ids: string[] = [];
for await (const page of direct.scanNat(DATASET)) for (const r of page) if ((r.meta.idx as number) < perSplit) ids.push(r.id);
console.log(`${runtime.name} ${runtime.version}: ${ids.length} Fashion-MNIST JPEGs in ${direct.address} (${ing.written} ingested now); batch ${batchSize}, prefetch ${prefetch} batches, ${rounds} rounds`);
await direct.close();

// The raw driver keeps as many requests in flight as the loader's deepest window.
const window = batchSize * (prefetch === "auto" ? 64 : prefetch);
const results: Record<string, { ready: number; strict: number; raw: number; p50: number; p99: number; maxOutstanding: number }> = {};

let nextPort = 19100;
async function setting(label: string, proxyArgs: string[], connections: number) {
  const proxy = await startProxyProcess(`${a.hosts[0]}:${a.port}`, nextPort++, proxyArgs);
  const auth = a.username ? `${a.username}:${a.password}@` : "";
  const store = await CassandraStore.open(`cassandra://${auth}127.0.0.1:${proxy.port}/${a.keyspace}?connections=${connections}`);
  const source = await openSource(store, DATASET);
  // The raw driver keeps as many requests in flight as the loader can: its window, capped by
  // what the driver's connections accept (the source's capacity).
  const inFlight = Math.min(window, (source as unknown as { capacity: number }).capacity);
  const cql = `SELECT label, data FROM ${store.keyspace}.${tables(DATASET).data} WHERE id = ?`;
  const loaders = { ready: 0, strict: 0 } as Record<string, number>;
  const last: Record<string, Loader> = {};
  // Each repetition is two epochs of one loader, as training reads: the first ramps the
  // window up (2025 paper §3.4), the second starts at the depth the first learned.
  const run = (order: "ready" | "strict") => async () => {
    const loader = new Loader({ store: source, ids, batchSize, prefetch, order, seed: loaders[order]++ });
    for (const e of [0, 1]) for await (const _ of loader.epoch(e)) { /* the tight loop: no work per batch */ }
    last[order] = loader;
  };
  const contenders: Contender[] = [
    {
      name: "raw driver", work: 2 * ids.length, baseline: true, run: async () => {
        for (const _ of [0, 1]) {
          let next = 0;
          const worker = async () => {
            while (next < ids.length) await store.client.execute(cql, [ids[next++]], { prepare: true });
          };
          await Promise.all(Array.from({ length: inFlight }, worker));
        }
      },
    },
    { name: "ready order", work: 2 * ids.length, run: run("ready") },
    { name: "strict order", work: 2 * ids.length, run: run("strict") },
  ];
  const rows = await compare(`${label}: tight-loop read (samples/s)`, { unit: "samples/s", rounds, warmup: 1 }, contenders);
  const by = Object.fromEntries(rows.map((r) => [r.name, r.best]));
  for (const order of ["ready", "strict"]) {
    const s = last[order].stats();
    console.log(`  ${order}: batch p50 ${s.batchMs.p50.toFixed(1)} ms, p99 ${s.batchMs.p99.toFixed(1)} ms, max ${s.batchMs.max.toFixed(1)} ms; most outstanding ${s.maxOutstanding}, window ${s.prefetch} batches at the end`);
  }
  const rs = last.ready.stats();
  results[label] = { ready: by["ready order"], strict: by["strict order"], raw: by["raw driver"], p50: rs.batchMs.p50, p99: rs.batchMs.p99, maxOutstanding: rs.maxOutstanding };
  await store.close();
  await proxy.close();
}

await setting("RTT 0 (proxy, no delay)", ["--delay-ms", "0"], 4);
await setting("RTT 20 ms", ["--delay-ms", "10"], 4);
await setting("RTT 150 ms", ["--delay-ms", "75"], 4);
await setting("uneven: 4 connections, 1 in 4 at 1 MB/s, RTT 20 ms", ["--delay-ms", "10", "--congest-every", "4", "--congest-bps", "1000000"], 4);

const r0 = results["RTT 0 (proxy, no delay)"];
console.log("\nsummary (best samples/s)");
for (const [k, v] of Object.entries(results)) {
  console.log(`  ${k}: ready ${v.ready.toFixed(0)} (${((100 * v.ready) / v.raw).toFixed(0)} % of raw, ${((100 * v.ready) / r0.ready).toFixed(0)} % of RTT 0), strict ${v.strict.toFixed(0)}, ready/strict ${(v.ready / v.strict).toFixed(2)}×, ready p99/p50 ${(v.p99 / v.p50).toFixed(1)}`);
}
runtime.exit(0);
