/**
 * Reading in worker threads (src/read/worker_source.ts, read_worker.ts) against reading in
 * this thread, on real stores: every sample comes once with the same bytes and label, and with
 * `decode` the same pixels as the wasm decoder gives here, on fresh random JPEGs made by cjpeg;
 * a hedged duplicate is answered on its own; errors name the sample and say whether asking
 * again can help; a worker that dies mid-epoch costs retries, not samples; bad options and an
 * address that cannot be opened are named.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { openStore } from "../../src/source/open.ts";
import { openReadSource } from "../../src/read/open.ts";
import { openWorkerSource } from "../../src/read/worker_source.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { Loader } from "../../src/loader.ts";
import { CassetteError } from "../../src/errors.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import type { Source } from "../../src/source/source.ts";
import type { Sample } from "../../src/read/sample.ts";
import type { Store } from "../../src/dataset/store.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { assertEpochAsStored } from "../_support/expect.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-workers-"));
const address = `sqlite:${join(dir, "s.sqlite")}`;
const seed = freshSeed();
const SPEC = (name: string) => ({ version: 1 as const, name, columns: [], groupBy: [], label: { kind: "int" as const } });

// Fresh random JPEGs: sizes, grey or RGB, quality and subsampling drawn from the seed.
const next = rng(seed);
const store: Store = await openStore(address);
await store.createDataset(SPEC("rnd"));
await store.put("rnd", Array.from({ length: 48 }, (_, i) => {
  const w = randomInt(next, 1, 70), h = randomInt(next, 1, 70), c = next() < 0.5 ? 1 : 3;
  const args = ["-quality", String(randomInt(next, 30, 100)), ...(c === 3 ? ["-sample", ["1x1", "2x1", "2x2"][randomInt(next, 0, 2)]] : [])];
  return { key: `r${i}`, label: randomInt(next, 0, 999), data: cjpeg(randomBytes(next, w * h * c), w, h, c as 1 | 3, args) };
}));
const ids = (await Array.fromAsync(store.scanNat("rnd"))).flat().map((r) => r.id);
// Larger images (up to 360 KB of pixels each, past a packet's first 64 KB), with files that do
// not decode among them: the worker decodes straight into its packet, which grows.
await store.createDataset(SPEC("big"));
await store.put("big", Array.from({ length: 12 }, (_, i) => {
  if (i % 5 === 4) return { key: `b${i}`, label: i, data: randomBytes(next, 500) };
  const w = randomInt(next, 100, 400), h = randomInt(next, 100, 300), c = i % 3 === 2 ? 1 : 3;
  return { key: `b${i}`, label: i, data: cjpeg(randomBytes(next, w * h * c), w, h, c as 1 | 3, ["-quality", "80"]) };
}));
const bigIds = (await Array.fromAsync(store.scanNat("big"))).flat().map((r) => r.id);
// Two samples that are not JPEGs: random bytes and an empty blob.
await store.createDataset(SPEC("bad"));
await store.put("bad", [{ key: "noise", label: 1, data: randomBytes(next, 300) }, { key: "empty", label: 2, data: new Uint8Array(0) }]);
await store.close();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fetchOne(src: Source, id: string): Promise<Sample> {
  return new Promise((resolve, reject) => src.fetch(id, (e, s) => (e ? reject(e) : resolve(s!))));
}

test("read workers answer every sample once, with the bytes, label and pixels read and decoded here", async () => {
  const here = await openReadSource(address, "rnd");
  const jpeg = await createJpegDecoder();
  const workers = await openWorkerSource(address, "rnd", { workers: 2, decode: true });
  try {
    const calls = new Map<string, number>();
    const got = await Promise.all(ids.map((id) => new Promise<Sample>((resolve, reject) =>
      workers.fetch(id, (e, s) => {
        calls.set(id, (calls.get(id) ?? 0) + 1);
        return e ? reject(e) : resolve(s!);
      })
    )));
    await new Promise((r) => setTimeout(r, 50)); // a second answer would land here
    assert.ok([...calls.values()].every((n) => n === 1), `one answer per request (seed ${seed})`);
    for (const s of got) {
      const want = await fetchOne(here, s.id);
      assert.is(s.label, want.label, `label of ${s.id} (seed ${seed})`);
      assert.equal(Array.from(s.data), Array.from(want.data), `bytes of ${s.id} (seed ${seed})`);
      const img = jpeg.decode(want.data);
      assert.ok(s.image, `decoded in the worker: ${s.id}`);
      assert.equal([s.image!.width, s.image!.height, s.image!.channels, s.image!.orientation], [img.width, img.height, img.channels, img.orientation]);
      assert.ok(s.image!.data.length === img.data.length && s.image!.data.every((v, i) => v === img.data[i]), `pixels of ${s.id} (seed ${seed})`);
    }
    assert.match(workers.name, /2 read workers/);
    assert.is(workers.inFlight(), 0);
  } finally {
    await workers.close();
    await here.close();
  }
});

test("large images and failures in one packet: pixels decoded into the growing packet equal decoding here", async () => {
  const here = await openReadSource(address, "big");
  const jpeg = await createJpegDecoder();
  const workers = await openWorkerSource(address, "big", { workers: 1, decode: true });
  try {
    for (let round = 0; round < 2; round++) {
      // All at once: their answers share packets.
      const got = await Promise.all(bigIds.map((id) => new Promise<Sample | Error>((resolve) => workers.fetch(id, (e, s) => resolve(e ?? s!)))));
      for (const [k, s] of got.entries()) {
        const want = await fetchOne(here, bigIds[k]);
        let img;
        try {
          img = jpeg.decode(want.data);
        } catch {
          assert.instance(s, Error, `${bigIds[k]} does not decode (seed ${seed})`);
          continue;
        }
        assert.ok(!(s instanceof Error), `${bigIds[k]}: ${(s as Error).message}`);
        const got = s as Sample;
        assert.equal(Array.from(got.data), Array.from(want.data), `bytes of ${got.id}`);
        assert.equal([got.image!.width, got.image!.height, got.image!.channels], [img.width, img.height, img.channels]);
        assert.ok(got.image!.data.length === img.data.length && got.image!.data.every((v, i) => v === img.data[i]), `pixels of ${got.id} (seed ${seed})`);
      }
    }
  } finally {
    await workers.close();
    await here.close();
  }
});

test("decode options reach the workers: grey: true gives the one-channel pixels decoding here gives", async () => {
  const here = await openReadSource(address, "rnd");
  const jpeg = await createJpegDecoder();
  const workers = await openWorkerSource(address, "rnd", { workers: 1, decode: { grey: true } });
  try {
    for (const id of ids.slice(0, 16)) {
      const s = await fetchOne(workers, id);
      const img = jpeg.decode((await fetchOne(here, id)).data, { grey: true });
      assert.is(s.image!.channels, 1, `${id}: one channel (seed ${seed})`);
      assert.equal(Array.from(s.image!.data), Array.from(img.data), `grey pixels of ${id} (seed ${seed})`);
    }
  } finally {
    await workers.close();
    await here.close();
  }
});

test("the same id asked twice at once (a hedge) gets two answers, each to its own request", async () => {
  const workers = await openWorkerSource(address, "rnd", { workers: 2 });
  try {
    const [a, b] = await Promise.all([fetchOne(workers, ids[3]), fetchOne(workers, ids[3])]);
    assert.is(a.id, ids[3]);
    assert.is(b.id, ids[3]);
    assert.equal(Array.from(a.data), Array.from(b.data));
    assert.is(a.image, undefined, "no decode unless asked");
  } finally {
    await workers.close();
  }
});

test("a missing id and a file that does not decode: errors name the sample and are not worth retrying", async () => {
  const workers = await openWorkerSource(address, "bad", { workers: 1, decode: true });
  try {
    const missing = sampleId("bad", "never-stored");
    const e1 = await fetchOne(workers, missing).then(() => null, (e) => e);
    assert.instance(e1, CassetteError);
    assert.is(e1.code, "ERR_STORE");
    assert.match(e1.message, missing);
    assert.is(e1.retryable, false);
    for (const key of ["noise", "empty"]) {
      const id = sampleId("bad", key);
      const e2 = await fetchOne(workers, id).then(() => null, (e) => e);
      assert.instance(e2, CassetteError, key);
      assert.is(e2.code, "ERR_MALFORMED_INPUT");
      assert.match(e2.message, `Cannot decode sample '${key}' (id ${id})`);
      assert.is(e2.retryable, false);
    }
  } finally {
    await workers.close();
  }
});

test("an address or dataset that cannot be opened: the error names it and the worker; nothing left running", async () => {
  const e = await openWorkerSource(address, "no-such-dataset", { workers: 2 }).then(() => null, (e) => e);
  assert.instance(e, CassetteError);
  assert.is(e.code, "ERR_STORE");
  assert.match(e.message, /read worker \d/);
  assert.match(e.message, "no-such-dataset");
  // The loader reports it at its first batch, as for any source.
  const loader = new Loader({ store: address, dataset: "no-such-dataset", ids, batchSize: 8, workers: 2 });
  const e2 = await loader.epoch(0).next().then(() => null, (e) => e);
  assert.match(e2?.message ?? "", "no-such-dataset");
  await loader.close();
});

test("Loader with read workers: each epoch every id once; strict order gives the plan's batches; pixels as decoding here", async () => {
  const jpeg = await createJpegDecoder();
  for (const order of ["ready", "strict"] as const) {
    const opts = { dataset: "rnd", ids, batchSize: 5, seed: 3, order, prefetch: 3 };
    const here = new Loader({ ...opts, store: address, transform: (s: Sample) => jpeg.decode(s.data) });
    const there = new Loader({ ...opts, store: address, workers: 2, decode: true });
    try {
      for (let e = 0; e < 2; e++) {
        const a = await Array.fromAsync(here.epoch(e));
        const b = await Array.fromAsync(there.epoch(e));
        const seen = b.flatMap((x) => x.ids);
        assert.is(seen.length, ids.length, `${order} epoch ${e}: nothing lost`);
        assert.is(new Set(seen).size, ids.length, `${order} epoch ${e}: nothing twice`);
        if (order === "strict") assert.equal(b.map((x) => x.ids), a.map((x) => x.ids), "the plan's batches");
        const byId = new Map(a.flatMap((x) => x.items.map((img, i) => [x.ids[i], img] as const)));
        for (const x of b) {
          x.items.forEach((s, i) => {
            const want = byId.get(x.ids[i])!;
            assert.ok(s.image && s.image.data.every((v, j) => v === want.data[j]) && s.image.data.length === want.data.length, `pixels of ${x.ids[i]} (seed ${seed})`);
            assert.is(s.label, x.labels[i]);
          });
        }
      }
    } finally {
      await here.close();
      await there.close();
    }
  }
});

test("a read worker that dies with requests in flight: retried on its replacement, nothing lost or twice", async () => {
  const crashFile = join(dir, `crashed-${runtime.name}`);
  (globalThis as { process?: { env: Record<string, string> } }).process!.env.CASSETTE_TEST_CRASH_FILE = crashFile;
  const { WorkerSource } = await import("../../src/read/worker_source.ts");
  const src = new WorkerSource(address, "rnd", { workers: 1, workerUrl: new URL("../fixtures/crashing_read_worker.ts", import.meta.url) });
  await src.ready;
  const loader = new Loader({ store: src, ids, batchSize: 4, seed: 5, prefetch: 4, retries: 3 });
  try {
    const seen = (await Array.fromAsync(loader.epoch(0))).flatMap((b) => b.ids);
    assert.is(seen.length, ids.length, "nothing lost");
    assert.is(new Set(seen).size, ids.length, "nothing twice");
    assert.ok(loader.stats().retries > 0, `the crash was felt: ${loader.stats().retries} retries`);
  } finally {
    await loader.close();
  }
});

test("a read worker killed mid-epoch holding packets it has not sent: what it held is read again, each sample once, strict batches as planned", async () => {
  const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process!.env;
  for (const order of ["ready", "strict"] as const) {
    const crashFile = join(dir, `crashed-mid-${order}-${runtime.name}`);
    env.CASSETTE_TEST_CRASH_FILE = crashFile;
    env.CASSETTE_TEST_CRASH_AT = "3"; // two packets sent, then dies sending the third
    const { WorkerSource } = await import("../../src/read/worker_source.ts");
    const src = new WorkerSource(address, "rnd", { workers: 2, decode: true, workerUrl: new URL("../fixtures/crashing_read_worker.ts", import.meta.url) });
    await src.ready;
    const B = 4;
    const loader = new Loader({ store: src, ids, batchSize: B, seed: seed + 1, prefetch: 6, order });
    const here = new Loader({ store: await openReadSource(address, "rnd"), ids, batchSize: B, seed: seed + 1, order: "strict", decode: true });
    try {
      const batches = await Array.fromAsync(loader.epoch(0));
      const { existsSync } = await import("node:fs");
      assert.ok(existsSync(crashFile), `${order}: a worker died`);
      const seen = batches.flatMap((b) => b.ids);
      assert.is(seen.length, ids.length, `${order}: nothing lost (seed ${seed})`);
      assert.is(new Set(seen).size, ids.length, `${order}: nothing twice`);
      assert.ok(batches.every((b) => b.images), `${order}: every batch made of packets`);
      assert.ok(loader.stats().retries > 0 && loader.stats().retries <= ids.length, `${order}: what the worker held was asked again: ${loader.stats().retries}`);
      const planned = await Array.fromAsync(here.epoch(0));
      if (order === "strict") assert.equal(batches.map((b) => b.ids), planned.map((b) => b.ids), "strict: the plan's batches");
      const want = new Map(planned.flatMap((b) => b.items.map((s, i) => [b.ids[i], s.image!] as const)));
      for (const b of batches) {
        b.items.forEach((s, i) => {
          const w = want.get(b.ids[i])!;
          assert.ok(s.image!.width === w.width && s.image!.data.length === w.data.length && s.image!.data.every((v, j) => v === w.data[j]), `${order}: pixels of ${b.ids[i]}`);
        });
      }
    } finally {
      delete env.CASSETTE_TEST_CRASH_AT;
      await loader.close();
      await here.close();
    }
  }
});

test("a dead worker whose replacements cannot open the store: every request gets a retryable error, none waits forever", async () => {
  // A copy of the store that disappears once the first worker has it open (an open file lives on).
  const { copyFileSync, rmSync: rm } = await import("node:fs");
  const path = join(dir, `gone-${runtime.name}.sqlite`);
  copyFileSync(join(dir, "s.sqlite"), path);
  const crashFile = join(dir, `crashed-gone-${runtime.name}`);
  (globalThis as { process?: { env: Record<string, string> } }).process!.env.CASSETTE_TEST_CRASH_FILE = crashFile;
  const { WorkerSource } = await import("../../src/read/worker_source.ts");
  const src = new WorkerSource(`sqlite:${path}`, "rnd", { workers: 1, workerUrl: new URL("../fixtures/crashing_read_worker.ts", import.meta.url) });
  await src.ready;
  rm(path, { force: true });
  try {
    const answers = await Promise.all(ids.slice(0, 12).map((id) => new Promise<Error | Sample>((resolve) => src.fetch(id, (e, s) => resolve(e ?? s!)))));
    const errors = answers.filter((a): a is Error => a instanceof Error);
    assert.ok(errors.length > 0, "the crash failed the requests in flight");
    for (const e of errors) assert.is((e as { retryable?: boolean }).retryable, true, e.message);
    // Requests sent while a replacement starts wait for it; it cannot open the store, and they
    // fail with what it said (none waits for a worker that will never answer). Between
    // replacements, with none running, a request fails at once.
    let named: Error | undefined;
    for (const t0 = runtime.now(); !named && runtime.now() - t0 < 20_000;) {
      const e = await new Promise<Error | Sample>((resolve) => src.fetch(ids[12], (e, s) => resolve(e ?? s!)));
      assert.instance(e, Error);
      assert.is((e as { retryable?: boolean }).retryable, true, (e as Error).message);
      assert.match((e as Error).message, /read worker/);
      if (/Cannot open sqlite:.* in read worker 0/.test((e as Error).message)) named = e as Error;
      else await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(named, "a request reached a replacement, which named why it could not open the store");
  } finally {
    const t0 = runtime.now();
    await src.close();
    assert.ok(runtime.now() - t0 < 4000, `close() does not wait for workers that are gone: ${runtime.now() - t0} ms`);
  }
}, { timeoutMs: 60_000 });

test("slow lane: a read worker stuck on a slow sample gives the samples it has not started to the other, which sends them first; each position once", async () => {
  const { WorkerSource } = await import("../../src/read/worker_source.ts");
  const { column, POS } = await import("../../src/read/packet.ts");
  const [slow, ...others] = ids;
  const SPIN = new URL("../fixtures/transforms/spin.ts", import.meta.url).href;
  for (const slowLane of [true, false]) {
    // The slow sample spins until this file exists: with the lane, the test makes it once every
    // other sample has come (order of events, not a race against 600 ms on a loaded machine);
    // without, after 600 ms (nothing can come before it then).
    const release = join(dir, `slow-lane-release-${runtime.name}-${slowLane}`);
    rmSync(release, { force: true });
    const options = { slowIds: [slow], slowMs: [slowLane ? 20_000 : 600], fastMs: 1, slowUntilFile: release };
    const src = new WorkerSource(address, "rnd", { workers: 2, decode: true, transform: { url: SPIN, options }, slowLane });
    await src.ready;
    /** Reads `plan` in ready order, batches of `B` asked at once: each packet's positions, in arrival order. */
    const read = (plan: string[], B: number) =>
      new Promise<number[][]>((resolve, reject) => {
        const got: number[][] = [];
        let n = 0;
        const r = src.read(plan, { batchSize: B, strict: false }, {
          packet: (p) => {
            if (p.errors.length) reject(new Error(`errors: ${p.errors.map((e) => e.error.message).join("; ")}`));
            got.push(Array.from(column(p, POS)));
            p.release?.();
            if ((n += p.n) >= plan.length - 1 && plan[0] === slow) writeFileSync(release, "");
            if (n >= plan.length) r.end(), resolve(got); // more: a position twice, which the check below names
          },
          lost: () => 0,
        });
        r.request([0, plan.length]);
      });
    try {
      // Each worker learns its deadline (32 jobs or more) on the fast samples.
      for (let k = 0; k < 3; k++) await read(others, 8);
      const before = src.laneStats();
      // One batch of all: asked of one worker, which answers in plan order and is stuck on the first.
      const got = await read([slow, ...others], ids.length);
      const all = got.flat().sort((a, b) => a - b);
      assert.equal(all, ids.map((_, i) => i), `slowLane ${slowLane}: each position once (seed ${seed})`);
      const last = got.findIndex((p) => p.includes(0));
      const stats = src.laneStats();
      if (slowLane) {
        assert.is(last, got.length - 1, "the slow sample comes last");
        assert.is(got[last].length, 1, `every other sample came before it: ${JSON.stringify(got)}`);
        // (A loaded machine may put a worker in the lane before: what it took back then is not counted.)
        assert.ok(stats!.slowLane > before!.slowLane && stats!.stolen - before!.stolen >= others.length, `taken back: ${JSON.stringify(before)} then ${JSON.stringify(stats)}`);
      } else {
        assert.is(stats, undefined, "no lane, no figures");
        assert.ok(got[last].length === ids.length, `without the lane the samples behind it wait for it: ${JSON.stringify(got)}`);
      }
    } finally {
      await src.close();
    }
  }
});

