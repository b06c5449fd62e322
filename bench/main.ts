/**
 * `deno task bench` (or `bun bench/main.ts`): runs every bench/*.bench.ts in this runtime, one
 * after another (never in parallel: they measure), a line as each starts and ends, and a
 * summary table at the end: status, seconds, and the headline of its first ratio table.
 *
 *   deno task bench [--quick] [NAME…] [-- OPTION…]     NAME: e.g. gpu_backend, jpeg
 *
 * A benchmark that fails does not stop the others; the exit status is 1 if any failed.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { runtime } from "../runtime-adapters/index.ts";
import { benchArgs } from "./_lib/args.ts";
import { RECORD_ENV, type TableRecord } from "./_lib/compare.ts";

const dir = new URL(".", import.meta.url).pathname;
const all = readdirSync(dir).filter((f) => f.endsWith(".bench.ts")).sort();
const short = (f: string) => f.replace(/\.bench\.ts$/, "");

// --quick: each benchmark's own --quick, and smaller sizes here where that alone still takes
// long on 2 cores (options after `--` come later, so they win). On the project's 2-core
// lavapipe machine with a Cassandra node the whole run took 101 s (read 29, train_io 36,
// train_order 11, the rest ≤ 6 each); jpeg's every group took 63 s, its crops 2 s, and the cnn
// is most of train's time.
const QUICK: Record<string, string[]> = {
  ingest: ["--samples", "500", "--rounds", "1"],
  jpeg: ["--only", "crops"],
  minato: ["--out", join(dir, "../.tmp/bench-quick/minato-figures")],
  // Quick figures do not belong beside the recorded ones in bench/read/figures.
  read: ["--out", join(dir, "../.tmp/bench-quick/read-figures")],
  train: ["--model", "mlp"],
  train_io: ["--limit", "2048", "--epochs", "2"],
  train_order: ["--limit", "2048", "--seeds", "1"],
};
// These read from a Cassandra node (the local one unless a --store is passed on): with none
// there, they are skipped and the summary says why, rather than each failing on its own.
const NEEDS_CASSANDRA = new Set(["read", "train_io", "train_order", "peers"]);
const CASSANDRA = { host: "127.0.0.1", port: 9042 };
// Run only when named: chaos kills and restarts the nodes of a three-node cluster of its own
// for about ten minutes (bench/chaos.bench.ts --help says how to start that cluster); peers
// runs Python loaders from virtualenvs of several GB (bench/peers/env.sh) for half an hour.
const ONLY_NAMED = new Set(["chaos", "peers"]);
const NOTES: Record<string, string> = {
  chaos: "only when named: needs a 3-node cluster of its own (see its --help)",
  peers: "only when named: a Cassandra node and the Python peers' environments (bench/peers/env.sh)",
};

const USAGE = `usage: deno task bench [--quick] [NAME…] [-- OPTION…]      (bench/main.ts; or bun bench/main.ts)
  runs bench/NAME.bench.ts in turn (all by default), then a summary table; exit 1 if any failed
  --quick      small sizes and few rounds in every benchmark: about 2 minutes in all on a
               2-core machine, against over 8 for the full run (figures for a quick look only)
  -- OPTION…   passed on to every benchmark chosen (each refuses what it does not know)
benchmarks:
${all.map((f) => `  ${short(f).padEnd(14)}${NOTES[short(f)] ?? (NEEDS_CASSANDRA.has(short(f)) ? "needs a Cassandra node (bun src/cli/main.ts cassandra start)" : "")}`.trimEnd()).join("\n")}
Record the figures, the machine and the command in bench/RESULTS.md.`;

// Names and --quick are main's; everything after `--` goes to each benchmark as it is
// (deno task bench jpeg -- --no-pool).
const argv = runtime.args();
const cut = argv.indexOf("--");
const args = benchArgs({ program: "bench/main.ts", usage: USAGE, flags: ["quick"], positional: true, argv: cut < 0 ? argv : argv.slice(0, cut) });
const names = args.positional;
const quick = args.has("quick");
const passed = cut < 0 ? [] : argv.slice(cut + 1);
const unknown = names.filter((n) => !all.some((f) => short(f) === n || f === n));
if (unknown.length > 0) {
  console.error(`bench: no benchmark named ${unknown.join(", ")}: have ${all.map(short).join(", ")}`);
  runtime.exit(2);
}
const chosen = names.length ? all.filter((f) => names.some((n) => short(f) === n || f === n)) : all.filter((f) => !ONLY_NAMED.has(short(f)));

interface Outcome {
  file: string;
  status: string;
  seconds?: number;
  headline?: string;
  ok: boolean;
}

const needCassandra = chosen.filter((f) => NEEDS_CASSANDRA.has(short(f)));
const noCassandra = needCassandra.length > 0 && !passed.some((a) => a === "--store" || a.startsWith("--store=")) && !(await answers(CASSANDRA));
if (noCassandra) {
  console.log(`bench: no Cassandra node answers on ${CASSANDRA.host}:${CASSANDRA.port}: skipping ${needCassandra.map(short).join(", ")} (start one: bun src/cli/main.ts cassandra start)`);
}

// Each benchmark's ratio tables come back through a file (bench/_lib/compare.ts writes one
// JSON line per table when RECORD_ENV names it): its output stays on the terminal, untouched.
const record = join(tmpdir(), `cassette-bench-${process.pid}.jsonl`);
const outcomes: Outcome[] = [];
const t0 = runtime.now();
try {
  for (const [i, f] of chosen.entries()) {
    const tag = `[${i + 1}/${chosen.length}] ${f}`;
    if (noCassandra && NEEDS_CASSANDRA.has(short(f))) {
      console.log(`\n=== ${tag}: skipped, no Cassandra node`);
      outcomes.push({ file: f, status: "skipped: no Cassandra", ok: true });
      continue;
    }
    // Its default store is the one train.ts makes; made here, it is minutes, not seconds.
    if (short(f) === "read_workers" && !passed.some((a) => a.startsWith("--store")) && !existsSync(join(dir, "../data/fashion-mnist.sqlite"))) {
      console.log(`bench: ${f} first ingests Fashion-MNIST into data/fashion-mnist.sqlite (once, as bun run train.ts does): several minutes`);
    }
    const benchArgv = [...(quick ? ["--quick", ...(QUICK[short(f)] ?? [])] : []), ...passed];
    console.log(`\n=== ${tag} … (${runtime.name} ${runtime.version}${benchArgv.length ? `, ${benchArgv.join(" ")}` : ""})`);
    writeFileSync(record, "");
    const [cmd, ...rest] = runtime.scriptCommand(`${dir}${f}`, benchArgv);
    const start = runtime.now();
    const r = spawnSync(cmd, rest, { stdio: "inherit", env: { ...process.env, [RECORD_ENV]: record } });
    const seconds = (runtime.now() - start) / 1000;
    const ok = r.status === 0;
    const status = ok ? "ok" : r.error ? `failed: ${r.error.message}` : r.signal ? `killed (${r.signal})` : `failed (exit ${r.status})`;
    const headline = firstTable(readFileSync(record, "utf8"));
    outcomes.push({ file: f, status, seconds, headline, ok });
    console.log(`=== ${tag} ${ok ? "done" : status} in ${seconds.toFixed(0)} s`);
  }
} finally {
  rmSync(record, { force: true });
}

const total = (runtime.now() - t0) / 1000;
const w = Math.max(...outcomes.map((o) => o.file.length), 9);
const sw = Math.max(...outcomes.map((o) => o.status.length), 6);
console.log(`\nSummary${quick ? " (--quick)" : ""}: ${runtime.name} ${runtime.version}, ${total.toFixed(0)} s in all`);
console.log(`  ${"benchmark".padEnd(w)}  ${"status".padEnd(sw)}  ${"time".padStart(6)}  first table: fastest, ratio vs its baseline`);
for (const o of outcomes) {
  console.log(`  ${o.file.padEnd(w)}  ${o.status.padEnd(sw)}  ${(o.seconds === undefined ? "-" : `${o.seconds.toFixed(0)} s`).padStart(6)}  ${o.headline ?? ""}`.trimEnd());
}
const failed = outcomes.filter((o) => !o.ok).length;
console.log(failed ? `\n${failed} of ${outcomes.length} benchmarks failed (see above)` : "\nRecord the figures, the machine and the command in bench/RESULTS.md.");
runtime.exit(failed ? 1 : 0);

/** The first ratio table a benchmark printed: "fastest ratio× vs baseline (title)". */
function firstTable(jsonl: string): string | undefined {
  const line = jsonl.split("\n").find((l) => l.trim());
  if (!line) return undefined;
  const t = JSON.parse(line) as TableRecord;
  const top = t.rows[0];
  if (!top) return undefined;
  // When the baseline is fastest, its 1.00× says nothing: the runner-up's ratio does.
  const shown = top.name === t.baseline && t.rows[1] ? `${t.baseline} fastest, then ${t.rows[1].name} ${t.rows[1].ratio.toFixed(2)}×` : `${top.name} ${top.ratio.toFixed(2)}× vs ${t.baseline}`;
  const title = t.title.length > 60 ? `${t.title.slice(0, 59)}…` : t.title;
  return `${shown} (${title})`;
}

/** Whether a TCP connection to `host:port` opens within a second. */
function answers({ host, port }: { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (up: boolean) => {
      s.destroy();
      resolve(up);
    };
    s.setTimeout(1000, () => done(false));
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}
