/**
 * cassette beside the Python loaders people use today (issue 20; §5 of "Hiding Latencies…"
 * (arXiv:2503.22643) at this machine's scale): every contender reads the same dataset from the same
 * Cassandra node through the same latency proxy, makes its training tensor batch by batch, and runs
 * as its own process. Contenders run interleaved, round by round, in each setting, so that a slow
 * minute of the shared machine falls on all of them alike.
 *
 *   cassette            cassette read --decode (the loader's thread reads and decodes)
 *   cassette-w2         the same with two read workers (a thread each, decoding where they read)
 *   cassette-pre        cassette read --preprocess: the training tensor made on the WebGPU
 *                       adapter (lavapipe on a machine without a GPU: on the same two cores)
 *   torch-w2            PyTorch DataLoader, 2 worker processes, one query at a time each
 *                       (bench/peers/torch_cassandra.py, PyTorch's defaults)
 *   torch-w4-t8         4 workers × 8 threads, in_order=False: ConcurrentDataLoader's design,
 *                       the best of a sweep on this machine (bench/peers/README.md)
 *   tfdata              tf.data, map(num_parallel_calls=AUTOTUNE) (bench/peers/tf_cassandra.py)
 *   tfdata-t16          the same on a private pool of 16 threads, not deterministic: its best here
 *   streaming           MosaicML Streaming: MDS shards of the same samples served by nginx
 *                       through the proxy (bench/peers/streaming_mds.py)
 *   cassette-cpu-wds    the same tensor over WebDataset shards of the same samples (cassette
 *                       export --format webdataset) from nginx through the proxy, with cassette's
 *                       defaults for shards (one stream, a decode pool): Streaming's server, not
 *                       a Cassandra node on the same two cores
 *
 * Settings: RTT 0 (through the proxy, no delay), 20 ms, 150 ms, and one connection in four at
 * 1 MB/s at RTT 20 ms, fixed or moving every 2 s (tools/proxy's --congest-*).
 *
 * Per run: samples/s as the contender reports it (from its first iter(), or for cassette from
 * its loader's start with the store open), the rate after the first batch (from each batch's
 * hand-over time, the same rule for all), MB/s, CPU seconds per 1 000 samples of all the
 * contender's processes (from /proc: see treeCpu), peak resident memory of its process tree,
 * batch wait p50/p99 (the wait for a batch, a consumer step excluded), and the ratio to cassette.
 * Figures (SVG, into --out): time between batches per contender (the paper's Fig. 4), and each
 * contender's throughput per connection as the proxy saw it (Figs. 5-6), from the last round.
 *
 *   bun bench/peers.bench.ts [--set fm|inet] [--settings rtt0,rtt20,rtt150,congested,moving]
 *       [--contenders LIST] [--rounds R] [--batch B] [--step-ms S] [--quick] [--out DIR]
 *       [--json FILE] [--store cassandra://…/KEYSPACE]
 *
 * Needs a running node (cassette cassandra start) and the peers' environments
 * (bash bench/peers/env.sh torch|tf|streaming); a contender whose environment is not built is
 * left out with a line saying how to build it. Records go in bench/RESULTS.md.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { runtime } from "../runtime-adapters/index.ts";
import { CassandraStore } from "../src/source/cassandra/cassandra.ts";
import { ingest } from "../src/dataset/ingest.ts";
import { rng, shuffle } from "../src/plan/rng.ts";
import { parseStoreAddress } from "../src/source/kinds.ts";
import { lineChart } from "../src/observe/svg.ts";
import type { LoaderStats } from "../src/observe/stats.ts";
import { type BenchArgs, benchArgs } from "./_lib/args.ts";
import { startTimelineProxy, type TimelineProxy, wall } from "./read/timeline.ts";

const USAGE = `usage: bun bench/peers.bench.ts [options]
  --set fm|inet          fm: Fashion-MNIST (dataset fm10k, 10 000 samples; --quick: fm, 2 000),
                         1×28×28 grey tensors; inet: the ImageNet-like set (1 500 ~110 kB JPEGs),
                         3×224×224 random-resized-crop + flip + normalize (default fm)
  --dataset NAME         read this dataset of the store instead (it must exist)
  --settings LIST        any of rtt0,rtt20,rtt150,congested,moving (default all; --quick: rtt0,rtt150)
  --contenders LIST      any of ${"cassette,cassette-w2,cassette-pre,cassette-cpu,cassette-cpu-wds,torch-w2,torch-w4-t8,tfdata,tfdata-t16,streaming"}
                         (default all; those without a built environment are left out, saying so)
  --samples N            read N of the dataset's samples (drawn with a fixed seed; default all):
                         every contender gets the same ids (--ids FILE)
  --time-limit S         a Python peer stops taking batches after S s and reports what it read
                         (default 60; --quick: 20): at 150 ms one query at a time makes ~13/s
  --rounds R             interleaved rounds (default 2; --quick: 1)
  --batch B              batch size (default 128 fm, 32 inet)
  --step-ms S            the consumer waits S ms after each batch, a training step (default 0)
  --quick                a short run (bench/main.ts --quick)
  --out DIR              where the SVG figures go (default bench/peers/figures)
  --json FILE            also write every run and the summary as JSON
  --store URL            cassandra://[user:pass@]HOST:PORT/KEYSPACE (default the local node,
                         keyspace cassette_peers_bench; datasets missing there are ingested)`;

const args: BenchArgs = benchArgs({
  program: "bench/peers.bench.ts",
  usage: USAGE,
  valued: ["set", "dataset", "settings", "contenders", "samples", "time-limit", "rounds", "batch", "step-ms", "out", "json", "store"],
  flags: ["quick"],
});
const quick = args.has("quick");
const set = args.str("set", "fm");
if (set !== "fm" && set !== "inet") args.fail(`--set must be fm or inet: current value is ${set}`);
const dataset = args.str("dataset", set === "inet" ? "inet" : quick ? "fm" : "fm10k");
const rounds = args.int("rounds", quick ? 1 : 2);
const samplesWanted = args.has("samples") ? args.int("samples", 0) : undefined;
const timeLimit = args.num("time-limit", quick ? 20 : 60);
const batch = args.int("batch", set === "inet" ? 32 : 128);
const stepMs = args.num("step-ms", 0);
const outDir = args.str("out", join(runtime.cwd(), "bench/peers/figures"));
const jsonOut = args.str("json");
const store = args.str("store", "cassandra://cassandra:cassandra@127.0.0.1:9042/cassette_peers_bench");
const cache = runtime.env("CASSETTE_CACHE") ?? join(homedir(), ".cache/cassette");

const SETTINGS: Record<string, { label: string; proxy: string[] }> = {
  rtt0: { label: "RTT 0 (proxy, no delay)", proxy: ["--delay-ms", "0"] },
  rtt20: { label: "RTT 20 ms", proxy: ["--delay-ms", "10"] },
  rtt150: { label: "RTT 150 ms", proxy: ["--delay-ms", "75"] },
  congested: { label: "1 connection in 4 at 1 MB/s, RTT 20 ms", proxy: ["--delay-ms", "10", "--congest-every", "4", "--congest-bps", "1000000"] },
  moving: {
    label: "1 connection in 4 at 1 MB/s, a different one every 2 s, RTT 20 ms",
    proxy: ["--delay-ms", "10", "--congest-every", "4", "--congest-bps", "1000000", "--congest-rotate-ms", "2000"],
  },
};
const settingNames = args.list("settings", quick ? ["rtt0", "rtt150"] : Object.keys(SETTINGS));
for (const s of settingNames) if (!SETTINGS[s]) args.fail(`unknown setting '${s}' in --settings (${Object.keys(SETTINGS).join(", ")})`);

// --- the contenders ----------------------------------------------------------------------------

/** Where a contender reads from in one setting: the proxied Cassandra address and MDS URL. */
interface Route {
  store: string;
  mds?: string;
  /** The wds: address of the WebDataset shards' index, through the proxy. */
  wds?: string;
  /** The ids every contender reads, one a line. */
  ids: string;
}