test("slow lane: two busy workers keep their queues through short pauses (nothing passed while neither is idle); each position once", async () => {
  const { WorkerSource } = await import("../../src/read/worker_source.ts");
  const { column, POS } = await import("../../src/read/packet.ts");
  const SPIN = new URL("../fixtures/transforms/spin.ts", import.meta.url).href;
  // 3 ms a sample, one in eight 15 ms (past the 5 ms deadline it learns, as a collector's pause
  // is): both workers hold deep queues, so a pause is no reason to re-read one's queue in the
  // other, which is as busy. (Before, each pause moved the paused worker's whole queue.)
  const options = { slowIds: ids.filter((_, i) => i % 8 === 3), slowMs: [15], fastMs: 3 };
  // A few fetches in flight per worker (a network store's pool), the rest of each queue not started.
  const src = new WorkerSource(address, "rnd", { workers: 2, decode: true, transform: { url: SPIN, options }, maxInFlight: 8 });
  await src.ready;
  try {
    const plan = Array.from({ length: 3 }, () => ids).flat();
    const read = () =>
      new Promise<number[]>((resolve, reject) => {
        const seen = new Array(plan.length).fill(0);
        let n = 0;
        const r = src.read(plan, { batchSize: 8, strict: false }, {
          packet: (p) => {
            if (p.errors.length) return reject(new Error(`errors: ${p.errors.map((e) => e.error.message).join("; ")}`));
            for (const pos of column(p, POS)) seen[pos]++;
            p.release?.();
            if ((n += p.n) >= plan.length) r.end(), resolve(seen);
          },
          lost: () => 0,
        });
        r.request([0, plan.length]);
      });
    await read(); // each worker learns its deadline
    const before = src.laneStats()!;
    for (let k = 0; k < 2; k++) {
      const seen = await read();
      assert.ok(seen.every((c) => c === 1), `each position once: ${JSON.stringify(seen)}`);
    }
    const after = src.laneStats()!;
    // At each read's end one worker may run dry while the other pauses: what it then takes is
    // half the other's last few. On a loaded machine a worker that the machine's other work
    // starves does run dry mid-read, and half its partner's queue goes to it (43-78 of the 288
    // positions seen): that is the rule working, and how many is the machine's load. Not whole
    // queues to and fro at every pause: that passed each position several times (867 in 288).
    assert.ok(after.stolen - before.stolen <= 2 * plan.length, `passed between busy workers: ${after.stolen - before.stolen} in ${2 * plan.length} (${JSON.stringify(after)})`);
  } finally {
    await src.close();
  }
});

