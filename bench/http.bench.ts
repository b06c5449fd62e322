/**
 * One question: how close does the Loader over the HTTP source come to undici alone, against
 * the same nginx, with the same connections, pipelining and requests in flight (every GET
 * sent with `blocking: false`, as the source does, so that pipelining works)? Fashion-MNIST
 * JPEGs (~1 kB) are ingested into SQLite, exported with `cassette export` (both kept in .tmp/
 * and reused), served by a real nginx (test/_support/nginx.ts), and read side by side:
 *
 *   undici dispatch   Pool.dispatch with a bare handler, `inflight` requests outstanding: the ceiling
 *   undici request    Pool.request() + body.arrayBuffer(), the same concurrency: undici's usual API
 *   ready order       the Loader over openReadSource(http://…), batches from whatever arrived
 *   strict order      the same, batches in plan order
 *
 *   bun bench/http.bench.ts [--samples N] [--rounds R] [--connections C] [--pipelining P]
 *                           [--inflight K] [--batch B] [--prefetch K] [--rtt MS] [--quick]
 * --rtt adds a setting through the project's TCP latency proxy (in its own process), on at most
 * 2 000 of the samples; --only-rtt skips the direct one.
 */
import { join } from "node:path";
import undici from "undici/index.js";
import { runtime } from "../runtime-adapters/index.ts";
import { exportDataset } from "../src/source/export/export.ts";
import { openReadSource } from "../src/read/open.ts";
import { Loader } from "../src/loader.ts";
import { startNginx } from "../test/_support/nginx.ts";
import { compare, type Contender } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";
import { FASHION_MNIST, fashionMnistStore } from "./_lib/fashion_store.ts";
import { startProxyProcess } from "../tools/proxy/process.ts";

const args = benchArgs({
  program: "bench/http.bench.ts",
  usage: "usage: bun bench/http.bench.ts [--samples N] [--rounds R] [--connections C] [--pipelining P] [--inflight K] [--batch B] [--prefetch K] [--rtt MS] [--only-rtt] [--quick]",
  valued: ["samples", "rounds", "connections", "pipelining", "inflight", "batch", "prefetch", "rtt"],
  flags: ["only-rtt", "quick"],
});
const quick = args.has("quick");
const perSplit = Math.ceil(args.int("samples", quick ? 2000 : 10000) / 2);
const rounds = args.int("rounds", quick ? 3 : 7);
const connections = args.int("connections", 4);
const pipelining = args.int("pipelining", 4);
const inflight = args.int("inflight", connections * pipelining * 4);
const batchSize = args.int("batch", 128);
const rtt = args.has("rtt") ? args.num("rtt", 0) : undefined;
const prefetch = args.int("prefetch", 8);
const DATASET = FASHION_MNIST;

const root = join(runtime.cwd(), ".tmp", "bench-http");
const { store, ids } = await fashionMnistStore(root, perSplit);
const exported = await exportDataset(store, DATASET, join(root, "export"));
await store.close();
const web = await startNginx({ root: join(root, "export") });
console.log(
  `${runtime.name} ${runtime.version}: ${ids.length} Fashion-MNIST JPEGs (${exported.written} exported now) from nginx at ${web.url}; ` +
    `${connections} connections × pipelining ${pipelining}, ${inflight} in flight; batch ${batchSize}, prefetch ${prefetch}, ${rounds} rounds`,
);

/** The proxy in its own process in front of nginx; its base URL. */
async function startProxyProcessFor(delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const p = await startProxyProcess(`127.0.0.1:${web.port}`, 0, ["--delay-ms", String(delayMs)]);
  return { url: `http://127.0.0.1:${p.port}/data`, close: p.close };
}

/** GETs of `ids`, `inflight` outstanding, each answered through `one`. */
function drive(ids: readonly string[], one: (id: string, next: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    let sent = 0, answered = 0;
    const next = () => {
      if (++answered === ids.length) return resolve();
      if (sent < ids.length) one(ids[sent++], next);
    };
    while (sent < Math.min(inflight, ids.length)) one(ids[sent++], next);
  });
}

async function setting(label: string, url: string, ids: readonly string[]) {
  const u = new URL(url);
  const pool = new undici.Pool(u.origin, { connections, pipelining });
  const prefix = u.pathname;
  let bytes = 0;
  const handler = (next: () => void) => ({
    onRequestStart() {},
    onResponseStart(_c: unknown, status: number) {
      if (status !== 200) throw new Error(`HTTP ${status}`);
    },
    onResponseData(_c: unknown, chunk: Uint8Array) {
      bytes += chunk.slice().length; // the copy the source makes too
    },
    onResponseEnd: () => next(),
    onResponseError(_c: unknown, e: Error) {
      console.error(`undici dispatch: ${e.message}`);
      runtime.exit(1);
    },
  });
  const source = await openReadSource(url, DATASET, { http: { connections, pipelining }, maxInFlight: inflight });
  const seeds = { ready: 0, strict: 0 };
  const last: Record<string, Loader> = {};
  const loaderRun = (order: "ready" | "strict") => async () => {
    // A loader per repetition, as a run of training would, at the default window (8 batches):
    // deeper than the source's `inflight` cap, which then sets the concurrency on the wire.
    const loader = new Loader({ store: source, ids, batchSize, prefetch, order, seed: seeds[order]++ });
    for await (const _ of loader.epoch(0)) { /* the tight loop */ }
    last[order] = loader;
  };
  const contenders: Contender[] = [
    { name: "undici dispatch", work: ids.length, baseline: true, run: () => drive(ids, (id, next) => pool.dispatch({ path: `${prefix}/${id}`, method: "GET", blocking: false }, handler(next) as never)) },
    {
      name: "undici request", work: ids.length, run: () =>
        drive(ids, (id, next) => {
          pool.request({ path: `${prefix}/${id}`, method: "GET", blocking: false }).then(async (r) => {
            bytes += (await r.body.arrayBuffer()).byteLength;
            next();
          }, (e) => {
            console.error(`undici request: ${e.message}`);
            runtime.exit(1);
          });
        }),
    },
    { name: "ready order", work: ids.length, run: loaderRun("ready") },
    { name: "strict order", work: ids.length, run: loaderRun("strict") },
  ];
  await compare(`${label}: GET every sample once (samples/s)`, { unit: "samples/s", rounds, warmup: 1 }, contenders);
  for (const order of ["ready", "strict"] as const) {
    const s = last[order].stats();
    console.log(`  ${order}: ${s.mbPerSec.toFixed(1)} MB/s; batch p50 ${s.batchMs.p50.toFixed(2)} ms, p99 ${s.batchMs.p99.toFixed(2)} ms; most outstanding ${s.maxOutstanding}; connections used ${Object.keys(s.perConnection).length}`);
  }
  if (bytes === 0) throw new Error("undici read nothing");
  await source.close();
  await pool.close();
}

try {
  if (!args.has("only-rtt")) await setting("nginx direct (RTT ~0)", web.url, ids);
  if (rtt !== undefined) {
    const proxy = await startProxyProcessFor(rtt / 2);
    try {
      // At most 2 000 samples: a round trip per `connections × pipelining` GETs is slow going.
      await setting(`nginx through the proxy, RTT ${rtt} ms`, proxy.url, ids.slice(0, 2000));
    } finally {
      await proxy.close();
    }
  }
} finally {
  await web.close();
}
runtime.exit(0);
