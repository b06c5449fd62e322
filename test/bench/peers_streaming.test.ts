/**
 * The MosaicML Streaming peer (bench/peers/streaming_mds.py) still runs: it writes the 50
 * Fashion-MNIST samples of the test store as MDS shards, nginx serves them, and
 * `StreamingDataset` reads them through Streaming's S3 downloader into [B, 1, 28, 28] training
 * tensors, straight and through the latency proxy.
 *
 * The peer is a benchmark, not a test: its virtualenv (Streaming, PyTorch: a few GB) is built
 * only by `bash bench/peers/env.sh streaming`, never by the test command. Without it this file
 * skips, saying so. Checked once, under Bun (see peerSkip).
 */
import * as assert from "uvu/assert";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_NGINX } from "../_support/nginx.ts";
import { startProxyProcess } from "../../tools/proxy/process.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { mdsRemote, prepareMds, serveMds, STREAMING_SCRIPT, streamingReadArgs, type MdsServer, type MdsSummary } from "../../bench/peers/streaming.ts";
import { checkFmRange, checkFmReport, DATASET, peerSkip, peersStore, readNpyF32, ROOT, runPeer, SAMPLES } from "./_peers.ts";

const peer = peerSkip("streaming");
const skip = peer.skip || NO_NGINX;
const python = peer.python!;
const dir = mkdtempSync(join(tmpdir(), "cassette-peers-streaming-"));
afterAll(async () => {
  if (served) await (await served).close();
  rmSync(dir, { recursive: true, force: true });
});

let written: Promise<MdsSummary> | undefined;
let served: Promise<MdsServer> | undefined;
// 16 kB shards: the 50 samples (~1 kB each) in a few, so that the two workers fetch shards at the
// same time (the bench keeps Streaming's 64 MiB).
const SHARD_BYTES = 16_000;

/** The 50 samples as MDS shards (written once) and nginx serving them. */
function shards(): Promise<{ mds: MdsSummary; web: MdsServer }> {
  written ??= peersStore().then((store) => prepareMds({ python, store, dataset: DATASET, dir: join(dir, "mds"), root: ROOT, shardBytes: SHARD_BYTES }));
  served ??= written.then((mds) => serveMds(mds.out));
  return Promise.all([written, served]).then(([mds, web]) => ({ mds, web }));
}

/** The cache holds every shard, byte for byte as nginx serves them. */
function sameShards(local: string, mds: MdsSummary): void {
  const md5 = (p: string) => createHash("md5").update(readFileSync(p)).digest("hex");
  const names = readdirSync(mds.out).filter((n) => n.endsWith(".mds")).sort();
  assert.is(names.length, mds.shards);
  assert.equal(readdirSync(local).filter((n) => n.endsWith(".mds")).sort(), names, "every shard fetched, no temp file left");
  for (const n of names) assert.is(md5(join(local, n)), md5(join(mds.out, n)), `${n} as served`);
}

test("the Streaming peer writes the 50 samples as MDS shards, and keeps them when asked again", async () => {
  const { mds } = await shards();
  assert.is(mds.samples, SAMPLES);
  assert.ok(mds.shards >= 2, `several shards of ${SHARD_BYTES} B: ${mds.shards}`);
  assert.ok(mds.bytes > mds.jpegBytes && mds.jpegBytes > SAMPLES * 100, `the JPEGs stored as they are: ${mds.jpegBytes} B in ${mds.bytes} B of shards`);
  const again = await prepareMds({ python, store: await peersStore(), dataset: DATASET, dir: mds.out, root: ROOT, shardBytes: SHARD_BYTES });
  assert.ok(again.reused, "the same ids: the shards are kept");
  assert.is(again.bytes, mds.bytes);
}, { skip, timeoutMs: 300_000 });

test("StreamingDataset reads every sample once from nginx as Fashion-MNIST's [B, 1, 28, 28] tensor, batch times rising", async () => {
  const { mds, web } = await shards();
  const local = join(dir, "cache");
  const dump = join(dir, "first.npy");
  const r = runPeer(python, STREAMING_SCRIPT, streamingReadArgs({ remote: web.remote, local, batch: 16, dump, series: true, dataset: DATASET }));
  checkFmReport(r, 16);
  assert.is(r.distinct, SAMPLES, "50 different ids: no sample twice, none left out");
  assert.is(r.bytes, mds.jpegBytes, "the JPEG bytes of every sample");
  assert.is(r.shards, mds.shards, "every shard fetched into the emptied cache");
  assert.is(r.shardBytes, mds.bytes);
  sameShards(local, mds);

  const { shape, values } = readNpyF32(dump);
  assert.equal(shape, [16, 1, 28, 28]);
  checkFmRange(values);
  const ids = r.dump!.ids;
  assert.is(ids.length, 16, "the first batch's ids");
  const store = await CassandraStore.open(await peersStore());
  try {
    assert.is((await store.existing(DATASET, ids)).size, 16, "the first batch's ids are the store's");
  } finally {
    await store.close();
  }

  const at = r.batchAtMs!;
  assert.is(at.length, r.batches, "one time per batch");
  for (let i = 1; i < at.length; i++) assert.ok(at[i] >= at[i - 1], `batch ${i} at ${at[i]} ms, before batch ${i - 1} at ${at[i - 1]} ms`);
}, { skip, timeoutMs: 300_000 });

test("StreamingDataset reads the shards through the latency proxy (RTT +50 ms), every sample once", async () => {
  const { mds, web } = await shards();
  const proxy = await startProxyProcess(`127.0.0.1:${web.port}`, 0, ["--delay-ms", "25"]);
  try {
    const local = join(dir, "cache-proxied");
    const r = runPeer(python, STREAMING_SCRIPT, streamingReadArgs({ remote: mdsRemote(`127.0.0.1:${proxy.port}`), local, batch: 16 }));
    checkFmReport(r, 16);
    assert.is(r.distinct, SAMPLES);
    // Two forked workers sharing the parent's kept-alive connection mixed two shards' bytes
    // here once (streaming_mds.py read drops that client before the fork).
    sameShards(local, mds);
    // index.json: a connection (one round trip), boto3's HEAD, then its GET: at least 150 ms.
    assert.ok((r.indexSeconds as number) >= 0.15, `index.json came through the proxy: ${r.indexSeconds} s`);
  } finally {
    await proxy.close();
  }
}, { skip, timeoutMs: 300_000 });
