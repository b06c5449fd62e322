/**
 * The WebDataset source: a small Fashion-MNIST dataset exported as shards (exportShards, a few
 * samples a shard) is read back by the Loader through `wds:INDEX` from a folder, from nginx and
 * from versitygw: every id once per epoch, the store's bytes and labels, each shard streamed
 * once an epoch. A stream reset mid-shard by the TCP proxy resumes with a Range request; the
 * early-sample map keeps to its bound; a foreign index (no keys) gives URL#i ids; a sample
 * without its image is a named error. The shard-aware plan is checked as a pure value.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_NGINX, startNginx } from "../_support/nginx.ts";
import { NO_S3, startS3Server } from "../_support/s3_server.ts";
import { assertEpochAsStored, expectError } from "../_support/expect.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { freshSeed } from "../_support/random.ts";
import { folderSink } from "../../src/dataset/object_sink.ts";
import { tarEnd, tarEntry } from "../../src/dataset/tar.ts";
import { sampleEntries } from "../../src/dataset/webdataset.ts";
import { exportShards } from "../../src/source/export/export.ts";
import { s3Sink } from "../../src/source/http/s3.ts";
import { open } from "../../src/read/open.ts";
import { openWebDatasetSource, type WebDatasetSource } from "../../src/source/webdataset/webdataset_source.ts";
import { epochPlan } from "../../src/plan/epoch.ts";
import { rng, shuffle } from "../../src/plan/rng.ts";
import { Loader } from "../../src/loader.ts";
import { startProxy, uniform } from "../../tools/proxy/proxy.ts";

const DATASET = "fm";
const tmp = mkdtempSync(join(tmpdir(), "cassette-wds-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const { store, ids, want } = await fashionMnistStore(join(tmp, "fm.sqlite"), DATASET, 30);
const dir = join(tmp, "shards");
const exported = await exportShards(store, DATASET, await folderSink(dir), { seed: 5, maxSamples: 12 });
const INDEX = join(dir, "fm.index.json");

const s3 = NO_S3 ? undefined : await startS3Server();
afterAll(() => s3?.close());
if (s3) {
  const sink = await s3Sink(s3.url("cassette-wds", "shards"), { credentials: s3.credentials, createBucket: true });
  await exportShards(store, DATASET, sink, { seed: 5, maxSamples: 12 });
  await sink.close();
}
await store.close();

const web = NO_NGINX ? undefined : await startNginx({ root: dir });
afterAll(() => web?.close());

/** Every sample's bytes and label by id, and the shard order of the keys, as the index lists them. */
const index = JSON.parse(readFileSync(INDEX, "utf8")) as { shardlist: { url: string; nsamples: number; keys: string[] }[] };

async function readTwoEpochs(loader: Loader): Promise<void> {
  try {
    for (const e of [0, 1]) await assertEpochAsStored(loader, e, ids, want);
  } finally {
    await loader.close();
  }
}

test("a folder's shards: the index lists every id by shard; the Loader reads each once per epoch for 2 epochs, bytes and labels as stored, each shard streamed once an epoch", async () => {
  assert.is(ids.length, 60);
  assert.is(exported.shards.length, 5);
  assert.equal(index.shardlist.map((s) => s.keys.length), [12, 12, 12, 12, 12], "each shard lists its keys");
  assert.equal(index.shardlist.flatMap((s) => s.keys).sort(), ids.slice().sort());
  // By address: the Loader plans by the shards of the source its read path opened.
  await readTwoEpochs(new Loader({ store: `wds:${INDEX}`, ids, batchSize: 8, seed: 1 }));
  // An open source: its figures.
  const source = await open(`wds:${INDEX}`, { mode: "read", dataset: DATASET }) as WebDatasetSource;
  assert.is(source.name, `${INDEX} (fm)`);
  assert.equal(source.shards(), index.shardlist.map((s) => s.keys));
  assert.equal((await source.ids!()).sort(), ids.slice().sort());
  await readTwoEpochs(new Loader({ store: source, ids, batchSize: 8, seed: 2, readAhead: false }));
  const st = source.stats();
  // (Read ahead across the epochs' boundary, a sample both epochs ask for at once is read twice.)
  assert.is(st.opened, 10, "each shard streamed once an epoch");
  assert.is(st.evicted, 0);
  assert.is(st.bytes, 2 * exported.shards.reduce((n, s) => n + s.bytes, 0), "each shard's bytes once an epoch");
  await expectError((async () => await open(`wds:${INDEX}`, { mode: "write" }))(), "ERR_UNSUPPORTED", /read only: write them with cassette export --format webdataset/);
  await expectError(open(`wds:${join(tmp, "none.index.json")}`, { mode: "read" }), "ERR_STORE", /Cannot open shard index .*none\.index\.json/);
});