test("ready order with a heavy CPU stage: a packet goes once its first answer has waited the deadline, not when a batch is full; each position once", async () => {
  const { WorkerSource } = await import("../../src/read/worker_source.ts");
  const { column, POS } = await import("../../src/read/packet.ts");
  const SPIN = new URL("../fixtures/transforms/spin.ts", import.meta.url).href;
  // 8 ms a sample: the deadline it learns is ≥ 2 × 8 ms, so a batch of 24 (~190 ms) would hold its first answers ~180 ms.
  const src = new WorkerSource(address, "rnd", { workers: 1, decode: true, transform: { url: SPIN, options: { slowIds: [], fastMs: 8 } } });
  await src.ready;
  try {
    const plan = Array.from({ length: 3 }, () => ids).flat(); // 144 positions: the first 32 teach the deadline
    const sizes: number[] = [], seen = new Array(plan.length).fill(0);
    await new Promise<void>((resolve, reject) => {
      let n = 0;
      const r = src.read(plan, { batchSize: 24, strict: false }, {
        packet: (p) => {
          if (p.errors.length) return reject(new Error(`errors: ${p.errors.map((e) => e.error.message).join("; ")}`));
          sizes.push(p.n);
          for (const pos of column(p, POS)) seen[pos]++;
          p.release?.();
          if ((n += p.n) >= plan.length) r.end(), resolve();
        },
        lost: () => 0,
      });
      r.request([0, plan.length]);
    });
    assert.ok(seen.every((c) => c === 1), `each position once: ${JSON.stringify(seen)}`);
    const late = sizes.slice(-4);
    assert.ok(late.every((n) => n < 12), `once the deadline is learned, packets go well before a batch is full: ${JSON.stringify(sizes)}`);
  } finally {
    await src.close();
  }
});

