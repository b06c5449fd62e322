/**
 * The latency proxy as a command, in its own process (so it does not share the event loop of
 * what it measures). Prints per-connection stats on SIGINT/SIGTERM, then exits. With
 * `--sample-ms`, also prints every connection's byte counts at that interval (the read
 * benchmark's per-connection throughput over time); tools/proxy/process.ts drives it.
 *
 *   bun tools/proxy/main.ts --target 127.0.0.1:9042 --listen 127.0.0.1:19042 --delay-ms 75
 */
import process from "node:process";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";
import { parseArgs, usageError } from "../../src/cli/args.ts";
import { capAt, type ConnectionStats, type Profile, startProxy, unevenEvery, uniform } from "./proxy.ts";

const USAGE = `usage: bun tools/proxy/main.ts --target HOST:PORT [options]
  A TCP proxy that adds latency (and optionally a bandwidth cap) to every connection.
  --target HOST:PORT      the real server (required)
  --listen HOST:PORT      where to listen (default 127.0.0.1:0, any free port)
  --delay-ms D            one-way delay per direction: round trips grow by 2×D (default 0)
  --jitter-ms J           each piece of data is delayed D ± J ms, never reordered (default 0)
  --bandwidth-bps B       cap every connection at B bytes/s per direction
  --congest-every N       every Nth connection (the Nth, 2Nth, …) is congested…
  --congest-bps B         …at B bytes/s per direction (both options go together)
  --congest-rotate-ms P   congestion moves on to the next connection every P ms
  --queue-bytes Q         bytes held per direction before reading pauses (default 4194304)
  --no-handshake          connections open at once (default: set-up costs one round trip)
  --seed S                seed of the jitter draws (default 1)
  --sample-ms MS          every MS, print one line of every connection's byte counts
  --exit-with-stdin       exit when stdin closes: a parent process that dies, even killed,
                          takes the proxy with it (tools/proxy/process.ts sets it)
  --json                  print JSON lines: {"listening": PORT} once listening, the samples
                          {"t": wall-clock ms, "c": [[index, bytesDown, bytesUp, cap B/s now or 0], …]},
                          and the stats as one document on exit
  -h, --help              this text
On SIGINT or SIGTERM it prints each connection's bytes, duration and rate, and exits.`;

const PROGRAM = "tools/proxy/main.ts";

try {
  await main();
} catch (e) {
  if (!(e instanceof CassetteError)) throw e;
  console.error(`proxy: ${e.message}`);
  runtime.exit(2);
}

