/**
 * Chaos (issue 19): does every epoch still deliver each sample exactly once, with its stored
 * bytes, while real processes and connections fail underneath? A seeded random schedule of
 * faults runs against a three-node cluster at replication 3, during reads and during an ingest:
 *
 *   node faults (real processes)   kill -9 and restart mid-epoch; kill -9 and left down for the
 *                                  rest of the epoch; SIGSTOP for longer than the driver's
 *                                  request timeout, then SIGCONT
 *   network faults (the proxy)     a reset (mid-response), a stall, a one-way partition either
 *                                  way, one connection or all of a node's, every few hundred ms
 *   ingest                         kill -9 of a node mid-ingest: no sample half-written (a data
 *                                  row without its metadata rows or the reverse), and a re-run
 *                                  completes it with no duplicate
 *
 * At most one node fault and one network fault hold at once, so at least one replica of each
 * sample stays up: every epoch must complete. Every delivered sample's bytes are checked
 * against a SHA-1 of the stored ones (read at ALL before the faults start).
 *
 *   bun bench/chaos.bench.ts [--quick] [--seed S] [--json] …     (--help for every option)
 * Needs its own cluster running (see --help); prints a table; records go in bench/RESULTS.md.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import process from "node:process";
import cassandra from "cassandra-driver";
import { runtime } from "../runtime-adapters/index.ts";
import { rng } from "../src/plan/rng.ts";
import { CassandraStore } from "../src/source/cassandra/cassandra.ts";
import { openCassandra } from "../src/source/cassandra/cassandra_client.ts";
import { ingest } from "../src/dataset/ingest.ts";
import { tables } from "../src/dataset/schema.ts";
import { Loader } from "../src/loader.ts";
import { type Fault, type FaultSpec } from "../tools/proxy/proxy.ts";
import { type CassandraProxies, startCassandraProxies } from "../tools/proxy/cassandra.ts";
import { benchArgs } from "./_lib/args.ts";

const RUN = runtime.env("CASSETTE_CASSANDRA_RUN") ?? "/tmp/cassette-chaos";
const CQL_PORT = Number(runtime.env("CASSETTE_CQL_PORT") ?? 9342);
const STORAGE_PORT = Number(runtime.env("CASSETTE_STORAGE_PORT") ?? 7300);

const USAGE = `usage: bun bench/chaos.bench.ts [options]
  Seeded random faults on a 3-node cluster (RF 3) during reads and an ingest; prints, per fault:
  count injected, epochs completed, samples delivered, lost, duplicated, bytes mismatched, and
  p99 batch wait during the fault vs with no fault.
  --seed S              the schedule's seed (default 1): the same seed, the same plan of faults
  --quick               a short run (~2 min): 1 SIGSTOP, 1 kill+restart, 24 proxy faults, 1 ingest kill
  --samples N           samples per epoch (default 2000 = 1000 per Fashion-MNIST split; --quick 1000)
  --batch B             batch size (default 32)
  --step-ms S           the consumer spends S ms per batch, standing in for a training step (default 10)
  --proxy-faults N      read until at least N network faults are injected (default 220; --quick 24)
  --read-timeout-ms T   the driver's per-request timeout (default 2000; a SIGSTOP lasts 2.5 × T)
  --ingest-samples N    samples per ingest under a kill (default 2000; --quick 1000)
  --start               start the cluster first if it is not running (it is left running)
  --json                print the results as one JSON document at the end
The cluster is its own, on its own ports and run folder, started with:
  CASSETTE_CASSANDRA_RUN=${RUN} CASSETTE_CQL_PORT=${CQL_PORT} CASSETTE_STORAGE_PORT=${STORAGE_PORT} \\
    bash tools/cassandra/cassandra.sh start --nodes 3
(the same variables choose another cluster; ... stop, with them set, deletes it). The bench
kills, freezes and restarts that cluster's nodes only, and leaves all three running at the end.`;

const args = benchArgs({
  program: "bench/chaos.bench.ts",
  usage: USAGE,
  valued: ["seed", "samples", "batch", "step-ms", "proxy-faults", "read-timeout-ms", "ingest-samples"],
  flags: ["quick", "start", "json"],
});
const quick = args.has("quick");
const seed = args.int("seed", 1, 0);
const samples = args.int("samples", quick ? 1000 : 2000, 2);
const batchSize = args.int("batch", 32);
const stepMs = args.num("step-ms", 10);
const minProxyFaults = args.int("proxy-faults", quick ? 24 : 220, 0);
const readTimeoutMs = args.int("read-timeout-ms", 2000);
const ingestSamples = args.int("ingest-samples", quick ? 1000 : 2000, 2);
const json = args.has("json");
const log = (line: string) => console.error(`[${((runtime.now() - T0) / 1000).toFixed(1).padStart(6)} s] ${line}`);
const T0 = runtime.now();
// One stream per actor: the network faults, drawn as fast as the timers allow, do not shift
// which node the node faults pick, so a seed names the same plan from run to run.
const NET = rng(seed, 1), NODE = rng(seed, 2), INGEST = rng(seed, 3);

const KEYSPACE = "cassette_chaos";
const READ_SET = "chaos-read";
const HOSTS = [1, 2, 3].map((n) => `127.0.0.${n}`);
const DIRECT = `cassandra://${HOSTS.join(",")}:${CQL_PORT}/${KEYSPACE}`;
const IDX = "idx:/usr/share/datasets/fashion-mnist/";
const STOP_MS = Math.round(2.5 * readTimeoutMs);
/** A reset holds nothing: batches this long after it count as "during" it (the reconnection). */
const RESET_AFTERMATH_MS = 1000;

