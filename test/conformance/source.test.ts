/**
 * One suite for every Source, so a new store passes what every other does: the read side of
 * SQLite, Cassandra, HTTP (a real nginx serving an export), files, S3 (versitygw holding an
 * export) and WebDataset shards (`wds:` over a folder's shards), each opened from its address
 * with openReadSource, passes the same cases in every runtime: the Loader reads fresh random
 * JPEGs (cjpeg; the sources do not decode them, and shards take only images) exactly once per
 * epoch in both orders with their labels; a missing id is a final error that names it;
 * backpressure answers false and drains; the same id asked twice at once (what hedging does) is
 * answered twice, correctly. Skips, each with its reason: Cassandra without --cassandra, HTTP
 * without nginx, S3 without versitygw.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { NO_NGINX, startNginx } from "../_support/nginx.ts";
import { NO_S3, startS3Server } from "../_support/s3_server.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { folderSink } from "../../src/dataset/object_sink.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { openStore } from "../../src/source/open.ts";
import { openReadSource } from "../../src/read/open.ts";
import { STORE_KINDS } from "../../src/source/kinds.ts";
import { isRetryable } from "../../src/source/retryable.ts";
import { exportDataset, exportShards } from "../../src/source/export/export.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { Loader } from "../../src/loader.ts";
import { CassetteError } from "../../src/errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import type { DatasetSpec } from "../../src/dataset/spec.ts";
import type { Fetched, Source } from "../../src/source/source.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-source-conf-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// A unique dataset per run: Cassandra keyspaces outlive a test run.
const dataset = `src-${runtime.name}-${(runtime.now() * 1000).toFixed(0).slice(-9)}`;
const spec: DatasetSpec = { version: 1, name: dataset, columns: [], groupBy: [], label: { kind: "int" } };
const seed = freshSeed();
const next = rng(seed);
const samples = Array.from({ length: 60 }, (_, i) => {
  const w = randomInt(next, 1, 48), h = randomInt(next, 1, 48), c = next() < 0.5 ? 1 : 3;
  return { key: `k${i}`, label: randomInt(next, 0, 9), data: cjpeg(randomBytes(next, w * h * c), w, h, c as 1 | 3, ["-quality", String(randomInt(next, 20, 100))]) };
});
const want = new Map(samples.map((s) => [sampleId(dataset, s.key), s]));
const ids = [...want.keys()];
const missing = sampleId(dataset, "never-ingested");

const sqlite = `sqlite:${join(tmp, "conf.sqlite")}`;
{
  const store = await openStore(sqlite);
  await store.createDataset(spec);
  await store.put(dataset, samples);
  await exportDataset(store, dataset, join(tmp, "export"));
  await exportShards(store, dataset, await folderSink(join(tmp, "shards")), { seed: 1, maxSamples: 16 });
  await store.close();
}
const web = NO_NGINX ? undefined : await startNginx({ root: join(tmp, "export") });
afterAll(() => web?.close());

let cassandraReady: Promise<string> | undefined;
/** The Cassandra address, with the samples written once per run. */
function cassandra(): Promise<string> {
  return cassandraReady ??= (async () => {
    const address = testCassandra("cassette_conf_src")!;
    const store = await openStore(address);
    try {
      await store.createDataset(spec);
      await store.put(dataset, samples);
    } finally {
      await store.close();
    }
    return address;
  })();
}

let s3Ready: Promise<{ url: string; s3: Awaited<ReturnType<typeof startS3Server>> }> | undefined;
/** A bucket holding the export, once per run. */
function s3(): Promise<string> {
  return (s3Ready ??= (async () => {
    const server = await startS3Server();
    afterAll(() => server.close());
    const url = server.url("conformance", "export");
    const store = await openStore(sqlite);
    try {
      await exportDataset(store, dataset, url, { s3: { credentials: server.credentials, createBucket: true } });
    } finally {
      await store.close();
    }
    return { url, s3: server };
  })()).then((x) => x.url);
}

const sources: { name: string; skip: string | false; address: () => Promise<string>; options?: () => Promise<object> }[] = [
  { name: "sqlite", skip: false, address: () => Promise.resolve(sqlite) },
  { name: "cassandra", skip: NO_CASSANDRA, address: cassandra },
  { name: "http", skip: NO_NGINX, address: () => Promise.resolve(web!.url) },
  { name: "file", skip: false, address: () => Promise.resolve(`file:${join(tmp, "export")}`) },
  { name: "s3", skip: NO_S3, address: s3, options: async () => ({ s3: { credentials: (await s3Ready!).s3.credentials } }) },
  { name: "wds", skip: false, address: () => Promise.resolve(`wds:${join(tmp, "shards", `${dataset}.index.json`)}`) },
];