test("packet slabs: a released packet's slab is filled again; a batch held is never written over; past the cap packets are buffers of their own", async () => {
  const { WorkerSource } = await import("../../src/read/worker_source.ts");
  const { POS, sampleOf } = await import("../../src/read/packet.ts");
  type P = import("../../src/read/packet.ts").Packet;
  // (Not instanceof: a buffer that crossed from a worker may have another realm's prototype.)
  const shared = (p: P) => Object.prototype.toString.call(p.buf) === "[object SharedArrayBuffer]";
  // What each id's pixels are, decoded here from the stored bytes.
  const here = await openReadSource(address, "rnd");
  const jpeg = await createJpegDecoder();
  const want = new Map<string, Uint8Array>();
  for (const id of ids) want.set(id, jpeg.decode((await fetchOne(here, id)).data).data);
  await here.close();
  /** Entry i of `p` holds the pixels of the id at its plan position. */
  const check = (p: P, plan: string[], what: string) => {
    const pos = p.cols.subarray(POS * p.n, POS * p.n + p.n);
    for (let i = 0; i < p.n; i++) {
      const id = plan[pos[i]], img = sampleOf(p, i, id).image!, w = want.get(id)!;
      assert.ok(img.data.length === w.length && img.data.every((v, j) => v === w[j]), `${what}: pixels of ${id} at position ${pos[i]} (seed ${seed})`);
    }
  };
  /** Reads `plan` as a loader's window does: 4 batches asked at first, one more for each packet. */
  const read = (src: InstanceType<typeof WorkerSource>, plan: string[], B: number, release: boolean) =>
    new Promise<P[]>((resolve, reject) => {
      const got: P[] = [];
      let n = 0, next = 0;
      const ask = (k: number) => {
        const to = Math.min(plan.length, next + k * B);
        if (to > next) r.request([next, to]), (next = to);
      };
      const r = src.read(plan, { batchSize: B, strict: false }, {
        packet: (p) => {
          if (p.errors.length) return reject(new Error(`errors: ${p.errors.map((e) => e.error.message).join("; ")}`));
          got.push(p);
          if (release) check(p, plan, "released"), p.release?.();
          if ((n += p.n) >= plan.length) r.end(), resolve(got);
          else ask(1);
        },
        lost: () => 0,
      });
      ask(4);
    });
  const plan = Array.from({ length: 4 }, () => ids).flat(); // 192 positions
  const cycled = new WorkerSource(address, "rnd", { workers: 2, decode: true });
  await cycled.ready;
  try {
    const got = await read(cycled, plan, 2, true);
    assert.ok(got.every(shared), "packet reads fill slabs");
    const slabs = new Set(got.map((p) => p.buf)).size;
    assert.ok(slabs < got.length / 3, `released slabs are filled again: ${slabs} slabs for ${got.length} packets`);
  } finally {
    await cycled.close();
  }
  // One worker, every packet held: none is written over, and past 32 slabs packets come in buffers of their own.
  const held = new WorkerSource(address, "rnd", { workers: 1, decode: true });
  await held.ready;
  try {
    const got = await read(held, plan, 2, false);
    for (const p of got) check(p, plan, "held");
    const inSlabs = got.filter(shared);
    assert.ok(inSlabs.length > 0 && inSlabs.length <= 32, `at most 32 slabs a worker: ${inSlabs.length} of ${got.length} packets`);
    assert.is(new Set(inSlabs.map((p) => p.buf)).size, inSlabs.length, "no slab held twice");
  } finally {
    await held.close();
  }
});