test("by address, here and in read workers, the Loader plans by the shards of the source its read path opened: in strict order an epoch is epochPlan with the index's groups", async () => {
  const groups = index.shardlist.map((s) => s.keys);
  for (const workers of [0, 2]) {
    const loader = new Loader({ store: `wds:${INDEX}`, ids, batchSize: 8, seed: 3, order: "strict", workers });
    try {
      const got: string[] = [];
      for await (const batch of loader.epoch(0)) got.push(...batch.ids);
      const o = { seed: 3, epoch: 0, batchSize: 8, rank: 0, worldSize: 1, shuffle: true, dropLast: false };
      assert.equal(got, epochPlan(ids, { ...o, groups }), `workers ${workers}: the shard-aware plan`);
      assert.not.equal(got, epochPlan(ids, o), `workers ${workers}: not the flat one`);
    } finally {
      await loader.close();
    }
  }
});

test("over HTTP (nginx): the same epochs, the shards streamed through the HTTP source's target and pool", async () => {
  const source = await open(`wds:${web!.url}/fm.index.json`, { mode: "read" }) as WebDatasetSource;
  assert.match(source.name, /^http:\/\/127\.0\.0\.1:\d+\/data\/fm\.index\.json \(fm\)$/);
  await readTwoEpochs(new Loader({ store: source, ids, batchSize: 8, seed: 3, readAhead: false }));
  assert.is(source.stats().opened, 10);
  // A tight bound: samples read alone by a Range with both ends (HTTP 206).
  const tight = await open(`wds:${web!.url}/fm.index.json`, { mode: "read", wds: { maxEarlyBytes: 3000 } }) as WebDatasetSource;
  await readTwoEpochs(new Loader({ store: tight, ids, batchSize: 8, seed: 6, readAhead: false }));
  const st = tight.stats(), total = exported.shards.reduce((n, s) => n + s.bytes, 0);
  assert.ok(st.picked > 0 && st.bytes < 3 * total, JSON.stringify(st));
  // By address too, and a missing index is named.
  await readTwoEpochs(new Loader({ store: `wds:${web!.url}/fm.index.json`, ids, batchSize: 8, seed: 3 }));
  await expectError(open(`wds:${web!.url}/none.index.json`, { mode: "read" }), "ERR_STORE", /Cannot find http:\/\/127\.0\.0\.1:\d+\/data\/none\.index\.json: it answered HTTP 404/);
}, { skip: NO_NGINX });

test("over S3 (versitygw): the same epochs, each shard GET signed; a wrong secret is ERR_STORE_AUTH", async () => {
  const [base, query] = s3!.url("cassette-wds", "shards").split("?");
  const source = await open(`wds:${base}/fm.index.json?${query}`, { mode: "read", s3: { credentials: s3!.credentials } }) as WebDatasetSource;
  assert.match(source.name, /^s3:\/\/cassette-wds\/shards\/fm\.index\.json \(fm\)$/);
  await readTwoEpochs(new Loader({ store: source, ids, batchSize: 8, seed: 4, readAhead: false }));
  assert.is(source.stats().opened, 10);
  await expectError(open(`wds:${base}/fm.index.json?${query}`, { mode: "read", s3: { credentials: { ...s3!.credentials, secretAccessKey: "wrong" } } }), "ERR_STORE_AUTH", /SignatureDoesNotMatch/);
}, { skip: NO_S3 });

