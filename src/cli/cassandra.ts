/**
 * `cassette cassandra start|stop|status`: the local Apache Cassandra node for tests and
 * development (tools/cassandra/cassandra.sh does the work; jars come from Maven Central).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { CassetteError } from "../errors.ts";
import { parseArgs, usageError } from "./args.ts";

export const help = `usage: cassette cassandra start|stop|status|fetch [--node N | --all] [--json]

  start    start node N (default 1) on 127.0.0.N:9042; returns when CQL answers
  stop     stop it (or --all nodes) and delete its data: the node is for tests, not for keeps
  status   "running (pid P) on HOST:9042" or "stopped"; exit status 0 only when running
  fetch    download Cassandra's jars from Maven Central into ~/.cache/cassette (once)

  --node N   1..9: a second node on 127.0.0.2 is one flag away (fault tests)
  --json     print { "command", "node", "running", "output" }

Environment: CASSETTE_CASSANDRA_HEAP (default 1G), CASSETTE_CQL_PORT (9042),
CASSETTE_CACHE (~/.cache/cassette).`;

const SCRIPT_CANDIDATES = ["../../tools/cassandra/cassandra.sh", "../tools/cassandra/cassandra.sh"];

function script(): string {
  for (const rel of SCRIPT_CANDIDATES) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    try {
      if (spawnSync("test", ["-f", p]).status === 0) return p;
    } catch { /* try the next */ }
  }
  throw new CassetteError("ERR_RUNTIME", "Cannot find tools/cassandra/cassandra.sh beside this cassette: the local node needs a checkout of the repository");
}

export function run(argv: string[]): number {
  const { positional, options } = parseArgs(argv, "cassandra", ["node"], ["all"]);
  if (options.has("help")) return void console.log(help), 0;
  const [cmd] = positional;
  if (!cmd || !["start", "stop", "status", "fetch"].includes(cmd)) usageError("cassandra", `needs one of start, stop, status, fetch (got '${cmd ?? ""}')`);
  const args = [script(), cmd];
  if (options.has("node")) args.push("--node", String(options.get("node")));
  if (options.has("all")) args.push("--all");
  const json = options.has("json");
  const r = spawnSync("bash", args, { stdio: json ? ["ignore", "pipe", "pipe"] : "inherit", encoding: "utf8" });
  const code = r.status ?? 1;
  if (json) {
    const node = Number(options.get("node") ?? 1);
    console.log(JSON.stringify({
      command: cmd,
      node,
      running: cmd === "status" ? code === 0 : cmd === "start" ? code === 0 : false,
      exitCode: code,
      output: `${r.stdout ?? ""}${r.stderr ?? ""}`.trim(),
    }));
  }
  return code;
}