test("scaling read workers: idle workers retire (what they hold goes on elsewhere), a backlog with idle cores starts one more; every position once", async () => {
  const { WorkerSource } = await import("../../src/read/worker_source.ts");
  const { column, POS } = await import("../../src/read/packet.ts");
  /** Reads `plan` in batches of 4, asking for the next one `gapMs` after each packet: each position's count. */
  const read = (src: InstanceType<typeof WorkerSource>, plan: string[], gapMs: number, whole: boolean) =>
    new Promise<number[]>((resolve) => {
      const seen = new Array(plan.length).fill(0);
      let n = 0, next = 0;
      const ask = () => {
        if (next < plan.length) r.request([next, Math.min(plan.length, next + 4)]), (next += 4);
      };
      const r = src.read(plan, { batchSize: 4, strict: false }, {
        packet: (p) => {
          if (p.errors.length) throw new Error(`errors: ${JSON.stringify(p.errors)}`);
          for (const pos of column(p, POS)) seen[pos]++;
          n += p.n + p.errors.length;
          p.release?.();
          if (n >= plan.length) r.end(), resolve(seen);
          else if (!whole) setTimeout(ask, gapMs);
        },
        lost: () => 0,
      });
      if (whole) r.request([0, plan.length]);
      else ask();
    });
  // Idle: a batch asked for every 100 ms, where a worker answers it in a few. Four periods (a second) of a worker's worth idle retire one.
  const idle = new WorkerSource(address, "rnd", { workers: 2, decode: true, scale: { min: 1, max: 2 } });
  await idle.ready;
  try {
    // 192 positions, 48 batches: ~4.8 s, some 16 periods. Long enough for four idle periods in a
    // row after one where the machine's other work kept a worker busy (a clean-clone run, x14:
    // idle 1.64, 1.84, 1.88, then 0.96, and the 2.4 s read ended before four more).
    const plan = Array.from({ length: 4 }, () => ids).flat();
    const seen = await read(idle, plan, 100, false);
    assert.ok(seen.every((c) => c === 1), `every position once: ${JSON.stringify(seen)}`);
    const st = idle.laneStats()!;
    assert.is(st.workers, 1, `an idle worker retired: ${JSON.stringify(st.history)}, periods ${JSON.stringify(st.periods.slice(0, 8))}`);
    assert.equal(st.history.map(([, n]) => n), [2, 1], "its history");
  } finally {
    await idle.close();
  }
  // Distinct ids from here on (a worker keeps to itself an id it was asked for twice).
  const distinct = await openStore(address);
  await distinct.createDataset(SPEC("distinct"));
  await distinct.put("distinct", Array.from({ length: 400 }, (_, i) => ({ key: `d${i}`, label: i, data: randomBytes(next, 16) })));
  const distinctIds = (await Array.fromAsync(distinct.scanNat("distinct"))).flat().map((r) => r.id);
  await distinct.close();
  // A backlog: everything asked of one worker at once, a transform of 3 ms a sample (~1.2 s in
  // all), on a machine whose cores are half idle (its CPU times given: a loaded test machine has
  // none to spare, and the rule rightly would not grow there).
  let t = 0;
  const halfIdle = () => ((t += 100), { cores: 2, idleMs: t, totalMs: 2 * t });
  const SPIN = new URL("../fixtures/transforms/spin.ts", import.meta.url).href;
  // The transform on the bytes (no decoding): it spins 3 ms a sample.
  // No slow lane: what moves to the new worker is the scaler's doing.
  const busy = new WorkerSource(address, "distinct", { workers: 1, transform: { url: SPIN, options: { slowIds: [], fastMs: 3 } }, scale: { min: 1, max: 2, cpuTimes: halfIdle }, slowLane: false });
  await busy.ready;
  try {
    const seen = await read(busy, distinctIds, 0, true);
    assert.ok(seen.every((c) => c === 1), `every position once: ${JSON.stringify(seen)}`);
    const st = busy.laneStats()!;
    assert.equal(st.history.map(([, n]) => n).slice(0, 2), [1, 2], `grew, to its bound: ${JSON.stringify(st.history)}, periods ${JSON.stringify(st.periods)}`);
    assert.ok(st.stolen > 0, `the new worker took part of the first one's queue: ${JSON.stringify(st)}`);
  } finally {
    await busy.close();
  }
  // Retired mid-read while holding positions: those it had not started go to the other worker,
  // the rest it sends before it stops. Distinct ids (a worker keeps an id it was asked twice).
  // No idle core (so the scaler starts none), no slow lane: what moves is the retirement's doing.
  let u = 0;
  const noIdle = () => ((u += 100), { cores: 2, idleMs: 0, totalMs: 2 * u });
  const two = new WorkerSource(address, "distinct", { workers: 2, transform: { url: SPIN, options: { slowIds: [], fastMs: 3 } }, slowLane: false, scale: { min: 1, max: 2, cpuTimes: noIdle } });
  await two.ready;
  try {
    const reading = read(two, distinctIds.slice(0, 200), 0, true);
    await new Promise((r) => setTimeout(r, 150));
    two.resize(1);
    const seen = await reading;
    assert.ok(seen.every((c) => c === 1), `every position once: ${JSON.stringify(seen)}`);
    const st = two.laneStats()!;
    assert.is(st.workers, 1, "one worker left");
    assert.equal(st.history.map(([, n]) => n), [2, 1], "its history");
    assert.ok(st.stolen > 0, `what it had not started went to the other: ${JSON.stringify(st)}`);
  } finally {
    await two.close();
  }
});