async function main() {
  // The cassette command's parser: an unknown option or a missing value is named the same way.
  const { positional, options } = parseArgs(runtime.args(), "", [
    "target", "listen", "delay-ms", "jitter-ms", "bandwidth-bps", "congest-every", "congest-bps", "congest-rotate-ms", "queue-bytes", "seed", "sample-ms",
  ], ["no-handshake", "exit-with-stdin"], PROGRAM);
  if (options.has("help")) {
    console.log(USAGE);
    runtime.exit(0);
  }
  if (positional.length) usageError("", `takes only options: got '${positional[0]}'`, PROGRAM);
  const str = (name: string): string | undefined => options.get(name.slice(2)) as string | undefined;
  // Its own number check, not numberOption's: every refusal here reads "Cannot start the proxy as …".
  const num = (name: string): number | undefined => {
    const v = str(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === "" || !Number.isFinite(n)) bad(`'${name}' must be a number: current value is ${v}`);
    return n;
  };
  const target = endpoint("--target", str("--target") ?? bad("'--target HOST:PORT' is required"), false);
  const listen = endpoint("--listen", str("--listen") ?? "127.0.0.1:0", true);
  const base: Profile = {
    delayMs: num("--delay-ms") ?? 0,
    jitterMs: num("--jitter-ms"),
    bandwidthBytesPerSec: num("--bandwidth-bps"),
    seed: num("--seed"),
  };
  const every = num("--congest-every"), congestBps = num("--congest-bps");
  const rotateMs = num("--congest-rotate-ms");
  if ((every === undefined) !== (congestBps === undefined)) bad("'--congest-every' and '--congest-bps' go together");
  if (rotateMs !== undefined && every === undefined) bad("'--congest-rotate-ms' needs '--congest-every' and '--congest-bps'");
  const profile = every !== undefined ? unevenEvery(every, { ...base, bandwidthBytesPerSec: congestBps }, base, rotateMs) : uniform(base.delayMs, base);
  const proxy = await startProxy({ target, listen, profile, queueBytes: num("--queue-bytes"), handshake: !options.has("no-handshake") });

  const congestion = every !== undefined ? `; 1 connection in ${every} capped at ${congestBps} B/s${rotateMs ? `, a different one every ${rotateMs} ms` : ""}` : "";
  const cap = base.bandwidthBytesPerSec ? `, cap ${base.bandwidthBytesPerSec} B/s` : "";
  const jitter = base.jitterMs ? ` ± ${base.jitterMs}` : "";
  const json = options.has("json");
  if (json) console.log(JSON.stringify({ listening: proxy.port }));
  else console.log(`proxy ${proxy.host}:${proxy.port} → ${target.host}:${target.port}: ${base.delayMs}${jitter} ms one way (round trip +${2 * base.delayMs} ms)${cap}${congestion}`);

  const sampleMs = num("--sample-ms");
  if (sampleMs !== undefined && !(sampleMs > 0)) bad(`'--sample-ms' must be > 0: current value is ${sampleMs}`);
  // Wall-clock ms with sub-ms precision, comparable with the measuring process's clock.
  const wall = () => performance.timeOrigin + performance.now();
  const timer = sampleMs === undefined ? undefined : setInterval(() => {
    const now = runtime.now();
    const c = proxy.stats().connections.map((s) => [s.index, s.bytesDown, s.bytesUp, capAt(s.profile, now) ?? 0]);
    console.log(json ? JSON.stringify({ t: wall(), c }) : `${new Date().toISOString()} ${c.map(([i, d, u]) => `#${i} ↓${d} ↑${u}`).join("  ")}`);
  }, sampleMs);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    const st = proxy.stats();
    await proxy.close();
    if (json) console.log(JSON.stringify({ signal, ...st }));
    else {
      console.log(`\n${signal}: ${st.accepted} connection(s), ${st.bytesUp} bytes up, ${st.bytesDown} bytes down`);
      if (st.connections.length) console.log(table(st.connections, st.at));
    }
    runtime.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  if (options.has("exit-with-stdin")) {
    process.stdin.on("end", () => void stop("stdin closed"));
    process.stdin.on("close", () => void stop("stdin closed"));
    process.stdin.resume();
  }
}

function table(conns: ConnectionStats[], now: number): string {
  const rows = conns.map((c) => {
    const secs = ((c.closedAt ?? now) - c.openedAt) / 1000;
    const p = c.profile;
    const bw = typeof p.bandwidthBytesPerSec === "function" ? " @rotating" : p.bandwidthBytesPerSec ? ` @${p.bandwidthBytesPerSec}B/s` : "";
    return [
      String(c.index),
      `${p.delayMs}${p.jitterMs ? `±${p.jitterMs}` : ""}${bw}`,
      c.connectedAt !== undefined ? (c.connectedAt - c.openedAt).toFixed(1) : "-",
      String(c.bytesUp),
      String(c.bytesDown),
      secs.toFixed(2),
      ((c.bytesUp + c.bytesDown) / 1e6 / Math.max(secs, 1e-3)).toFixed(3),
      c.error ?? (c.closedAt === undefined ? "open" : "closed"),
    ];
  });
  const head = ["conn", "profile (ms)", "connect ms", "bytes up", "bytes down", "seconds", "MB/s", "state"];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [head, ...rows].map((r) => r.map((x, i) => (i === 1 || i === 7 ? x.padEnd(w[i]) : x.padStart(w[i]))).join("  ")).join("\n");
}

function endpoint(name: string, v: string, portZero: boolean): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535 || (!portZero && port === 0)) bad(`'${name}' must be HOST:PORT: current value is ${v}`);
  return { host: m![1], port };
}

function bad(why: string): never {
  throw new CassetteError("ERR_INVALID_OPTION", `Cannot start the proxy as ${why}`);
}