// --- the cluster: this bench's own, through tools/cassandra/cassandra.sh ----------------------

const clusterEnv = {
  ...process.env,
  CASSETTE_CASSANDRA_RUN: RUN,
  CASSETTE_CQL_PORT: String(CQL_PORT),
  CASSETTE_STORAGE_PORT: String(STORAGE_PORT),
  // Logins off, as the cluster was started: a node restarted with another setting would refuse us.
  CASSETTE_CASSANDRA_AUTH: "AllowAllAuthenticator",
};
const SCRIPT = new URL("../tools/cassandra/cassandra.sh", import.meta.url).pathname;

interface NodeStatus {
  node: number;
  pid: number | null;
  running: boolean;
}

function status(): NodeStatus[] {
  const r = spawnSync("bash", [SCRIPT, "status", "--json"], { encoding: "utf8", env: clusterEnv });
  try {
    return JSON.parse(r.stdout) as NodeStatus[];
  } catch {
    return [];
  }
}

function pidOf(node: number): number {
  const s = status().find((n) => n.node === node);
  if (!s?.running || !s.pid) throw new Error(`node ${node} of ${RUN} is not running: ${JSON.stringify(s)}`);
  return s.pid;
}

function signal(pid: number, sig: "KILL" | "STOP" | "CONT"): void {
  const r = spawnSync("kill", [`-${sig}`, String(pid)]);
  if (r.status !== 0) throw new Error(`kill -${sig} ${pid} failed: ${r.stderr}`);
}

/** `cassandra.sh restart --node N`: resolves once the node answers and its peers see it (20–60 s here). */
function restart(node: number): Promise<number> {
  const t0 = runtime.now();
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [SCRIPT, "restart", "--node", String(node)], { env: clusterEnv, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    child.on("close", (code) => {
      if (code === 0) return resolve(runtime.now() - t0);
      // The node may be up all the same: bash reads a script as it runs, so an edit of
      // cassandra.sh during a restart (seen once, others work in this tree) fails its tail.
      if (status().find((n) => n.node === node)?.running) {
        log(`restart --node ${node} exited ${code}, but the node runs: ${out.trim().split("\n").pop()}`);
        return resolve(runtime.now() - t0);
      }
      reject(new Error(`restart --node ${node} exited ${code}: ${out.trim()}`));
    });
  });
}

// --- fault bookkeeping -------------------------------------------------------------------------