interface ContenderSpec {
  name: string;
  /** The peers' environment it needs (bench/peers/env.sh NAME), if any. */
  env?: "torch" | "tf" | "streaming";
  /** The command for one run; `py` is the environment's python. */
  argv(route: Route, py: string): string[];
  /** What it says about itself in the table's legend. */
  about: string;
}

const bun = join(runtime.cwd(), "node_modules/.bin/bun");
const tensorFlags = set === "inet" ? ["--tensor", "imagenet"] : ["--tensor", "fm"];
const common = (route: Route) => ["--store", route.store, "--dataset", dataset, "--ids", route.ids, "--batch", String(batch), "--step-ms", String(stepMs), "--series", "--json"];
const peer = (route: Route) => [...common(route), ...tensorFlags, "--time-limit", String(timeLimit)];
const cassette = (route: Route, extra: string[]) => [bun, "src/cli/main.ts", "read", ...common(route), ...extra];
// The tensor each cassette run makes: decoded pixels (the peers' input), or the whole training
// tensor on the GPU adapter as train.ts makes it.
const preprocess = set === "inet"
  ? ["--preprocess", "--size", "224", "--crop", "random-resized", "--flip", "0.5"]
  : ["--preprocess", "--size", "28", "--grey"];

const CONTENDERS: ContenderSpec[] = [
  { name: "cassette", about: "cassette read --decode", argv: (r) => cassette(r, ["--decode"]) },
  { name: "cassette-w2", about: "cassette read --decode --workers 2", argv: (r) => cassette(r, ["--decode", "--workers", "2"]) },
  { name: "cassette-pre", about: `cassette read ${preprocess.join(" ")} (on the WebGPU adapter)`, argv: (r) => cassette(r, preprocess) },
  // The peers' tensor made as they make it, on the CPU: the read workers decode each plan's box
  // (region decode), the loader's thread resamples and normalizes (src/decode/tensor.ts).
  {
    name: "cassette-cpu", about: `cassette read ${preprocess.join(" ")} --device cpu --workers 2 (the tensor on the CPU)`,
    argv: (r) => cassette(r, [...preprocess, "--device", "cpu", "--workers", "2"]),
  },
  {
    // Its defaults for shards: one stream in the loader's thread, a decode pool (src/read/worker_source.ts, readWorkers).
    name: "cassette-cpu-wds", about: `cassette read ${preprocess.join(" ")} --device cpu over WebDataset shards from nginx (as Streaming reads its shards)`,
    argv: (r) => [bun, "src/cli/main.ts", "read", ...common(r).map((a) => (a === r.store ? r.wds! : a)), ...preprocess, "--device", "cpu"],
  },
  {
    name: "torch-w2", env: "torch", about: "PyTorch DataLoader, 2 workers, in_order (its defaults)",
    argv: (r, py) => [py, "bench/peers/torch_cassandra.py", ...peer(r), "--workers", "2"],
  },
  {
    name: "torch-w4-t8", env: "torch", about: "PyTorch DataLoader, 4 workers × 8 threads, in_order=False",
    argv: (r, py) => [py, "-W", "ignore", "bench/peers/torch_cassandra.py", ...peer(r), "--workers", "4", "--threads", "8", "--no-in-order"],
  },
  { name: "tfdata", env: "tf", about: "tf.data, map(num_parallel_calls=AUTOTUNE), its defaults", argv: (r, py) => [py, "bench/peers/tf_cassandra.py", ...peer(r)] },
  // TF's default pool has a thread per core and a blocking fetch holds one: 2 in flight here,
  // whatever num_parallel_calls says. A private pool of 16 was its best (bench/peers/README.md).
  {
    name: "tfdata-t16", env: "tf", about: "tf.data, AUTOTUNE on a private pool of 16 threads, not deterministic",
    argv: (r, py) => [py, "bench/peers/tf_cassandra.py", ...peer(r), "--threadpool", "16", "--no-deterministic"],
  },
  {
    name: "streaming", env: "streaming", about: "MosaicML StreamingDataset over MDS shards from nginx, DataLoader 2 workers",
    argv: (r, py) => [py, streaming!.STREAMING_SCRIPT, ...streaming!.streamingReadArgs({
      remote: r.mds!, local: join(tmpdir(), "cassette-peers-mds-cache"), workers: 2, batch, stepMs, tensor: set === "inet" ? "imagenet" : "fm", series: true, dataset,
    }), "--time-limit", String(timeLimit)],
  },
];
const wanted = args.list("contenders", CONTENDERS.map((c) => c.name));
for (const w of wanted) if (!CONTENDERS.some((c) => c.name === w)) args.fail(`unknown contender '${w}' in --contenders (${CONTENDERS.map((c) => c.name).join(", ")})`);