test("bad read-worker options are named", async () => {
  const bad = (o: Record<string, unknown>, what: RegExp) =>
    assert.throws(() => new Loader({ store: address, dataset: "rnd", ids, batchSize: 4, ...o }), (e: Error) => e instanceof CassetteError && what.test(e.message));
  bad({ workers: -1 }, /'workers' must be a whole number or "auto": current value is -1/);
  bad({ workers: 1.5 }, /'workers' must be a whole number or "auto": current value is 1.5/);
  bad({ workers: "many" }, /'workers' must be a whole number or "auto": current value is many/);
  assert.throws(() => new Loader({ store: { name: "x" } as unknown as Source, ids, batchSize: 4, workers: 2 }), /'workers' needs a store address/);
  const e = await openWorkerSource(address, "rnd", { workers: 0 }).then(() => null, (e) => e);
  assert.match(e?.message ?? "", /'workers' must be a positive integer: current value is 0/);
  const d = await openWorkerSource(address, "rnd", { workers: 1, decode: { grey: 1 as never } }).then(() => null, (e) => e);
  assert.match(d?.message ?? "", /'grey' must be true or false: current value is number 1/);
  const sc = await openWorkerSource(address, "rnd", { workers: 1, scale: { min: 3, max: 2 } }).then(() => null, (e) => e);
  assert.match(sc?.message ?? "", /'scale' must be whole numbers 1 ≤ min ≤ max: current value is \{"min":3,"max":2\}/);
});