const KINDS = [
  "kill -9, restart mid-epoch",
  "kill -9, down for the epoch",
  "SIGSTOP > request timeout",
  "proxy reset",
  "proxy stall",
  "proxy partition up",
  "proxy partition down",
  "kill -9 mid-ingest",
] as const;
type Kind = typeof KINDS[number];

/** When a fault held: batches that waited in [from, to] count as during it. */
interface Window {
  kind: Kind;
  from: number;
  to: number;
}
const windows: Window[] = [];
const injected = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
function begin(kind: Kind): Window {
  injected[kind]++;
  const w = { kind, from: runtime.now(), to: Infinity };
  windows.push(w);
  return w;
}
const networkFaults = () => injected["proxy reset"] + injected["proxy stall"] + injected["proxy partition up"] + injected["proxy partition down"];

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const sha1 = (b: Uint8Array) => createHash("sha1").update(b).digest("hex");
const between = (r: { next(): number }, lo: number, hi: number) => lo + r.next() * (hi - lo);

// --- reads ---------------------------------------------------------------------------------------

interface EpochRecord {
  epoch: number;
  from: number;
  to: number;
  delivered: number;
  lost: number;
  duplicated: number;
  mismatched: number;
  error?: string;
  /** Each batch: when it arrived and how long the consumer waited for it. */
  batches: { at: number; ms: number }[];
  retries: number;
}

interface ReadState {
  stop: boolean;
  epoch: number;
  /** Resolves when the epoch running now ends (for "down for the epoch"). */
  epochEnd: Promise<void>;
  /** Resolves when the next epoch (or the one just begun) delivers its first batch. */
  epochStart: Promise<void>;
}

async function readEpochs(route: CassandraProxies, ids: string[], sums: Map<string, string>, state: ReadState, out: EpochRecord[]): Promise<void> {
  const [first] = route.proxies;
  const store = await CassandraStore.open(`cassandra://${first.host}:${first.port}/${KEYSPACE}`, {
    driver: {
      policies: {
        addressResolution: route.translator,
        reconnection: new cassandra.policies.reconnection.ConstantReconnectionPolicy(1000),
      },
      socketOptions: { readTimeout: readTimeoutMs },
    },
  });
  const newLoader = () => new Loader({ store, dataset: READ_SET, ids, batchSize, retries: 10, hedge: true, reaskTail: true, seed });
  let loader = newLoader();
  let lastLine = 0;
  let endEpoch = () => {}, startEpoch = () => {};
  state.epochStart = new Promise((r) => (startEpoch = r));
  try {
    for (let e = 0; !state.stop; e++) {
      state.epoch = e;
      state.epochEnd = new Promise((r) => (endEpoch = r));
      let started = false;
      const rec: EpochRecord = { epoch: e, from: runtime.now(), to: 0, delivered: 0, lost: 0, duplicated: 0, mismatched: 0, batches: [], retries: 0 };
      const seen = new Set<string>();
      const retries0 = loader.stats().retries;
      let last = runtime.now();
      try {
        for await (const b of loader.epoch(e)) {
          const now = runtime.now();
          rec.batches.push({ at: now, ms: now - last });
          b.ids.forEach((id, i) => {
            if (seen.has(id)) rec.duplicated++;
            seen.add(id);
            if (sha1(b.data.subarray(b.offsets[i], b.offsets[i + 1])) !== sums.get(id)) rec.mismatched++;
          });
          rec.delivered += b.ids.length;
          if (!started) started = true, startEpoch();
          if (stepMs > 0) await sleep(stepMs);
          last = runtime.now();
        }
      } catch (err) {
        rec.error = (err as Error).message;
      }
      rec.retries = loader.stats().retries - retries0;
      if (rec.error) {
        await loader.close().catch(() => {});
        loader = newLoader(); // a loader whose epoch threw is not reused
      }
      rec.to = runtime.now();
      rec.lost = ids.length - seen.size;
      out.push(rec);
      // The next epoch's start is a new promise, unless this one never started (a waiter keeps it).
      if (started) state.epochStart = new Promise((r) => (startEpoch = r));
      endEpoch();
      const p99 = quantile(rec.batches.map((x) => x.ms), 0.99);
      // A line per epoch that went wrong, else one every 10 s: epochs take about a second.
      if (!rec.error && rec.lost + rec.duplicated + rec.mismatched === 0 && rec.to - lastLine < 10_000) continue;
      lastLine = rec.to;
      log(`epoch ${e}: ${rec.delivered}/${ids.length} delivered, ${rec.lost} lost, ${rec.duplicated} dup, ${rec.mismatched} mismatched, ${((rec.to - rec.from) / 1000).toFixed(1)} s, p99 wait ${p99.toFixed(0)} ms, ${rec.retries} retries; network faults so far ${networkFaults()}${rec.error ? `; FAILED: ${rec.error}` : ""}`);
    }
  } finally {
    endEpoch();
    await loader.close();
    await store.close();
  }
}

