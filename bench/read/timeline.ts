/**
 * Starts bench/read/timeline_proxy.ts in its own process (so its copies and timers do not
 * share the measured client's event loop) and collects its per-connection byte counts over
 * time. `rates(from, to)` turns them into MB/s per connection per sample interval.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { runtime } from "../../runtime-adapters/index.ts";

/** One snapshot: wall-clock ms and [index, bytesDown, bytesUp, bandwidth cap or 0] per connection. */
export interface Snapshot {
  t: number;
  c: [number, number, number, number][];
}

export interface TimelineProxy {
  port: number;
  readonly snapshots: Snapshot[];
  /** MB/s received by the client on each connection, between two wall-clock times, per interval. */
  rates(fromMs: number, toMs: number): Map<number, [number, number][]>;
  /** Whether connection `index` had a bandwidth cap all along (a congested one). */
  capped(index: number): boolean;
  close(): Promise<void>;
}

/** Wall-clock ms with sub-ms precision, comparable across processes. */
export const wall = (): number => performance.timeOrigin + performance.now();

/** Children still running, killed if this process exits first (a crashed run leaves no proxy behind). */
const live = new Set<ChildProcess>();
(globalThis as { process?: { on(e: string, f: () => void): void } }).process?.on("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/** Starts the proxy on a free port (`port` 0) or a given one. */
export async function startTimelineProxy(target: string, port = 0, args: string[] = [], sampleMs = 100): Promise<TimelineProxy> {
  const [cmd, ...pre] = runtime.scriptCommand(new URL("./timeline_proxy.ts", import.meta.url).pathname, [
    "--target", target, "--listen", `127.0.0.1:${port}`, "--sample-ms", String(sampleMs), ...args,
  ]);
  const child = spawn(cmd, pre, { stdio: ["ignore", "pipe", "inherit"] });
  live.add(child);
  child.once("exit", () => live.delete(child));
  const snapshots: Snapshot[] = [];
  let buf = "";
  let up: (() => void) | undefined;
  const listening = new Promise<void>((r) => (up = r));
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.startsWith("{")) continue;
      const m = JSON.parse(line);
      if (m.listening !== undefined) port = m.listening, up!();
      else snapshots.push(m);
    }
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await Promise.race([listening, exited.then(() => Promise.reject(new Error(`timeline proxy on port ${port} exited at start`)))]);
  return {
    port,
    snapshots,
    rates(fromMs, toMs) {
      const inside = snapshots.filter((s) => s.t >= fromMs - 1000 && s.t <= toMs + 1000);
      const out = new Map<number, [number, number][]>();
      for (let i = 1; i < inside.length; i++) {
        const a = inside[i - 1], b = inside[i];
        if (b.t < fromMs || a.t > toMs) continue;
        const before = new Map(a.c.map(([k, d]) => [k, d]));
        for (const [k, down] of b.c) {
          const mbps = (down - (before.get(k) ?? 0)) / 1e3 / (b.t - a.t); // bytes/ms → MB/s
          if (!out.has(k)) out.set(k, []);
          out.get(k)!.push([(b.t - fromMs) / 1000, mbps]);
        }
      }
      // Connections that carried (next to) nothing in the window are left out: the negotiation
      // connection, closed at once, and other clients' idle pools (heartbeats only, < 64 kB).
      const first = inside.find((s) => s.t >= fromMs) ?? inside[0], last = inside[inside.length - 1];
      const at = (s: Snapshot | undefined, k: number) => s?.c.find((c) => c[0] === k)?.[1] ?? 0;
      for (const k of [...out.keys()]) if (at(last, k) - at(first, k) < 65536) out.delete(k);
      return out;
    },
    capped(index) {
      // Capped in every snapshot it appears in: with moving congestion, none is marked.
      const caps = snapshots.map((s) => s.c.find((c) => c[0] === index)).filter((c) => c !== undefined);
      return caps.length > 0 && caps.every((c) => c[3] > 0);
    },
    close: () => new Promise<void>((r) => (child.exitCode !== null ? r() : (child.once("exit", () => r()), child.kill("SIGTERM")))),
  };
}
