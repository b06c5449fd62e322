/**
 * One question: what does reading from S3 cost next to plain HTTP, against the same server?
 * Fashion-MNIST JPEGs (~1 kB) are ingested into SQLite, exported with `cassette export`, put
 * into a bucket of a real S3-compatible server (versitygw, built by tools/setup.sh) whose
 * policy lets anyone read it, so that one server answers signed and unsigned GETs alike:
 *
 *   undici, unsigned     Pool.dispatch with a bare handler, `inflight` outstanding: the ceiling
 *   undici, signed       the same with a SigV4 signature per request (sigv4.ts): the signing's cost
 *   S3 source            the Loader (ready order) over openReadSource(s3://…), signed
 *   HTTP source          the Loader (ready order) over openReadSource(http://…/BUCKET/PREFIX), unsigned
 *
 * at RTT ~0 and, with --rtt MS, through the project's TCP latency proxy (its own process).
 *
 *   bun bench/s3.bench.ts [--samples N] [--rounds R] [--connections C] [--pipelining P]
 *                         [--inflight K] [--batch B] [--rtt MS] [--rtt-samples N] [--quick]
 */
import { join } from "node:path";
import undici from "undici/index.js";
import { runtime } from "../runtime-adapters/index.ts";
import { exportDataset } from "../src/source/export/export.ts";
import { openReadSource } from "../src/read/open.ts";
import { Loader } from "../src/loader.ts";
import { S3Client } from "../src/source/http/s3.ts";
import { sha256Hex, signV4 } from "../src/source/http/sigv4.ts";
import { NO_S3, startS3Server } from "../test/_support/s3_server.ts";
import { compare, type Contender } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";
import { FASHION_MNIST, fashionMnistStore } from "./_lib/fashion_store.ts";
import { startProxyProcess } from "../tools/proxy/process.ts";

const args = benchArgs({
  program: "bench/s3.bench.ts",
  usage: "usage: bun bench/s3.bench.ts [--samples N] [--rounds R] [--connections C] [--pipelining P] [--inflight K] [--batch B] [--rtt MS] [--rtt-samples N] [--quick]",
  valued: ["samples", "rounds", "connections", "pipelining", "inflight", "batch", "rtt", "rtt-samples"],
  flags: ["quick"],
});
if (NO_S3) {
  console.error(`bench/s3.bench.ts: ${NO_S3}`);
  runtime.exit(2);
}
const quick = args.has("quick");
const perSplit = Math.ceil(args.int("samples", quick ? 1000 : 6000) / 2);
const rounds = args.int("rounds", quick ? 3 : 5);
const connections = args.int("connections", 4);
const pipelining = args.int("pipelining", 4);
const inflight = args.int("inflight", connections * pipelining * 4);
const batchSize = args.int("batch", 128);
const rtt = args.has("rtt") ? args.num("rtt", 0) : undefined;
const rttSamples = args.int("rtt-samples", 1000);
const DATASET = FASHION_MNIST;
const BUCKET = "bench";

const root = join(runtime.cwd(), ".tmp", "bench-s3");
const { store, ids } = await fashionMnistStore(root, perSplit);
const server = await startS3Server();
const { credentials } = server;
const s3url = server.url(BUCKET, "fm");
const t0 = performance.now();
const bucket = await S3Client.open(s3url, { credentials });
await bucket.createBucket();
await putPublicReadPolicy(server.endpoint, BUCKET);
await bucket.close();
await exportDataset(store, DATASET, s3url, { s3: { credentials } });
await store.close();
console.log(
  `${runtime.name} ${runtime.version}: ${ids.length} Fashion-MNIST JPEGs exported to ${s3url.replace(/\?.*/, "")} on versitygw at ${server.endpoint} in ${((performance.now() - t0) / 1000).toFixed(1)} s; ` +
    `${connections} connections × pipelining ${pipelining}, ${inflight} in flight; batch ${batchSize}, ${rounds} rounds`,
);

/** A bucket policy that lets anyone GET its objects: the HTTP source reads them unsigned. */
async function putPublicReadPolicy(endpoint: string, b: string): Promise<void> {
  const policy = new TextEncoder().encode(JSON.stringify({
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Principal: "*", Action: ["s3:GetObject"], Resource: [`arn:aws:s3:::${b}/*`] }],
  }));
  const host = new URL(endpoint).host;
  const headers = signV4({ method: "PUT", host, path: `/${b}`, query: { policy: "" }, payloadHash: sha256Hex(policy), region: "us-east-1", credentials });
  const res = await undici.request(`${endpoint}/${b}?policy=`, { method: "PUT", headers, body: policy });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`PUT ?policy answered HTTP ${res.statusCode}: ${text}`);
}

/** GETs of `ids`, `inflight` outstanding, each answered through `one`. */
function drive(list: readonly string[], one: (id: string, next: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    let sent = 0, answered = 0;
    const next = () => {
      if (++answered === list.length) return resolve();
      if (sent < list.length) one(list[sent++], next);
    };
    while (sent < Math.min(inflight, list.length)) one(list[sent++], next);
  });
}

async function setting(label: string, endpoint: string, list: readonly string[]) {
  const origin = new URL(endpoint);
  const pool = new undici.Pool(origin.origin, { connections, pipelining });
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
      console.error(`undici: ${e.message}`);
      runtime.exit(1);
    },
  });
  const prefix = `/${BUCKET}/fm`;
  const s3 = await openReadSource(`s3://${BUCKET}/fm?endpoint=${origin.origin}`, DATASET, { s3: { credentials, connections, pipelining }, maxInFlight: inflight });
  const http = await openReadSource(`${origin.origin}${prefix}`, DATASET, { http: { connections, pipelining }, maxInFlight: inflight });
  let seed = 0;
  const loaderRun = (source: typeof s3) => async () => {
    const loader = new Loader({ store: source, ids: list, batchSize, prefetch: 8, seed: seed++ });
    // Not closed: closing a loader closes the source it was given, which the next round reuses.
    for await (const _ of loader.epoch(0)) { /* the tight loop */ }
  };
  const contenders: Contender[] = [
    { name: "undici, unsigned", work: list.length, baseline: true, run: () => drive(list, (id, next) => pool.dispatch({ path: `${prefix}/${id}`, method: "GET", blocking: false }, handler(next) as never)) },
    {
      name: "undici, signed", work: list.length, run: () =>
        drive(list, (id, next) => {
          const path = `${prefix}/${id}`;
          const headers = signV4({ method: "GET", host: origin.host, path, region: "us-east-1", credentials });
          pool.dispatch({ path, method: "GET", blocking: false, headers }, handler(next) as never);
        }),
    },
    { name: "S3 source (Loader)", work: list.length, run: loaderRun(s3) },
    { name: "HTTP source (Loader)", work: list.length, run: loaderRun(http) },
  ];
  await compare(`${label}: GET every sample once (samples/s)`, { unit: "samples/s", rounds, warmup: 1 }, contenders);
  if (bytes === 0) throw new Error("undici read nothing");
  await s3.close();
  await http.close();
  await pool.close();
}

try {
  await setting("versitygw direct (RTT ~0)", server.endpoint, ids);
  if (rtt !== undefined) {
    const proxy = await startProxyProcess(`127.0.0.1:${server.port}`, 0, ["--delay-ms", String(rtt / 2)]);
    try {
      await setting(`versitygw through the proxy, RTT ${rtt} ms`, `http://127.0.0.1:${proxy.port}`, ids.slice(0, rttSamples));
    } finally {
      await proxy.close();
    }
  }
} finally {
  await server.close();
}
runtime.exit(0);
