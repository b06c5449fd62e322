/**
 * The latency proxy (bench/proxy/proxy.ts) in its own process, printing every connection's
 * byte counts every `--sample-ms` as one JSON line on stdout, so the read benchmark can plot
 * per-connection throughput over time (the 2025 paper's Figs. 5–6). bench/proxy/main.ts only
 * prints totals at exit; this is the same proxy with a time series.
 *
 *   bun bench/read/timeline_proxy.ts --target 127.0.0.1:9042 --listen 127.0.0.1:19100 \
 *       --delay-ms 75 [--congest-every 4 --congest-bps 1000000 [--congest-rotate-ms 2000]] [--sample-ms 100]
 *
 * Each line: {"t": wall-clock ms (timeOrigin + now), "c": [[index, bytesDown, bytesUp, capBytesPerSec now or 0], …]}.
 * The first line is {"listening": PORT}.
 */
import process from "node:process";
import { runtime } from "../../runtime-adapters/index.ts";
import { capAt, startProxy, unevenEvery, uniform } from "../proxy/proxy.ts";

const args = runtime.args();
const opt = (n: string) => (args.includes(n) ? args[args.indexOf(n) + 1] : undefined);
const [host, port] = (opt("--target") ?? "127.0.0.1:9042").split(":");
const [lhost, lport] = (opt("--listen") ?? "127.0.0.1:0").split(":");
const delayMs = Number(opt("--delay-ms") ?? 0);
const every = opt("--congest-every");
const rotate = opt("--congest-rotate-ms");
const sampleMs = Number(opt("--sample-ms") ?? 100);
const profile = every
  ? unevenEvery(Number(every), { delayMs, bandwidthBytesPerSec: Number(opt("--congest-bps")) }, { delayMs }, rotate ? Number(rotate) : undefined)
  : uniform(delayMs);
const proxy = await startProxy({ target: { host, port: Number(port) }, listen: { host: lhost, port: Number(lport) }, profile });

/** Wall-clock ms with sub-ms precision, comparable across processes. */
const wall = () => performance.timeOrigin + performance.now();
console.log(JSON.stringify({ listening: proxy.port }));
const timer = setInterval(() => {
  const now = runtime.now();
  const c = proxy.stats().connections.map((s) => [s.index, s.bytesDown, s.bytesUp, capAt(s.profile, now) ?? 0]);
  console.log(JSON.stringify({ t: wall(), c }));
}, sampleMs);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  await proxy.close();
  runtime.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
