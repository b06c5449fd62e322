/**
 * The proxy in its own process (tools/proxy/main.ts), so its copies and timers do not share
 * the measured client's event loop. Resolves once the proxy listens (it says so on stdout);
 * with `sampleMs`, collects its per-connection byte counts over time (bench/read/timeline.ts
 * turns them into throughput per connection).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import process from "node:process";
import { runtime } from "../../runtime-adapters/index.ts";

/** One sample: wall-clock ms and [index, bytesDown, bytesUp, bandwidth cap or 0] per connection. */
export interface Snapshot {
  t: number;
  c: [number, number, number, number][];
}

export interface ProxyProcess {
  port: number;
  /** The samples so far (empty without `sampleMs`). */
  readonly snapshots: Snapshot[];
  close(): Promise<void>;
}

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Children still running, killed if this process exits first: a crashed run leaves no proxy behind. */
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/**
 * Starts the proxy on `port` (0: a free one, see `ProxyProcess.port`) in front of `target`
 * (HOST:PORT), with main.ts's options in `args` (`--delay-ms 75`, …).
 */
export async function startProxyProcess(target: string, port: number, args: string[] = [], o: { sampleMs?: number } = {}): Promise<ProxyProcess> {
  const [cmd, ...pre] = runtime.scriptCommand(new URL("./main.ts", import.meta.url).pathname, [
    "--target", target, "--listen", `127.0.0.1:${port}`, "--json", "--exit-with-stdin", ...(o.sampleMs ? ["--sample-ms", String(o.sampleMs)] : []), ...args,
  ]);
  // CASSETTE_PROXY_CPUS=LIST runs the proxy on those CPUs only (taskset): benchmarks put the
  // store's side on cores of its own, as if it were remote, and keep the client on the others.
  const cpus = runtime.env("CASSETTE_PROXY_CPUS");
  const [exe, argv] = cpus ? ["taskset", ["-c", cpus, cmd, ...pre]] : [cmd, pre];
  // stdin is a pipe only this process holds: if it dies, even by a signal that runs no exit
  // handler, the pipe closes and the proxy exits (--exit-with-stdin).
  const child = spawn(exe, argv, { stdio: ["pipe", "pipe", "pipe"] });
  live.add(child);
  child.once("exit", () => live.delete(child));
  const snapshots: Snapshot[] = [];
  let buf = "", errors = "";
  let up: (p: number) => void;
  const listening = new Promise<number>((r) => (up = r));
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => (errors = (errors + chunk).slice(-2000)));
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.startsWith("{")) continue;
      const m = JSON.parse(line);
      if (m.listening !== undefined) up(m.listening);
      else if (m.t !== undefined) snapshots.push(m);
    }
  });
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`the proxy in front of ${target} exited (${code}) before listening: ${errors.trim() || "no message"}`)))
  );
  exited.catch(() => {}); // only a failure before listening is an error
  const bound = await Promise.race([listening, exited]);
  return {
    port: bound,
    snapshots,
    close: () => new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : (child.once("exit", () => r()), child.kill("SIGTERM")))),
  };
}