/** The python of a peers' environment, or undefined (and why, printed once). */
const pythons = new Map<string, string | undefined>();
function python(env: string): string | undefined {
  if (!pythons.has(env)) {
    const r = spawnSync("bash", ["bench/peers/env.sh", env, "--check"], { encoding: "utf8" });
    pythons.set(env, r.status === 0 ? r.stdout.trim() : undefined);
    if (r.status !== 0) console.log(`left out: the ${env} contenders (${r.stderr.trim()})`);
  }
  return pythons.get(env);
}
const contenders = CONTENDERS.filter((c) => wanted.includes(c.name) && (!c.env || python(c.env)));
// The Streaming peer's shards and server (loaded only when it runs).
const streaming = contenders.some((c) => c.name === "streaming") ? await import("./peers/streaming.ts") : undefined;
if (contenders.length === 0) args.fail("no contender can run (see the lines above)");

// --- one run -----------------------------------------------------------------------------------

const TICK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

interface ProcStat {
  pid: number;
  ppid: number;
  state: string;
  /** utime + stime, in clock ticks. */
  own: number;
  /** cutime + cstime: the children it has reaped. */
  reaped: number;
  rssPages: number;
}

function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may hold spaces: the fields start after the last ')'.
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { pid, ppid: +f[1], state: f[0], own: +f[11] + +f[12], reaped: +f[13] + +f[14], rssPages: +f[21] };
}