test("a stream reset mid-shard resumes with a Range request from the last whole sample: every id once, no shard read again from its start", async () => {
  // 80 kB/s: a 12-sample shard takes a while, so the reset lands inside one.
  const proxy = await startProxy({ target: { host: "127.0.0.1", port: web!.port }, profile: uniform(0, { bandwidthBytesPerSec: 80_000 }) });
  const source = await openWebDatasetSource(`http://127.0.0.1:${proxy.port}/data/fm.index.json`, { http: { connections: 8 } });
  const loader = new Loader({ store: source, ids, batchSize: 6, seed: 5 });
  try {
    let cut = 0;
    const seen: string[] = [];
    for await (const b of loader.epoch(0)) {
      seen.push(...b.ids);
      // Reset every connection carrying a shard part-way through: bytes flowing, some already there.
      if (cut === 0) {
        const before = new Map(proxy.stats().connections.map((c) => [c.index, c.bytesDown]));
        await new Promise((r) => setTimeout(r, 50));
        const mid = proxy.stats().connections.filter((c) => c.closedAt === undefined && c.bytesDown > 2000 && c.bytesDown > before.get(c.index)!);
        for (const c of mid) proxy.fault({ kind: "reset", connection: c.index });
        cut = mid.length;
      }
    }
    assert.ok(cut > 0, "a connection was reset mid-shard");
    assert.is(seen.length, ids.length, "nothing lost");
    assert.is(new Set(seen).size, ids.length, "nothing twice");
    const st = source.stats();
    assert.ok(st.resumed >= 1, `resumed with Range: ${JSON.stringify(st)}`);
    assert.is(st.opened, 5, "no shard opened again from its start");
    const total = exported.shards.reduce((n, s) => n + s.bytes, 0);
    assert.ok(st.bytes < total + 4 * 2048 * cut, `little read twice: ${st.bytes} of ${total}`);
  } finally {
    await loader.close();
    await proxy.close();
  }
}, { skip: NO_NGINX });

test("the early-sample map keeps to maxEarlyBytes: streams pause, or drop their oldest for a waited-for sample read again alone; every id once", async () => {
  const bound = 3000; // about three samples
  const source = await open(`wds:${INDEX}`, { mode: "read", wds: { maxEarlyBytes: bound } }) as WebDatasetSource;
  await readTwoEpochs(new Loader({ store: source, ids, batchSize: 8, seed: 6, readAhead: false }));
  const st = source.stats();
  assert.ok(st.maxEarlyBytes > 0 && st.maxEarlyBytes <= bound, `within the bound: ${JSON.stringify(st)}`);
  assert.is(st.earlyBytes <= bound, true);
  assert.ok(st.evicted > 0 && st.picked > 0, `samples dropped, then read alone: ${JSON.stringify(st)}`);
  assert.is(st.opened, 10, "each shard still streamed once an epoch");
  const total = exported.shards.reduce((n, s) => n + s.bytes, 0);
  assert.ok(st.bytes < 3 * total, `a sample read alone is its bytes only: ${st.bytes} for two epochs of ${total}`);
  // And without a tight bound the same read holds more than that at once.
  const loose = await open(`wds:${INDEX}`, { mode: "read" }) as WebDatasetSource;
  await readTwoEpochs(new Loader({ store: loose, ids, batchSize: 8, seed: 6 }));
  assert.ok(loose.stats().maxEarlyBytes > bound, `a loose map holds more: ${loose.stats().maxEarlyBytes}`);
});

