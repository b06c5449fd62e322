/**
 * How fast do samples go into a store, and what does cassette's atomic three-table write cost
 * over the bare minimum? Pre-encoded Fashion-MNIST JPEGs (so JPEG encoding is not measured),
 * interleaved rounds, fresh dataset per round:
 *
 *   cassette → sqlite     store.put: data + 2 metadata rows per sample, one transaction per 512
 *   raw sqlite            one INSERT per sample into a single table, same transactions
 *   cassette → cassandra  store.put: one logged batch of 3 rows per sample, 64 in flight
 *   raw driver            one prepared INSERT per sample into a single table, 64 in flight
 *
 * Then: building splits over 1 million synthetic metadata rows (10 000 patients).
 *
 *   bun bench/ingest.bench.ts [--samples N] [--rounds R] [--store-cassandra URL]
 * Cassandra contenders run when a node answers (cassette cassandra start; with auth, pass
 * --store-cassandra cassandra://cassandra:cassandra@127.0.0.1:9042/cassette_bench).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runtime } from "../runtime-adapters/index.ts";
import { readIdxDataset } from "../src/dataset/idx.ts";
import { encodeGrey } from "../src/dataset/ingest.ts";
import { createSplits } from "../src/dataset/splits.ts";
import type { DatasetSpec } from "../src/dataset/spec.ts";
import { sampleId } from "../src/dataset/sample_id.ts";
import { openStore } from "../src/source/open.ts";
import { CassandraStore } from "../src/source/cassandra/cassandra.ts";
import type { NatRow, SampleInput, Store } from "../src/dataset/store.ts";
import { mapLimit } from "../src/util/map_limit.ts";
import { compare, type Contender } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/ingest.bench.ts",
  usage: "usage: bun bench/ingest.bench.ts [--samples N] [--rounds R] [--store-cassandra URL] [--quick]",
  valued: ["samples", "rounds", "store-cassandra"],
  flags: ["quick"],
});
const quick = args.has("quick");
const N = args.int("samples", quick ? 1000 : 5000);
const rounds = args.int("rounds", quick ? 2 : 5);
const cassandraUrl = args.str("store-cassandra", "cassandra://cassandra:cassandra@127.0.0.1:9042/cassette_bench");

const [train] = await readIdxDataset("/usr/share/datasets/fashion-mnist/");
const samples: SampleInput[] = Array.from({ length: N }, (_, i) => ({
  key: `train/${i}`,
  label: train.labels[i % train.count],
  data: encodeGrey(train.images.subarray((i % train.count) * 784, (i % train.count + 1) * 784), 28, 28, 90),
  meta: { split: "train", idx: i },
}));
const bytes = samples.reduce((n, s) => n + s.data.length, 0);
const spec = (name: string): DatasetSpec => ({
  version: 1, name, columns: [{ name: "split", type: "text" }, { name: "idx", type: "int" }], groupBy: [], label: { kind: "int" },
});
console.log(`${runtime.name} ${runtime.version}: ${N} Fashion-MNIST JPEGs (${(bytes / N).toFixed(0)} B each), ${rounds} rounds`);

const dir = mkdtempSync(join(tmpdir(), "cassette-bench-ingest-"));
let round = 0;
const contenders: Contender[] = [];

const sqlite = await openStore(`sqlite:${join(dir, "cassette.sqlite")}`);
contenders.push({
  name: "cassette → sqlite", work: N, run: async () => {
    const name = `b${round++}`;
    await sqlite.createDataset(spec(name));
    for (let i = 0; i < N; i += 512) await sqlite.put(name, samples.slice(i, i + 512));
  },
});
const raw = runtime.openSqlite(join(dir, "raw.sqlite"));
raw.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
let rawRound = 0;
contenders.push({
  name: "raw sqlite", baseline: true, work: N, run: () => {
    const t = `raw${rawRound++}`;
    raw.exec(`CREATE TABLE ${t} (id TEXT PRIMARY KEY, label INTEGER, data BLOB)`);
    const ins = raw.prepare(`INSERT INTO ${t} VALUES (?, ?, ?)`);
    for (let i = 0; i < N; i += 512) {
      raw.exec("BEGIN");
      for (const s of samples.slice(i, i + 512)) ins.run(sampleId(t, s.key), s.label as number, s.data);
      raw.exec("COMMIT");
    }
  },
});

let cass: Store | undefined;
try {
  cass = await openStore(cassandraUrl, { cassandra: { connectTimeoutMs: 3000 } });
} catch (e) {
  console.log(`(Cassandra contenders skipped: ${(e as Error).message})`);
}
if (cass instanceof CassandraStore) {
  const c = cass;
  const stamp = Date.now() % 1e7;
  await c.client.execute(`CREATE TABLE IF NOT EXISTS ${c.keyspace}.raw_${stamp} (id uuid PRIMARY KEY, label int, data blob)`);
  contenders.push({
    name: "cassette → cassandra", work: N, run: async () => {
      const name = `b${stamp}-${round++}`;
      await c.createDataset(spec(name));
      // As ingest writes: stored ids were filtered out just before (a fresh dataset here).
      for (let i = 0; i < N; i += 512) await c.put(name, samples.slice(i, i + 512), { checked: true });
    },
  });
  let r = 0;
  contenders.push({
    name: "raw driver", work: N, run: async () => {
      const salt = `r${r++}`;
      await mapLimit(samples, 64, (s) =>
        c.client.execute(`INSERT INTO ${c.keyspace}.raw_${stamp} (id, label, data) VALUES (?, ?, ?)`, [sampleId(salt, s.key), s.label, Buffer.from(s.data)], { prepare: true }));
    },
  });
}
await compare("ingest of pre-encoded JPEGs (samples/s)", { unit: "samples/s", rounds, warmup: 0 }, contenders);

// Splits over 1 M metadata rows.
const rows: NatRow[] = [];
let s = 12345;
const next = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
for (let p = 0; rows.length < 1_000_000; p++) {
  const n = 20 + Math.floor(next() * 180);
  for (let x = 0; x < n && rows.length < 1_000_000; x++) rows.push({ id: `${p}-${x}`, label: next() < 0.2 ? 1 : 0, meta: { patient_id: `P${p}` } });
}
const splitSpec: DatasetSpec = { version: 1, name: "synthetic", columns: [{ name: "patient_id", type: "text" }], groupBy: [], label: { kind: "int" } };
await compare("splits over 1 000 000 rows (rows/s)", { unit: "rows/s", rounds: quick ? 1 : 3, warmup: 0 }, [
  { name: "grouped by patient, 7:2:1, balance equal", work: rows.length, run: () => createSplits(splitSpec, rows, { ratios: [7, 2, 1], groupBy: ["patient_id"], balance: "equal" }) },
  { name: "ungrouped, 7:2:1", work: rows.length, baseline: true, run: () => createSplits(splitSpec, rows, { ratios: [7, 2, 1] }) },
]);

await sqlite.close();
raw.close();
await cass?.close();
rmSync(dir, { recursive: true, force: true });
runtime.exit(0);
