/**
 * The proxy in its own process (tools/proxy/process.ts) sampling every connection's byte
 * counts, and what the read benchmark draws from them: `rates(from, to)` gives MB/s per
 * connection per sample interval (Figs. 5–6 of "Hiding Latencies…" (arXiv:2503.22643)).
 */
import { type ProxyProcess, type Snapshot, startProxyProcess } from "../../tools/proxy/process.ts";

export type { Snapshot };

export interface TimelineProxy extends ProxyProcess {
  /** MB/s received by the client on each connection, between two wall-clock times, per interval. */
  rates(fromMs: number, toMs: number): Map<number, [number, number][]>;
  /** Whether connection `index` had a bandwidth cap all along (a congested one). */
  capped(index: number): boolean;
}

/** Wall-clock ms with sub-ms precision, comparable across processes. */
export const wall = (): number => performance.timeOrigin + performance.now();

/** Starts the proxy on a free port (`port` 0) or a given one, sampling every `sampleMs`. */
export async function startTimelineProxy(target: string, port = 0, args: string[] = [], sampleMs = 100): Promise<TimelineProxy> {
  const proxy = await startProxyProcess(target, port, args, { sampleMs });
  const snapshots = proxy.snapshots;
  return {
    port: proxy.port,
    snapshots,
    close: () => proxy.close(),
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
  };
}