test("a row for every kind in the store kind table (src/source/kinds.ts), each row's address of its kind", async () => {
  assert.equal(sources.map((s) => s.name).sort(), STORE_KINDS.map((k) => k.kind).sort());
  for (const s of sources) {
    if (s.skip) continue;
    const address = await s.address();
    assert.ok(STORE_KINDS.find((k) => k.kind === s.name)!.schemes.some((p) => address.startsWith(p)), `${s.name}: ${address}`);
  }
});

/** openReadSource with the options the source needs (S3's keys) and `more`. */
async function openIt(s: (typeof sources)[number], more: object = {}): Promise<Source> {
  const address = await s.address();
  return openReadSource(address, dataset, { ...(await s.options?.()), ...more });
}

function fetchOne(src: Source, id: string): Promise<[Error | null, Fetched | undefined]> {
  return new Promise((resolve) => src.fetch(id, (e, s) => resolve([e, s])));
}

function same(s: Fetched, id: string): void {
  const w = want.get(id)!;
  assert.is(s.id, id);
  assert.is(s.label, w.label, `label of ${w.key} (seed ${seed})`);
  assert.ok(s.data.length === w.data.length && s.data.every((b, k) => b === w.data[k]), `bytes of ${w.key} (seed ${seed})`);
}

for (const s of sources) {
  test(`${s.name}: the Loader reads every id exactly once per epoch, in both orders, labels and bytes as stored`, async () => {
    for (const order of ["ready", "strict"] as const) {
      const loader = new Loader({ store: await openIt(s), ids, batchSize: 16, order, seed: 2, prefetch: 2 });
      try {
        for (let e = 0; e < 2; e++) {
          const seen = new Set<string>();
          for await (const b of loader.epoch(e)) {
            b.ids.forEach((id, i) => {
              assert.not.ok(seen.has(id), `${id} twice in epoch ${e}`);
              seen.add(id);
              same({ id, label: b.labels[i], data: b.data.subarray(b.offsets[i], b.offsets[i + 1]) }, id);
            });
          }
          assert.is(seen.size, ids.length, `${order} epoch ${e}`);
        }
      } finally {
        await loader.close();
      }
    }
  }, { skip: s.skip, timeoutMs: 120_000 });

  test(`${s.name}: a missing id is ERR_STORE 'Cannot find sample <id>', not retryable, answered once`, async () => {
    const src = await openIt(s);
    try {
      let answers = 0;
      const [err] = await new Promise<[Error | null]>((resolve) => src.fetch(missing, (e) => (answers++, resolve([e]))));
      await new Promise((r) => setTimeout(r, 20));
      assert.is(answers, 1);
      assert.instance(err, CassetteError);
      assert.is((err as CassetteError).code, "ERR_STORE");
      assert.match(err!.message, new RegExp(`Cannot find sample ${missing}`));
      assert.is(isRetryable(err), false);
    } finally {
      await src.close();
    }
  }, { skip: s.skip, timeoutMs: 60_000 });

  test(`${s.name}: backpressure: fetch answers false at maxInFlight, drains, and ends at 0 in flight`, async () => {
    const src = await openIt(s, { maxInFlight: 4 });
    try {
      let drained = 0;
      src.onDrain(() => drained++);
      const answers: boolean[] = [];
      const done = ids.slice(0, 6).map((id) => new Promise<Fetched>((resolve, reject) => {
        answers.push(src.fetch(id, (e, x) => (e ? reject(e) : resolve(x!))));
      }));
      assert.equal(answers.slice(0, 3), [true, true, true]);
      assert.is(answers[3], false, "the 4th request fills it");
      (await Promise.all(done)).forEach((x, i) => same(x, ids[i]));
      assert.ok(drained >= 1, "drain was called");
      assert.is(src.inFlight(), 0);
    } finally {
      await src.close();
    }
  }, { skip: s.skip, timeoutMs: 60_000 });

  test(`${s.name}: the same id asked twice at once (a hedge) is answered twice, correctly`, async () => {
    const src = await openIt(s);
    try {
      const [a, b] = await Promise.all([fetchOne(src, ids[3]), fetchOne(src, ids[3])]);
      assert.is(a[0], null);
      assert.is(b[0], null);
      same(a[1]!, ids[3]);
      same(b[1]!, ids[3]);
    } finally {
      await src.close();
    }
  }, { skip: s.skip, timeoutMs: 60_000 });
}