/**
 * CPU and memory of a process tree, from /proc: every `ms` the tree under `root` is listed; its
 * CPU is the sum over its live processes of their own time and the time of children they have
 * reaped (a worker that exits and is joined moves from the first sum to the second, so nothing
 * is counted twice). The root is started as `sh -c 'CMD; kill -STOP $$'`: once CMD has exited
 * and been reaped, the stopped shell's cutime + cstime is CMD's whole tree, to the last tick,
 * read before the shell is let go.
 */
class TreeWatch {
  #peakRss = 0;
  #cpuTicks = 0;
  #final?: number;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly root: number;

  constructor(root: number, ms = 50) {
    this.root = root;
    this.#timer = setInterval(() => this.sample(), ms);
  }

  sample(): void {
    const all: ProcStat[] = [];
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      const s = procStat(+name);
      if (s) all.push(s);
    }
    const children = new Map<number, ProcStat[]>();
    for (const s of all) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
    const rootStat = all.find((s) => s.pid === this.root);
    if (!rootStat) return;
    if (rootStat.state === "T") {
      // The command is done and reaped: the shell's reaped time is the whole tree's.
      this.#final = rootStat.reaped;
      process.kill(this.root, "SIGCONT");
      return;
    }
    let ticks = rootStat.reaped, rss = 0;
    const stack = [...(children.get(this.root) ?? [])];
    while (stack.length) {
      const s = stack.pop()!;
      ticks += s.own + s.reaped;
      rss += s.rssPages * 4096;
      stack.push(...(children.get(s.pid) ?? []));
    }
    this.#cpuTicks = Math.max(this.#cpuTicks, ticks);
    this.#peakRss = Math.max(this.#peakRss, rss);
  }

  stop(): { cpuSeconds: number; exact: boolean; peakRssMB: number } {
    clearInterval(this.#timer);
    return { cpuSeconds: (this.#final ?? this.#cpuTicks) / TICK, exact: this.#final !== undefined, peakRssMB: this.#peakRss / 1e6 };
  }
}

/** What a contender prints: `cassette read --json`'s fields, which the peers share (common.py). */
type Report = Pick<LoaderStats, "samples" | "bytes" | "samplesPerSec" | "mbPerSec" | "batchMs"> & Partial<Pick<LoaderStats, "waitMs">> & {
  seconds: number;
  batchAtMs?: number[];
  [k: string]: unknown;
};

interface Run {
  contender: string;
  setting: string;
  round: number;
  samples: number;
  samplesPerSec: number;
  /** From each batch's hand-over time: the samples after the first batch over the time after it. */
  afterFirstPerSec: number;
  mbPerSec: number;
  waitMs: { p50: number; p99: number; max: number };
  processCpuSeconds: number;
  cpuExact: boolean;
  cpuMsPerSample: number;
  peakRssMB: number;
  wallSeconds: number;
  /** Wall-clock start and end, for the proxy's per-connection rates. */
  startWall: number;
  endWall: number;
  batchAtMs: number[];
}

async function runOne(c: ContenderSpec, route: Route, setting: string, round: number): Promise<Run> {
  const argv = c.argv(route, c.env ? python(c.env)! : "");
  const startWall = wall();
  // The shell stops itself once the command is reaped, for TreeWatch to read the whole tree's CPU.
  const child = spawn("sh", ["-c", '"$@"; s=$?; kill -STOP $$; exit $s', "sh", ...argv], {
    cwd: runtime.cwd(), stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, TF_CPP_MIN_LOG_LEVEL: "2" },
  });
  const watch = new TreeWatch(child.pid!);
  let out = "", err = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
  const code = await new Promise<number>((resolve) => child.once("exit", (c) => resolve(c ?? 1)));
  const endWall = wall();
  const tree = watch.stop();
  if (code !== 0) throw new Error(`${c.name} (${setting}, round ${round}) exited ${code}: ${err.trim().split("\n").slice(-5).join("\n")}\n  command: ${argv.join(" ")}`);
  const lines = out.trim().split("\n");
  const r: Report = JSON.parse(lines[lines.length - 1]);
  const at = r.batchAtMs ?? [];
  const firstN = Math.min(batch, r.samples);
  const afterFirst = at.length > 1 ? (r.samples - firstN) / ((at[at.length - 1] - at[0]) / 1000) : 0;
  return {
    contender: c.name, setting, round, samples: r.samples, samplesPerSec: r.samplesPerSec, afterFirstPerSec: afterFirst,
    mbPerSec: r.mbPerSec, waitMs: r.waitMs ?? r.batchMs, processCpuSeconds: tree.cpuSeconds, cpuExact: tree.exact,
    cpuMsPerSample: (1000 * tree.cpuSeconds) / Math.max(1, r.samples), peakRssMB: tree.peakRssMB,
    wallSeconds: (endWall - startWall) / 1000, startWall, endWall, batchAtMs: at,
  };
}

// --- the data ----------------------------------------------------------------------------------

/**
 * The ids every contender reads, in a file (one a line): all of the dataset's, or --samples of
 * them drawn with a fixed seed. The dataset is ingested first when the store lacks it.
 */
async function prepareIds(): Promise<{ file: string; count: number; stored: number }> {
  const s = await CassandraStore.open(store);
  const ids: string[] = [];
  try {
    const have = await s.info(dataset).then((i) => i.count, () => 0);
    if (have === 0) {
      const source = dataset === "inet" ? join(cache, "imagenet-like") : "idx:/usr/share/datasets/fashion-mnist/";
      const limit = dataset === "fm10k" ? 5000 : dataset === "fm" ? 1000 : undefined; // per idx split
      if (dataset === "inet" && !existsSync(source)) throw new Error(`the ImageNet-like set is not at ${source}: make it with bash bench/read/make_imagenet_like.sh`);
      if (dataset !== "inet" && limit === undefined) throw new Error(`dataset '${dataset}' is not in ${store}: ingest it first (cassette ingest)`);
      console.log(`ingesting ${dataset} from ${source} into the store…`);
      await ingest(s, source, { dataset, limit });
    }
    for await (const page of s.scanNat(dataset)) for (const r of page) ids.push(r.id);
  } finally {
    await s.close();
  }
  shuffle(ids.sort(), rng(20)); // the same draw in every run
  const chosen = ids.slice(0, samplesWanted ?? ids.length);
  const file = join(tmpdir(), `cassette-peers-${dataset}-${chosen.length}.ids`);
  writeFileSync(file, chosen.join("\n") + "\n");
  return { file, count: chosen.length, stored: ids.length };
}

// --- the run of the bench ----------------------------------------------------------------------

const { file: idsFile, count, stored } = await prepareIds();
if (samplesWanted !== undefined && count < samplesWanted) args.fail(`--samples ${samplesWanted}: dataset '${dataset}' holds ${stored}`);
const node = parseStoreAddress(store);
if (node.kind !== "cassandra") args.fail(`--store must be a cassandra:// address: current value is ${store}`);
const target = `${node.hosts[0]}:${node.port}`;
/** The store's address with its host and port replaced by the proxy's. */
function viaProxy(port: number): string {
  const m = /^(cassandra:\/\/(?:[^@/]*@)?)([^/]+)(\/.*)$/.exec(store);
  if (!m) throw new Error(`Cannot put a proxy in front of store '${store}': not a cassandra://HOST/KEYSPACE address`);
  return `${m[1]}127.0.0.1:${port}${m[3]}`;
}

let web: { port: number; remote: string; close(): Promise<void> } | undefined;
let shards: { port: number; index: string; close(): Promise<void> } | undefined;
if (contenders.some((c) => c.name === "cassette-cpu-wds")) shards = await serveShards();

if (streaming) {
  const dir = join(cache, "peers-mds", `${dataset}-${count}`);
  const summary = await streaming.prepareMds({ python: python("streaming")!, store, dataset, dir, ids: idsFile });
  web = await streaming.serveMds(dir);
  console.log(`MDS shards of ${dataset} (${summary.samples} samples in ${summary.shards} shards, ${(summary.bytes / 1e6).toFixed(1)} MB${summary.reused ? ", written earlier" : ""}) served by nginx at ${web.remote}`);
}

console.log(`\n${dataset}: ${count} samples${count < stored ? ` of ${stored}` : ""}, batch ${batch}${stepMs ? `, a ${stepMs} ms step per batch` : ", a tight loop"}; ${rounds} round(s), contenders interleaved; ` +
  `${runtime.name} ${runtime.version}; ${contenders.length} contenders:`);
for (const c of contenders) console.log(`  ${c.name.padEnd(13)} ${c.about}`);

const runs: Run[] = [];
mkdirSync(outDir, { recursive: true });
for (const key of settingNames) {
  const st = SETTINGS[key];
  const cassProxy = await startTimelineProxy(target, 0, st.proxy);
  const webProxy = web ? await startTimelineProxy(`127.0.0.1:${web.port}`, 0, st.proxy) : undefined;
  const wdsProxy = shards ? await startTimelineProxy(`127.0.0.1:${shards.port}`, 0, st.proxy) : undefined;
  const route: Route = {
    store: viaProxy(cassProxy.port), mds: webProxy && streaming!.mdsRemote(`127.0.0.1:${webProxy.port}`), ids: idsFile,
    ...(wdsProxy ? { wds: `wds:http://127.0.0.1:${wdsProxy.port}/${shards!.index}` } : {}),
  };
  console.log(`\n${st.label}`);
  for (let round = 1; round <= rounds; round++) {
    for (const c of contenders) {
      const r = await runOne(c, route, key, round);
      runs.push(r);
      console.log(`  round ${round} ${c.name.padEnd(13)} ${r.samplesPerSec.toFixed(0).padStart(7)} samples/s, after 1st batch ${r.afterFirstPerSec.toFixed(0).padStart(7)}/s, ` +
        `wait p50 ${r.waitMs.p50.toFixed(1)} p99 ${r.waitMs.p99.toFixed(1)} ms, CPU ${r.cpuMsPerSample.toFixed(3)} ms/sample, peak RSS ${r.peakRssMB.toFixed(0)} MB`);
    }
  }
  table(key, st.label);
  figures(key, st.label, cassProxy, webProxy, wdsProxy);
  await cassProxy.close();
  await webProxy?.close();
  await wdsProxy?.close();
}
await web?.close();
await shards?.close();

/**
 * The dataset as WebDataset shards (cassette export --format webdataset, kept in the cache and
 * reused; 64 MB a shard, as Streaming's MDS shards here), served by nginx: the same server
 * Streaming's shards get.
 */
async function serveShards(): Promise<{ port: number; index: string; close(): Promise<void> }> {
  const dir = join(cache, "peers-wds", `${dataset}-${stored}`);
  if (!existsSync(join(dir, `${dataset}.index.json`))) {
    console.log(`exporting ${dataset} as WebDataset shards into ${dir}…`);
    const r = spawnSync(bun, ["src/cli/main.ts", "export", "--store", store, "--dataset", dataset, "--out", dir, "--format", "webdataset", "--prefix", dataset, "--shard-bytes", "64MB"], { encoding: "utf8", stdio: ["ignore", "inherit", "inherit"] });
    if (r.status !== 0) throw new Error(`cassette export of ${dataset} to ${dir} failed (exit ${r.status})`);
  }
  const { startNginx } = await import("../test/_support/nginx.ts");
  const web = await startNginx({ root: dir, prefix: "wds" });
  console.log(`WebDataset shards of ${dataset} in ${dir} served by nginx at http://127.0.0.1:${web.port}/wds/`);
  return { port: web.port, index: `wds/${dataset}.index.json`, close: () => web.close() };
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : 0;
}

interface Row {
  name: string;
  samplesPerSec: number;
  afterFirstPerSec: number;
  mbPerSec: number;
  cpuMsPerSample: number;
  peakRssMB: number;
  waitP50: number;
  waitP99: number;
  spread: number;
}

function rowsOf(key: string): Row[] {
  return contenders.map((c) => {
    const rs = runs.filter((r) => r.setting === key && r.contender === c.name);
    const m = (f: (r: Run) => number) => median(rs.map(f));
    const rates = rs.map((r) => r.samplesPerSec);
    return {
      name: c.name, samplesPerSec: m((r) => r.samplesPerSec), afterFirstPerSec: m((r) => r.afterFirstPerSec), mbPerSec: m((r) => r.mbPerSec),
      cpuMsPerSample: m((r) => r.cpuMsPerSample), peakRssMB: m((r) => r.peakRssMB), waitP50: m((r) => r.waitMs.p50), waitP99: m((r) => r.waitMs.p99),
      spread: rates.length > 1 ? (Math.max(...rates) - Math.min(...rates)) / Math.max(...rates) : 0,
    };
  });
}

function table(key: string, label: string): void {
  const rows = rowsOf(key);
  const ours = rows.find((r) => r.name === "cassette") ?? rows[0];
  console.log(`\n${dataset}, ${label}: medians of ${rounds} round(s); ratio = samples/s ÷ ${ours.name}'s; CPU s/1k: CPU seconds of all the contender's processes per 1 000 samples (start-up and imports included)`);
  console.log(`${"contender".padEnd(13)} ${"samples/s".padStart(9)} ${"ratio".padStart(6)} ${"after 1st".padStart(9)} ${"MB/s".padStart(7)} ${"CPU s/1k".padStart(9)} ${"CPU ratio".padStart(9)} ${"RSS MB".padStart(7)} ${"wait p50".padStart(8)} ${"wait p99".padStart(8)} ${"spread".padStart(6)}`);
  for (const r of rows) {
    console.log(`${r.name.padEnd(13)} ${r.samplesPerSec.toFixed(0).padStart(9)} ${(r.samplesPerSec / ours.samplesPerSec).toFixed(2).padStart(6)} ${r.afterFirstPerSec.toFixed(0).padStart(9)} ` +
      `${r.mbPerSec.toFixed(1).padStart(7)} ${r.cpuMsPerSample.toFixed(2).padStart(9)} ${(r.cpuMsPerSample / ours.cpuMsPerSample).toFixed(2).padStart(9)} ${r.peakRssMB.toFixed(0).padStart(7)} ` +
      `${r.waitP50.toFixed(1).padStart(8)} ${r.waitP99.toFixed(1).padStart(8)} ${(100 * r.spread).toFixed(0).padStart(5)}%`);
  }
}

/** The last round's figures: time between batches per contender, and throughput per connection. */
function figures(key: string, label: string, cassProxy: TimelineProxy, webProxy?: TimelineProxy, wdsProxy?: TimelineProxy): void {
  const last = contenders.map((c) => runs.filter((r) => r.setting === key && r.contender === c.name).at(-1)!);
  const stem = join(outDir, `${dataset}-${key}`);
  writeFileSync(`${stem}-batch-time.svg`, lineChart({
    title: `${dataset}, ${label}: time between batches`,
    xLabel: "seconds since the contender's clock started", yLabel: "ms since the previous batch (log)", logY: true,
    series: last.map((r) => ({
      name: r.contender,
      points: r.batchAtMs.map((t, i) => [t / 1000, Math.max(0.01, t - (i ? r.batchAtMs[i - 1] : 0))] as [number, number]),
    })),
  }));
  for (const r of last) {
    const proxy = r.contender === "streaming" ? webProxy : r.contender === "cassette-cpu-wds" ? wdsProxy : cassProxy;
    if (!proxy) continue;
    const rates = [...proxy.rates(r.startWall, r.endWall)].sort((x, y) => x[0] - y[0]);
    const total = new Map<number, number>();
    for (const [, pts] of rates) for (const [t, v] of pts) total.set(t, (total.get(t) ?? 0) + v);
    writeFileSync(`${stem}-connections-${r.contender}.svg`, lineChart({
      title: `${dataset}, ${label}, ${r.contender}: throughput per connection`,
      xLabel: "seconds since the contender's process started", yLabel: "MB/s received (100 ms intervals)",
      series: [
        ...rates.map(([k, pts]) => ({ name: `conn ${k}${proxy.capped(k) ? " (congested)" : ""}`, points: pts })),
        { name: "all", points: [...total].sort((x, y) => x[0] - y[0]) },
      ],
    }));
  }
}

// --- the summary: the issue's targets -----------------------------------------------------------

console.log("\nsummary: cassette against the best Python peer in each setting (medians)");
const peers = contenders.filter((c) => c.env).map((c) => c.name);
const summary: Record<string, unknown>[] = [];
for (const key of settingNames) {
  const rows = rowsOf(key);
  const theirs = rows.filter((r) => peers.includes(r.name));
  if (theirs.length === 0) continue;
  const best = theirs.reduce((a, b) => (b.samplesPerSec > a.samplesPerSec ? b : a));
  const leastCpu = theirs.reduce((a, b) => (b.cpuMsPerSample < a.cpuMsPerSample ? b : a));
  // Every cassette contender (the decode-only reads, the tensor on the CPU, from Cassandra or shards).
  for (const ours of rows.filter((r) => r.name.startsWith("cassette"))) {
    const speed = ours.samplesPerSec / best.samplesPerSec, cpu = ours.cpuMsPerSample / leastCpu.cpuMsPerSample;
    summary.push({ setting: key, contender: ours.name, cassette: ours.samplesPerSec, bestPeer: best.name, bestPeerSamplesPerSec: best.samplesPerSec, speedRatio: speed, cpuRatioToLeanestPeer: cpu });
    console.log(`  ${key.padEnd(9)} ${ours.name} ${ours.samplesPerSec.toFixed(0)}/s = ${speed.toFixed(2)}× the best peer (${best.name}, ${best.samplesPerSec.toFixed(0)}/s) ${speed >= 2 ? "≥" : "<"} 2×; ` +
      `CPU per sample ${cpu.toFixed(2)}× the leanest peer's (${leastCpu.name}) ${cpu <= 0.5 ? "≤" : ">"} 0.5×`);
  }
}
const rate = (key: string, name: string) => rowsOf(key).find((r) => r.name === name)?.samplesPerSec;
if (settingNames.includes("rtt0") && settingNames.includes("rtt150")) {
  for (const c of contenders) {
    const kept = rate("rtt150", c.name)! / rate("rtt0", c.name)!;
    console.log(`  at 150 ms ${c.name} keeps ${(100 * kept).toFixed(0)} % of its RTT-0 rate${c.name === "cassette" ? (kept >= 0.9 ? " (≥ 90 %)" : " (< 90 %: target missed)") : ""}`);
  }
}
console.log(`figures in ${outDir}`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ dataset, samples: count, batch, stepMs, rounds, runs, summary }, null, 1));