/** Network faults, one at a time, on a random node's proxy, until told to stop. */
async function networkChaos(route: CassandraProxies, state: { stop: boolean }): Promise<void> {
  const kinds: [Kind, FaultSpec][] = [
    ["proxy reset", { kind: "reset" }],
    ["proxy stall", { kind: "stall" }],
    ["proxy partition up", { kind: "partition", direction: "up" }],
    ["proxy partition down", { kind: "partition", direction: "down" }],
  ];
  while (!state.stop) {
    await sleep(between(NET, 100, 500));
    if (state.stop) break;
    const proxy = route.proxies[NET.int(route.proxies.length)];
    const [kind, base] = kinds[NET.int(kinds.length)];
    // Half on every connection of the node, half on one open connection.
    const open = proxy.stats().connections.filter((c) => c.closedAt === undefined).map((c) => c.index);
    const spec: FaultSpec = NET.next() < 0.5 && open.length > 0 ? { ...base, connection: open[NET.int(open.length)] } : base;
    let f: Fault;
    try {
      f = proxy.fault(spec);
    } catch {
      continue; // the chosen connection closed in between
    }
    const w = begin(kind);
    if (f.healed) {
      w.to = w.from + RESET_AFTERMATH_MS;
      continue;
    }
    // Half shorter than the request timeout, half longer: requests wait, or time out and are retried.
    await sleep(NET.next() < 0.5 ? between(NET, 200, readTimeoutMs * 0.8) : between(NET, readTimeoutMs * 1.1, readTimeoutMs * 1.6));
    f.heal();
    w.to = runtime.now();
  }
}

type NodeKind = "kill -9, restart mid-epoch" | "kill -9, down for the epoch" | "SIGSTOP > request timeout";

/** The node faults of `plan`, in order, each on a random node, a few seconds apart. */
async function nodeChaos(plan: NodeKind[], reads: ReadState): Promise<void> {
  for (const kind of plan) {
    await sleep(between(NODE, 3000, 8000));
    const node = 1 + NODE.int(3);
    if (kind === "kill -9, down for the epoch") {
      await reads.epochStart; // killed as an epoch starts, back only once it has ended
      const ending = reads.epochEnd;
      const w = begin(kind);
      signal(pidOf(node), "KILL");
      log(`node ${node}: kill -9 in epoch ${reads.epoch}, down until it ends`);
      await ending;
      const ms = await restart(node);
      w.to = runtime.now();
      log(`node ${node}: restarted after the epoch in ${(ms / 1000).toFixed(1)} s`);
    } else if (kind === "kill -9, restart mid-epoch") {
      const w = begin(kind);
      signal(pidOf(node), "KILL");
      log(`node ${node}: kill -9 in epoch ${reads.epoch}`);
      await sleep(between(NODE, 500, 3000));
      const ms = await restart(node);
      w.to = runtime.now();
      log(`node ${node}: restarted in ${(ms / 1000).toFixed(1)} s (epoch ${reads.epoch} now)`);
    } else {
      const pid = pidOf(node);
      const w = begin(kind);
      signal(pid, "STOP");
      log(`node ${node}: SIGSTOP for ${STOP_MS} ms (request timeout ${readTimeoutMs} ms) in epoch ${reads.epoch}`);
      try {
        await sleep(STOP_MS);
      } finally {
        signal(pid, "CONT");
      }
      w.to = runtime.now();
    }
  }
}

