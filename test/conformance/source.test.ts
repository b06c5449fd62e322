/**
 * One suite for every Source, so a new store passes what every other does: the read side of SQLite, Cassandra, HTTP
 * (a real nginx serving an export) and files, each opened from its address with
 * openReadSource, passes the same cases in every runtime: the Loader reads random blobs
 * exactly once per epoch in both orders with their labels; a missing id is a final error that
 * names it; backpressure answers false and drains; the same id asked twice at once (what
 * hedging does) is answered twice, correctly. Skips, each with its reason: Cassandra without
 * --cassandra, HTTP without nginx.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { NO_NGINX, startNginx } from "../_support/nginx.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { openStore } from "../../src/source/open.ts";
import { openReadSource } from "../../src/read/open.ts";
import { isRetryable } from "../../src/source/retryable.ts";
import { exportDataset } from "../../src/source/export.ts";
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
const samples = Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, label: randomInt(next, 0, 9), data: randomBytes(next, randomInt(next, 1, 5000)) }));
const want = new Map(samples.map((s) => [sampleId(dataset, s.key), s]));
const ids = [...want.keys()];
const missing = sampleId(dataset, "never-ingested");

const sqlite = `sqlite:${join(tmp, "conf.sqlite")}`;
{
  const store = await openStore(sqlite);
  await store.createDataset(spec);
  await store.put(dataset, samples);
  await exportDataset(store, dataset, join(tmp, "export"));
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

const sources: { name: string; skip: string | false; address: () => Promise<string> }[] = [
  { name: "sqlite", skip: false, address: () => Promise.resolve(sqlite) },
  { name: "cassandra", skip: NO_CASSANDRA, address: cassandra },
  { name: "http", skip: NO_NGINX, address: () => Promise.resolve(web!.url) },
  { name: "file", skip: false, address: () => Promise.resolve(`file:${join(tmp, "export")}`) },
];

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
    const address = await s.address();
    for (const order of ["ready", "strict"] as const) {
      const loader = new Loader({ store: await openReadSource(address, dataset), ids, batchSize: 16, order, seed: 2, prefetch: 2 });
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
    const src = await openReadSource(await s.address(), dataset);
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
    const src = await openReadSource(await s.address(), dataset, { maxInFlight: 4 });
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
    const src = await openReadSource(await s.address(), dataset);
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