test("workers: \"auto\" scales the read workers on more than 4 cores, between 2 and cores − 1; a count given, or a small machine, keeps them fixed", async () => {
  const { workerScale } = await import("../../src/read/worker_source.ts");
  assert.equal(workerScale(8, undefined, 16), { min: 2, max: 15 });
  assert.equal(workerScale(8, "auto", 16), { min: 2, max: 15 });
  assert.is(workerScale(8, 8, 16), undefined, "a count given");
  assert.is(workerScale(2, undefined, 4), undefined, "4 cores");
  assert.is(workerScale(0, undefined, 16), undefined, "no workers");
});

test("Loader with read workers from Cassandra: two epochs, every sample once, bytes as stored", async () => {
  const cass = testCassandra("cassette_workers")!;
  const dataset = `workers-fixed-${runtime.name}`;
  const direct = await openStore(cass);
  // Bytes fixed per key: a sample stored by an earlier run keeps its first bytes (ids are content keys).
  const samples = Array.from({ length: 300 }, (_, i) => {
    const r = rng(i + 1);
    return { key: `k${i}`, label: i % 7, data: randomBytes(r, randomInt(r, 0, 2048)) };
  });
  let stored: string[];
  try {
    await direct.createDataset(SPEC(dataset));
    await direct.put(dataset, samples);
    stored = (await Array.fromAsync(direct.scanNat(dataset))).flat().map((r) => r.id);
  } finally {
    await direct.close();
  }
  const want = new Map(samples.map((s) => [sampleId(dataset, s.key), s]));
  const loader = new Loader({ store: cass, dataset, ids: stored, batchSize: 32, workers: 2, seed: 9, readAhead: true });
  try {
    for (let e = 0; e < 2; e++) await assertEpochAsStored(loader, e, stored, want);
  } finally {
    await loader.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });

test("decodeWorkers: read here, decode in a pool of decode workers; every id once, the bytes kept, pixels as decoding here; a file that does not decode is named", async () => {
  const jpeg = await createJpegDecoder();
  for (const order of ["ready", "strict"] as const) {
    const loader = new Loader({ store: address, dataset: "rnd", ids, batchSize: 7, seed: 5, order, decode: true, decodeWorkers: 2 });
    try {
      const batches = await Array.fromAsync(loader.epoch(0));
      const seen = batches.flatMap((b) => b.ids);
      assert.is(new Set(seen).size, ids.length, `${order}: every id`);
      assert.is(seen.length, ids.length, `${order}: once`);
      for (const b of batches) {
        b.items.forEach((s, i) => {
          const want = jpeg.decode(s.data); // the pool decoded a copy: the sample keeps its bytes
          assert.ok(s.data.length > 0 && s.image, `${b.ids[i]} keeps its bytes and has pixels (seed ${seed})`);
          assert.equal([s.image!.width, s.image!.height, s.image!.channels], [want.width, want.height, want.channels]);
          assert.ok(s.image!.data.every((v, j) => v === want.data[j]), `pixels of ${b.ids[i]} (seed ${seed})`);
        });
      }
      assert.ok(loader.stats().bytes > 0);
    } finally {
      await loader.close();
    }
  }
  const bad = new Loader({ store: address, dataset: "bad", ids: ["noise", "empty"].map((k) => sampleId("bad", k)), batchSize: 2, decode: true, decodeWorkers: 1 });
  const e = await Array.fromAsync(bad.epoch(0)).then(() => null, (e) => e);
  await bad.close();
  assert.instance(e, CassetteError);
  assert.match(e.message, /Cannot (read|decode) sample .* of epoch 0|Cannot decode sample/);
  const refuse = (o: object, re: RegExp) => assert.throws(() => new Loader({ store: address, dataset: "rnd", ids, batchSize: 4, ...o }), re);
  refuse({ decodeWorkers: 2 }, /'decodeWorkers' needs 'decode'/);
  refuse({ decode: true, decodeWorkers: 2, workers: 2 }, /'decodeWorkers' and 'workers' cannot both be set/);
  refuse({ decode: true, decodeWorkers: 1.5 }, /'decodeWorkers' must be a whole number or "auto": current value is 1.5/);
  refuse({ transform: { module: "" } }, /'module' must be a path or URL/);
  refuse({ transform: 7 }, /'transform' must be a function or { module, options }: current value is number/);
});