// --- ingest under a kill --------------------------------------------------------------------------

interface IngestRecord {
  dataset: string;
  node: number;
  killedAt: number;
  firstRun: string;
  /** Samples with some but not all of their three rows, after the killed node is back (read at ALL). */
  halfWritten: number;
  /** The same after the re-run. */
  halfWrittenAfterRerun: number;
  /** After the re-run: samples with all three rows, samples missing, rows beyond one per sample. */
  stored: number;
  missing: number;
  duplicated: number;
  rerun: { written: number; existing: number };
}

/**
 * tableIds, asked again while a replica is not yet seen up: a restarted node answers CQL before
 * every peer's gossip has it alive, and a read at ALL then fails as Unavailable (seen here).
 */
async function tableIdsAtAll(checker: CassandraStore, dataset: string): Promise<{ ids: Set<string>[]; rows: number[] }> {
  const deadline = runtime.now() + 120_000;
  for (;;) {
    try {
      return await tableIds(checker, dataset);
    } catch (e) {
      const code = (e as { code?: number }).code;
      if ((code !== 0x1000 && code !== 0x1200) || runtime.now() > deadline) throw e; // unavailable, read timeout
      await sleep(1000);
    }
  }
}

/** Ids in each of the dataset's three tables, read at ALL, and the rows counted (a duplicate would be a second row). */
async function tableIds(checker: CassandraStore, dataset: string): Promise<{ ids: Set<string>[]; rows: number[] }> {
  const t = tables(dataset);
  const ids: Set<string>[] = [], rows: number[] = [];
  for (const table of [t.data, t.byUuid, t.byNat]) {
    const s = new Set<string>();
    let n = 0;
    let pageState: string | undefined;
    do {
      const r = await checker.client.execute(`SELECT id FROM ${KEYSPACE}.${table}`, [], { prepare: true, fetchSize: 1000, pageState });
      for (const row of r.rows) s.add(row.id.toString()), n++;
      pageState = r.pageState ?? undefined;
    } while (pageState);
    ids.push(s);
    rows.push(n);
  }
  return { ids, rows };
}

async function ingestUnderKill(round: number, checker: CassandraStore): Promise<IngestRecord> {
  const dataset = `chaos-ingest-${round}`;
  const node = 1 + INGEST.int(3);
  const killAt = between(INGEST, 0.2, 0.6);
  const perSplit = Math.ceil(ingestSamples / 2);
  const store = await CassandraStore.open(DIRECT);
  let w: Window | undefined;
  let firstRun: string;
  try {
    const s = await ingest(store, IDX, {
      dataset, limit: perSplit, chunk: 128,
      onProgress: (p) => {
        if (!w && p.done / p.total >= killAt) {
          w = begin("kill -9 mid-ingest");
          signal(pidOf(node), "KILL");
          log(`ingest ${dataset}: node ${node} kill -9 at ${p.done}/${p.total}`);
        }
      },
    });
    firstRun = `completed: ${s.written} written, ${s.existing} existing${s.interrupted ? ", interrupted" : ""}`;
  } catch (e) {
    firstRun = `failed: ${(e as Error).message.slice(0, 400)}`;
  } finally {
    await store.close().catch(() => {});
  }
  log(`ingest ${dataset}, first run (node ${node} killed): ${firstRun}`);
  if (w) {
    const ms = await restart(node);
    w.to = runtime.now();
    log(`node ${node}: restarted in ${(ms / 1000).toFixed(1)} s`);
  }
  const half = (x: { ids: Set<string>[] }) => {
    const all = new Set(x.ids.flatMap((s) => [...s]));
    return [...all].filter((id) => !x.ids.every((s) => s.has(id))).length;
  };
  const after = await tableIdsAtAll(checker, dataset);
  const halfWritten = half(after);
  const again = await CassandraStore.open(DIRECT);
  let rerun = { written: 0, existing: 0 };
  try {
    const s = await ingest(again, IDX, { dataset, limit: perSplit, chunk: 128 });
    rerun = { written: s.written, existing: s.existing };
  } finally {
    await again.close();
  }
  const final = await tableIdsAtAll(checker, dataset);
  const complete = [...final.ids[0]].filter((id) => final.ids.every((s) => s.has(id))).length;
  const rec: IngestRecord = {
    dataset, node, killedAt: killAt, firstRun, halfWritten, halfWrittenAfterRerun: half(final),
    stored: complete,
    missing: 2 * perSplit - complete,
    // A sample's id is each table's key, so a second row of one would be a row beyond its ids.
    duplicated: final.rows.reduce((s, n, i) => s + n - final.ids[i].size, 0),
    rerun,
  };
  log(`ingest ${dataset}: ${halfWritten} half-written after the kill; re-run wrote ${rerun.written}, found ${rerun.existing}; now ${complete}/${2 * perSplit} whole, ${rec.missing} missing, ${rec.duplicated} extra rows, ${rec.halfWrittenAfterRerun} half-written`);
  return rec;
}

