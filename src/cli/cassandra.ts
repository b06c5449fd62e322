/**
 * `cassette cassandra start|stop|restart|status`: local Apache Cassandra nodes for tests and
 * development, one or a cluster on 127.0.0.1..N (tools/cassandra/cassandra.sh does the work;
 * jars come from Maven Central).
 */
import { spawnSync } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { CassetteError } from "../errors.ts";
import { parseArgs, usageError } from "./args.ts";

export const help = `usage: cassette cassandra start|stop|restart|status|fetch [--node N | --nodes K] [--tls required|mutual] [--json]

  start             start node N (default 1) on 127.0.0.N:9042; returns when CQL answers
  start --nodes K   a cluster of K nodes on 127.0.0.1..K (same ports, seed 127.0.0.1), one
                    after another, each seen joined by the others before the next starts
  stop              stop every node of the run folder and delete their data (test nodes:
                    the next start is clean); --all means the same
  stop --node N     stop node N only and keep its data
  restart --node N  stop node N if it runs (kill -9 is fine too) and start it with its data
  status            each node: "running (pid P) on HOST:PORT", "starting", "stopped";
                    exit status 0 only when every node listed runs
  fetch             download Cassandra's jars (once) into ~/.cache/cassette

A node whose data was kept (stop --node N, restart, a crash) comes back as the same node:
same host id, same data, and it rejoins its cluster. Only stop without --node deletes data.

  --node N   1..9: node N on 127.0.0.N
  --nodes K  1..9: for start, a cluster of K nodes (768 MB heap each; a lone node gets 1 GB)
  --tls M    for start and restart: clients must use TLS (required: plaintext is refused;
             mutual: a client certificate too). The run folder's tls/ gets a CA (made once,
             30 days), a certificate per node for 127.0.0.N, client.pem and client.key:
             cassandra://127.0.0.1/KS?ca=RUN/tls/ca.pem&cert=RUN/tls/client.pem&key=RUN/tls/client.key
             (the same as CASSETTE_CASSANDRA_TLS=M; a node restarted without it comes back plain)
  --json     print { "command", "node", "running", "exitCode", "output", "nodes" }, nodes
             being [{ "node", "address", "port", "pid", "running", "state", "folder" }]

Environment: CASSETTE_CASSANDRA_RUN (the run folder, one nodeN/ per node; default
/tmp/cassette-cassandra), CASSETTE_CQL_PORT (9042), CASSETTE_STORAGE_PORT (7000),
CASSETTE_CASSANDRA_HEAP (per node), CASSETTE_CASSANDRA_TLS (off, required, mutual),
CASSETTE_CASSANDRA_AUTH (PasswordAuthenticator: logins and permissions on), CASSETTE_CACHE
(~/.cache/cassette).`;

const SCRIPT_CANDIDATES = ["../../tools/cassandra/cassandra.sh", "../tools/cassandra/cassandra.sh"];

function script(): string {
  for (const rel of SCRIPT_CANDIDATES) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    try {
      if (spawnSync("test", ["-f", p]).status === 0) return p;
    } catch { /* try the next */ }
  }
  throw new CassetteError("ERR_RUNTIME", "Cannot find tools/cassandra/cassandra.sh beside this cassette: an installed package has no local node. Run one from a checkout of the repository (bash tools/setup.sh, then cassette cassandra start there), or give the address of a Cassandra or ScyllaDB you run (--store cassandra://HOST:9042/KEYSPACE)");
}

const VERBS = ["start", "stop", "status", "restart", "fetch"];

export function run(argv: string[]): number {
  const { positional, options } = parseArgs(argv, "cassandra", ["node", "nodes", "tls"], ["all"]);
  if (options.has("help")) return void console.log(help), 0;
  const [cmd] = positional;
  if (!cmd || !VERBS.includes(cmd)) usageError("cassandra", `needs one of ${VERBS.join(", ")} (got '${cmd ?? ""}')`);
  for (const name of ["node", "nodes"]) {
    const v = options.get(name);
    if (options.has(name) && !/^[1-9]$/.test(String(v))) usageError("cassandra", `Cannot use --${name} ${v}: it must be a whole number from 1 to 9`);
  }
  if (options.has("nodes") && cmd !== "start") usageError("cassandra", `--nodes K is for start (${cmd} reads which nodes there are from the run folder)`);
  if (options.has("nodes") && options.has("node")) usageError("cassandra", "takes --node N or --nodes K, not both");
  if (cmd === "restart" && !options.has("node")) usageError("cassandra", "restart needs --node N: one node at a time, so its cluster stays up");
  const tls = options.get("tls");
  if (options.has("tls") && !["required", "mutual", "off"].includes(String(tls))) usageError("cassandra", `Cannot use --tls ${tls}: it must be required or mutual (or off)`);
  if (options.has("tls") && cmd !== "start" && cmd !== "restart") usageError("cassandra", `--tls is for start and restart (${cmd} does not start a node)`);
  const args = [script(), cmd];
  if (options.has("node")) args.push("--node", String(options.get("node")));
  if (options.has("nodes")) args.push("--nodes", String(options.get("nodes")));
  if (options.has("all")) args.push("--all");
  const json = options.has("json");
  // The script reads TLS from its environment, so that a restart can be told the same way.
  const env = options.has("tls") ? { ...process.env, CASSETTE_CASSANDRA_TLS: String(tls) } : process.env;
  const r = spawnSync("bash", args, { stdio: json ? ["ignore", "pipe", "pipe"] : "inherit", encoding: "utf8", env });
  const code = r.status ?? 1;
  if (json) {
    // Each node as the script sees it now (after the verb): address, pid, running.
    const st = spawnSync("bash", [script(), "status", "--json", ...(options.has("node") ? ["--node", String(options.get("node"))] : [])], { encoding: "utf8" });
    let nodes: unknown[] = [];
    try {
      nodes = JSON.parse(st.stdout);
    } catch {
      throw new CassetteError("ERR_RUNTIME", `Cannot read the nodes' status from ${script()} status --json: ${(st.stdout + st.stderr).trim()}`);
    }
    console.log(JSON.stringify({
      command: cmd,
      node: Number(options.get("node") ?? 1),
      running: (cmd === "status" || cmd === "start" || cmd === "restart") && code === 0,
      exitCode: code,
      output: `${r.stdout ?? ""}${r.stderr ?? ""}`.trim(),
      nodes,
    }));
  }
  return code;
}