test("two ranks, each streaming every shard for its half, within a tight bound: together every id once, none twice; an id asked twice at once is answered twice", async () => {
  const seen: string[][] = [];
  for (const rank of [0, 1]) {
    const source = await open(`wds:${INDEX}`, { mode: "read", wds: { maxEarlyBytes: 4000 } }) as WebDatasetSource;
    const loader = new Loader({ store: source, ids, batchSize: 6, seed: 8, rank, worldSize: 2 });
    try {
      const mine: string[] = [];
      for await (const b of loader.epoch(0)) mine.push(...b.ids);
      seen.push(mine);
      assert.ok(source.stats().maxEarlyBytes <= 4000, JSON.stringify(source.stats()));
    } finally {
      await loader.close();
    }
  }
  assert.is(seen[0].length + seen[1].length, ids.length);
  assert.equal([...seen[0], ...seen[1]].sort(), ids.slice().sort(), "the ranks partition the epoch");

  const source = await openWebDatasetSource(INDEX);
  try {
    const id = index.shardlist[2].keys[5];
    const twice = await Promise.all([0, 1].map(() => new Promise<Uint8Array>((resolve, reject) => source.fetch(id, (e, s) => (e ? reject(e) : resolve(s!.data))))));
    for (const d of twice) assert.equal(d, want.get(id)!.data);
    assert.ok(twice[0] !== twice[1], "each its own buffer");
    assert.is(source.inFlight(), 0);
  } finally {
    await source.close();
  }
});

test("a foreign index (url and nsamples only) gives URL#i ids; a sample without its image is a named error naming its key and shard", async () => {
  writeFileSync(join(dir, "foreign.index.json"), JSON.stringify({ shardlist: index.shardlist.map((s) => ({ url: s.url, nsamples: s.nsamples })) }));
  const foreign = await openWebDatasetSource(join(dir, "foreign.index.json"));
  const fids = foreign.ids();
  assert.equal(fids.slice(0, 2), [`${index.shardlist[0].url}#0`, `${index.shardlist[0].url}#1`]);
  const byForeign = new Map(index.shardlist.flatMap((s) => s.keys.map((k, i) => [`${s.url}#${i}`, want.get(k)!] as const)));
  const loader = new Loader({ store: foreign, ids: fids, batchSize: 8, seed: 7 });
  try {
    await assertEpochAsStored(loader, 0, fids, byForeign);
  } finally {
    await loader.close();
  }

  // A shard whose second sample has a label and no image.
  const [a, b, c] = index.shardlist[0].keys;
  const entries = [
    ...sampleEntries({ key: a, image: want.get(a)!.data, label: want.get(a)!.label }),
    ...sampleEntries({ key: b, image: want.get(b)!.data, label: want.get(b)!.label }).filter((e) => e.name.endsWith(".cls")),
    ...sampleEntries({ key: c, image: want.get(c)!.data, label: want.get(c)!.label }),
  ];
  writeFileSync(join(dir, "bad-000000.tar"), Buffer.concat([...entries.map((e) => tarEntry(e.name, e.data)), tarEnd()]));
  writeFileSync(join(dir, "bad.index.json"), JSON.stringify({ shardlist: [{ url: "bad-000000.tar", nsamples: 3, keys: [a, b, c] }] }));
  const bad = await openWebDatasetSource(join(dir, "bad.index.json"));
  try {
    const got = await Promise.all([a, b, c].map((id) => new Promise<Error | number>((resolve) => bad.fetch(id, (e, s) => resolve(e ?? s!.label)))));
    assert.is(got[0], want.get(a)!.label);
    assert.is(got[2], want.get(c)!.label);
    assert.instance(got[1], Error);
    assert.is((got[1] as { code?: string }).code, "ERR_MALFORMED_INPUT");
    assert.match((got[1] as Error).message, new RegExp(`Cannot read sample '${b}' of shard .*bad-000000\\.tar \\(offset \\d+\\) as it has no image`));
  } finally {
    await bad.close();
  }

  // A shard whose bytes stop being a tar after its first sample: the samples before are read,
  // the rest are the tar error, naming the shard and the offset, without reading it again.
  const good = readFileSync(join(dir, index.shardlist[1].url));
  const keys = index.shardlist[1].keys;
  const second = good.indexOf(Buffer.from(`${keys[1]}.`));
  const broken = Buffer.from(good);
  broken[second + 148] ^= 1; // the checksum of the second sample's first header
  writeFileSync(join(dir, "broken-000000.tar"), broken);
  writeFileSync(join(dir, "broken.index.json"), JSON.stringify({ shardlist: [{ url: "broken-000000.tar", nsamples: keys.length, keys }] }));
  const torn = await openWebDatasetSource(join(dir, "broken.index.json"));
  try {
    const ask = (id: string) => new Promise<Error | number>((resolve) => torn.fetch(id, (e, s) => resolve(e ?? s!.label)));
    const answers = await Promise.all(keys.slice(0, 3).map(ask));
    assert.is(answers[0], want.get(keys[0])!.label, "the sample before the break");
    for (const e of answers.slice(1)) assert.match((e as Error).message, new RegExp(`Cannot read tar shard .*broken-000000\\.tar as the header has a bad checksum.*\\(offset ${second}\\)`));
    assert.match(String(((await ask(keys[9])) as Error).message), /bad checksum/, "a later sample: the same error");
    assert.is(torn.stats().opened, 1, "read once");
  } finally {
    await torn.close();
  }
});