// --- the run ---------------------------------------------------------------------------------------

function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

async function ensureCluster(): Promise<void> {
  if (status().filter((n) => n.running).length === 3) return;
  if (!args.has("start")) {
    console.error(`bench/chaos.bench.ts: the cluster in ${RUN} (CQL port ${CQL_PORT}) does not have 3 nodes running; start it (see --help) or pass --start`);
    runtime.exit(2);
  }
  log(`starting the cluster in ${RUN} …`);
  const r = spawnSync("bash", [SCRIPT, "start", "--nodes", "3"], { encoding: "utf8", env: clusterEnv, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error("the cluster did not start");
}

/** Leaves the cluster whole: frozen nodes thawed, dead ones restarted. */
async function mend(): Promise<void> {
  for (const n of status()) {
    if (n.pid) spawnSync("kill", ["-CONT", String(n.pid)]);
    if (!n.running) await restart(n.node).catch((e) => log(`could not restart node ${n.node}: ${(e as Error).message}`));
  }
}

await ensureCluster();
const plan: NodeKind[] = quick
  ? ["SIGSTOP > request timeout", "kill -9, restart mid-epoch"]
  : ["SIGSTOP > request timeout", "kill -9, restart mid-epoch", "kill -9, down for the epoch", "SIGSTOP > request timeout", "kill -9, restart mid-epoch", "SIGSTOP > request timeout"];
// Shuffled by the seed (Fisher–Yates), so seeds differ in order as well as in timing.
for (let i = plan.length - 1; i > 0; i--) {
  const j = NODE.int(i + 1);
  [plan[i], plan[j]] = [plan[j], plan[i]];
}
const ingestKills = quick ? 1 : 2;
log(`seed ${seed}: ${samples} samples per epoch, batch ${batchSize}, step ${stepMs} ms, read timeout ${readTimeoutMs} ms; node faults ${plan.join(" → ")}; ≥ ${minProxyFaults} network faults; ${ingestKills} ingest kill(s) of ${ingestSamples} samples`);

// A fresh keyspace, the read set written at ALL: every replica holds every sample before a fault.
const admin = await openCassandra(DIRECT, { withoutKeyspace: true });
await admin.execute(`DROP KEYSPACE IF EXISTS ${KEYSPACE}`);
await admin.shutdown();
const ALL = { queryOptions: { consistency: cassandra.types.consistencies.all } };
const writer = await CassandraStore.open(DIRECT, { replication: 3, driver: ALL });
const checker = await CassandraStore.open(DIRECT, { driver: ALL });
const epochs: EpochRecord[] = [];
const ingests: IngestRecord[] = [];
const ingestFailures: string[] = [];
let route: CassandraProxies | undefined;
try {
  const t = runtime.now();
  await ingest(writer, IDX, { dataset: READ_SET, limit: Math.ceil(samples / 2) });
  const ids: string[] = [];
  for await (const page of checker.scanNat(READ_SET)) ids.push(...page.map((r) => r.id));
  const sums = new Map((await checker.get(READ_SET, ids)).map((s) => [s.id, sha1(s.data)]));
  log(`read set: ${ids.length} samples written at ALL and checksummed in ${((runtime.now() - t) / 1000).toFixed(1)} s`);

  route = await startCassandraProxies({ nodes: HOSTS.map((host) => ({ host, port: CQL_PORT })), profile: { delayMs: 1 } });
  const reads: ReadState = { stop: false, epoch: 0, epochEnd: Promise.resolve(), epochStart: Promise.resolve() };
  const net = { stop: false };
  let readsDone = false;
  const reading = readEpochs(route, ids, sums, reads, epochs).finally(() => (readsDone = true));
  const networking = networkChaos(route, net);
  const nodes = nodeChaos(plan, reads).catch((e) => log(`node faults stopped: ${(e as Error).message}`));
  let lastReport = 0;
  // Until every node fault is done and enough network faults are in; then one quiet epoch more.
  let nodesDone = false;
  void nodes.then(() => (nodesDone = true));
  while (!(nodesDone && networkFaults() >= minProxyFaults) && !readsDone) {
    await sleep(1000);
    if (runtime.now() - lastReport > 15_000) {
      lastReport = runtime.now();
      log(`faults so far: ${KINDS.filter((k) => injected[k]).map((k) => `${k} ${injected[k]}`).join(", ")}`);
    }
  }
  net.stop = true;
  await networking;
  const doneAt = epochs.length;
  while (epochs.length < doneAt + 2 && !readsDone) await sleep(200); // the epoch in flight, and one with no fault at all
  reads.stop = true;
  await reading;
  await route.close();
  route = undefined;

  for (let i = 0; i < ingestKills; i++) {
    try {
      ingests.push(await ingestUnderKill(i, checker));
    } catch (e) {
      // Reported in the table as an ingest not shown complete, not as a crash of the whole run.
      ingestFailures.push(`ingest ${i}: ${(e as Error).message}`);
      log(`ingest ${i} could not be checked: ${(e as Error).message}`);
    }
  }
} finally {
  await route?.close();
  await mend();
  await writer.close();
  await checker.close();
}

// --- the table -------------------------------------------------------------------------------------

const overlaps = (a: { from: number; to: number }, b: { from: number; to: number }) => a.from <= b.to && b.from <= a.to;
const batchesOf = (e: EpochRecord) => e.batches.map((b) => ({ from: b.at - b.ms, to: b.at, ms: b.ms }));
// Epoch 0 warms up (connections, prepared statements, the window's ramp): not counted in the p99s.
const allBatches = epochs.filter((e) => e.epoch > 0).flatMap(batchesOf);
const quiet = allBatches.filter((b) => !windows.some((w) => overlaps(b, w)));
const p99Quiet = quantile(quiet.map((b) => b.ms), 0.99);
const maxQuiet = Math.max(...quiet.map((b) => b.ms));

interface Row {
  fault: string;
  injected: number;
  epochs: string;
  delivered: number;
  lost: number;
  duplicated: number;
  mismatched: number;
  p99During: number;
  p99Without: number;
  /** The longest wait during the fault: the p99 hides a stall of a few batches. */
  maxDuring: number;
}
const rows: Row[] = [];
for (const kind of KINDS.filter((k) => k !== "kill -9 mid-ingest")) {
  const ws = windows.filter((w) => w.kind === kind);
  const hit = epochs.filter((e) => ws.some((w) => overlaps(e, w)));
  const during = allBatches.filter((b) => ws.some((w) => overlaps(b, w)));
  rows.push({
    fault: kind,
    injected: injected[kind],
    epochs: `${hit.filter((e) => !e.error).length}/${hit.length}`,
    delivered: hit.reduce((s, e) => s + e.delivered, 0),
    lost: hit.reduce((s, e) => s + e.lost, 0),
    duplicated: hit.reduce((s, e) => s + e.duplicated, 0),
    mismatched: hit.reduce((s, e) => s + e.mismatched, 0),
    p99During: quantile(during.map((b) => b.ms), 0.99),
    p99Without: p99Quiet,
    maxDuring: Math.max(...during.map((b) => b.ms)),
  });
}
rows.push({
  fault: "all reads",
  injected: KINDS.reduce((s, k) => s + (k === "kill -9 mid-ingest" ? 0 : injected[k]), 0),
  epochs: `${epochs.filter((e) => !e.error).length}/${epochs.length}`,
  delivered: epochs.reduce((s, e) => s + e.delivered, 0),
  lost: epochs.reduce((s, e) => s + e.lost, 0),
  duplicated: epochs.reduce((s, e) => s + e.duplicated, 0),
  mismatched: epochs.reduce((s, e) => s + e.mismatched, 0),
  p99During: quantile(allBatches.filter((b) => windows.some((w) => overlaps(b, w))).map((b) => b.ms), 0.99),
  p99Without: p99Quiet,
  maxDuring: Math.max(...allBatches.filter((b) => windows.some((w) => overlaps(b, w))).map((b) => b.ms)),
});
// The ingest row: epochs = ingests completed by the re-run; delivered = samples stored whole;
// lost = missing after the re-run; duplicated = extra rows; mismatched = half-written samples.
rows.push({
  fault: "kill -9 mid-ingest",
  injected: injected["kill -9 mid-ingest"],
  epochs: `${ingests.filter((i) => i.missing === 0).length}/${ingests.length + ingestFailures.length} ingests`,
  delivered: ingests.reduce((s, i) => s + i.stored, 0),
  lost: ingests.reduce((s, i) => s + i.missing, 0),
  duplicated: ingests.reduce((s, i) => s + i.duplicated, 0),
  mismatched: ingests.reduce((s, i) => s + i.halfWritten, 0),
  p99During: NaN,
  p99Without: NaN,
  maxDuring: NaN,
});

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "–");
const head = ["fault", "injected", "epochs completed", "samples delivered", "lost", "duplicated", "mismatched", "p99 wait during (ms)", "p99 wait without (ms)", "max wait during (ms)"];
const cells = rows.map((r) => [r.fault, String(r.injected), r.epochs, String(r.delivered), String(r.lost), String(r.duplicated), String(r.mismatched), ms(r.p99During), ms(r.p99Without), ms(r.maxDuring)]);
const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
const total = networkFaults() + injected["kill -9, restart mid-epoch"] + injected["kill -9, down for the epoch"] + injected["SIGSTOP > request timeout"] + injected["kill -9 mid-ingest"];
const bad = rows.reduce((s, r) => s + r.lost + r.duplicated + r.mismatched, 0) + epochs.filter((e) => e.error).length + ingestFailures.length;
if (json) {
  console.log(JSON.stringify({ seed, quick, samples, batchSize, stepMs, readTimeoutMs, runtime: `${runtime.name} ${runtime.version}`, seconds: (runtime.now() - T0) / 1000, faults: total, targetMet: bad === 0, rows, ingests, ingestFailures, epochs: epochs.map(({ batches, ...e }) => ({ ...e, batches: batches.length })) }, null, 1));
} else {
  console.log(`\nChaos, seed ${seed} (${runtime.name} ${runtime.version}): ${total} faults in ${((runtime.now() - T0) / 60_000).toFixed(1)} min, ${epochs.length} epochs of ${samples} samples`);
  console.log([head, ...cells].map((r) => r.map((x, i) => (i === 0 ? x.padEnd(w[i]) : x.padStart(w[i]))).join("  ")).join("\n"));
  console.log(`(a fault's row counts the epochs it overlapped, a node fault's until the node is back; "wait" = how long the consumer waited for a batch; "without" = batches while no fault held, ${quiet.length} of them, max ${ms(maxQuiet)} ms; epoch 0 not counted in waits; the ingest row: epochs = ingests complete after the re-run, mismatched = samples half-written after the kill)`);
  console.log(bad === 0 ? `target met: 0 lost, 0 duplicated, 0 mismatched, every epoch completed, over ${total} faults` : `TARGET MISSED: ${bad} lost/duplicated/mismatched samples or failed epochs (see above)`);
}
for (const e of epochs.filter((e) => e.error)) console.error(`epoch ${e.epoch} failed: ${e.error}`);
for (const f of ingestFailures) console.error(f);
runtime.exit(bad === 0 ? 0 : 1);