test("the shard-aware plan: a permutation, each block of k shards read together, reproducible from (seed, epoch), new each epoch, ranks partition it; without groups the plan is unchanged", () => {
  const seed = freshSeed();
  const groups = Array.from({ length: 10 }, (_, s) => Array.from({ length: 7 + s }, (_, i) => `s${s}-${i}`));
  const all = groups.flat();
  const shardOf = new Map(groups.flatMap((g, s) => g.map((id) => [id, s] as const)));
  const o = { seed, batchSize: 4, groups, shardBlock: 3, shuffleBuffer: 5 };
  const plan = epochPlan(all, { ...o, epoch: 0 });
  assert.equal(plan.slice().sort(), all.slice().sort(), `a permutation (seed ${seed})`);
  // Blocks: the shards in the order the plan first meets them, by threes; each block's samples are one stretch of the plan.
  const met: number[] = [];
  for (const id of plan) if (!met.includes(shardOf.get(id)!)) met.push(shardOf.get(id)!);
  let at = 0;
  for (let b = 0; b < met.length; b += 3) {
    const block = new Set(met.slice(b, b + 3));
    const n = groups.filter((_, s) => block.has(s)).reduce((k, g) => k + g.length, 0);
    assert.ok(plan.slice(at, at + n).every((id) => block.has(shardOf.get(id)!)), `block ${b / 3} read together (seed ${seed})`);
    at += n;
  }
  assert.equal(epochPlan(all, { ...o, epoch: 0 }), plan, "reproducible");
  assert.not.equal(epochPlan(all, { ...o, epoch: 1 }), plan, "another epoch, another order");
  assert.not.equal(epochPlan(all, { ...o, epoch: 0, seed: seed + 1 }), plan, "another seed, another order");
  const ranks = [0, 1, 2].map((rank) => epochPlan(all, { ...o, epoch: 0, rank, worldSize: 3 }));
  assert.equal(ranks.flat().sort(), all.slice().sort(), "the ranks partition it");
  assert.equal(ranks[1], plan.filter((_, i) => i % 3 === 1), "rank 1 strides the same order");
  // Ids of the split only; one outside every group comes last.
  const some = [...all.filter((_, i) => i % 2 === 0), "stray"];
  const part = epochPlan(some, { ...o, epoch: 2 });
  assert.equal(part.slice().sort(), some.slice().sort());
  assert.is(part[part.length - 1], "stray");
  // No groups: the flat permutation, as before.
  assert.equal(epochPlan(all, { seed, epoch: 3, batchSize: 4 }), shuffle(all.slice(), rng(seed, 3)));
});
