/**
 * rankShards over a WebDataset export read by address: four ranks, each a Loader over its own
 * `wds:` source, stream their own shards. Together they hand over every sample once an epoch,
 * within one sample of each other; each rank opens exactly the shards its samples are in (a
 * run shares its end shards with its neighbours only), and the shards move between ranks from
 * epoch to epoch. Striding instead, every rank streams every shard.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { freshSeed } from "../_support/random.ts";
import { folderSink } from "../../src/dataset/object_sink.ts";
import { exportShards } from "../../src/source/export/export.ts";
import { open } from "../../src/read/open.ts";
import type { WebDatasetSource } from "../../src/source/webdataset/webdataset_source.ts";
import { Loader } from "../../src/loader.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-rank-shards-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// 62 samples in shards of at most 7: nine shards, the last of 6.
const { store, ids } = await fashionMnistStore(join(tmp, "fm.sqlite"), "fm", 31);
const exported = await exportShards(store, "fm", await folderSink(join(tmp, "shards")), { seed: 5, maxSamples: 7 });
await store.close();
const INDEX = join(tmp, "shards", "fm.index.json");
const index = JSON.parse(readFileSync(INDEX, "utf8")) as { shardlist: { keys: string[] }[] };
const shardOf = new Map(index.shardlist.flatMap((s, i) => s.keys.map((id) => [id, i] as const)));

/** Epoch `epoch` on each of `world` ranks: what each handed over, its source's figures, and the bytes its Loader says it received. */
async function ranks(world: number, epoch: number, seed: number, rankShards: boolean) {
  const out: { ids: string[]; opened: number; bytes: number; received?: number }[] = [];
  for (let rank = 0; rank < world; rank++) {
    const source = await open(`wds:${INDEX}`, { mode: "read" }) as WebDatasetSource;
    const loader = new Loader({ store: source, ids, batchSize: 4, seed, rank, worldSize: world, rankShards, readAhead: false });
    try {
      const mine: string[] = [];
      for await (const b of loader.epoch(epoch)) mine.push(...b.ids);
      const st = source.stats();
      out.push({ ids: mine, opened: st.opened, bytes: st.bytes, received: loader.stats().received });
    } finally {
      await loader.close();
    }
  }
  return out;
}

test("rankShards, 4 ranks over a wds: export: every sample once, the ranks within one sample; each rank opens only the shards of its own samples, and they rotate by epoch", async () => {
  const seed = freshSeed();
  assert.is(ids.length, 62);
  assert.is(exported.shards.length, 9);
  const total = exported.shards.reduce((n, s) => n + s.bytes, 0);
  const owned: string[][] = [];
  for (const epoch of [0, 1, 2]) {
    const got = await ranks(4, epoch, seed, true);
    const what = `seed ${seed}, epoch ${epoch}`;
    assert.equal(got.flatMap((g) => g.ids).sort(), [...ids].sort(), `${what}: every sample once`);
    assert.equal(got.map((g) => g.ids.length).sort(), [15, 15, 16, 16], `${what}: within one sample`);
    const sets = got.map((g) => new Set(g.ids.map((id) => shardOf.get(id)!)));
    got.forEach((g, rank) => assert.is(g.opened, sets[rank].size, `${what}: rank ${rank} opened ${g.opened} shards, its samples are in ${sets[rank].size}`));
    assert.ok(sets.reduce((a, s) => a + s.size, 0) <= 9 + 3, `${what}: only neighbours share a shard`);
    // The index gives each sample's offset and the Loader each rank's plan (Source.plan): a rank
    // that shares a shard streams only its part, so the ranks stream the shards once between them.
    const bytes = got.reduce((a, g) => a + g.bytes, 0);
    assert.is(bytes, total, `${what}: ${bytes} bytes streamed by the 4 ranks, the shards hold ${total}`);
    got.forEach((g, rank) => assert.is(g.received, g.bytes, `${what}: rank ${rank}'s Loader reports the bytes its source received`));
    owned.push(sets.map((s) => [...s].sort().join()));
  }
  assert.ok(owned.some((o) => o.join("|") !== owned[0].join("|")), `seed ${seed}: the shards move between ranks`);
  // Striding, each rank streams nearly every shard for its quarter (a shard none of its samples
  // is in, it skips): here about 8 of the 9, four times as much as rankShards.
  const strided = await ranks(4, 0, seed, false);
  assert.equal(strided.flatMap((g) => g.ids).sort(), [...ids].sort());
  const opened = strided.reduce((a, g) => a + g.opened, 0);
  assert.ok(opened > 2 * (9 + 3), `seed ${seed}: striding opened ${opened} shards in all`);
});

test("an index without offsets (another writer's): every sample once over 4 ranks, a shared shard read from its start by the rank that needs its tail", async () => {
  const seed = freshSeed();
  const total = exported.shards.reduce((n, s) => n + s.bytes, 0);
  const bare = join(tmp, "shards", "bare.index.json");
  const doc = JSON.parse(readFileSync(INDEX, "utf8")) as { shardlist: { offsets?: number[] }[] };
  for (const s of doc.shardlist) delete s.offsets;
  writeFileSync(bare, JSON.stringify(doc));
  const got: string[] = [];
  let bytes = 0;
  for (let rank = 0; rank < 4; rank++) {
    const source = await open(`wds:${bare}`, { mode: "read" }) as WebDatasetSource;
    const loader = new Loader({ store: source, ids, batchSize: 4, seed, rank, worldSize: 4, rankShards: true, readAhead: false });
    try {
      for await (const b of loader.epoch(0)) got.push(...b.ids);
      bytes += source.stats().bytes;
    } finally {
      await loader.close();
    }
  }
  assert.equal(got.sort(), [...ids].sort(), `seed ${seed}: every sample once`);
  assert.ok(bytes > total, `seed ${seed}: ${bytes} bytes streamed without offsets, the shards hold ${total}: a shared shard's tail is found by reading from its start`);
});

test("rankShards by address, read workers left to the Loader: the ranks read in their own threads and stream the shards' bytes exactly once between them", async () => {
  const seed = freshSeed();
  const total = exported.shards.reduce((n, s) => n + s.bytes, 0);
  const seen: string[] = [];
  let bytes = 0;
  for (let rank = 0; rank < 4; rank++) {
    const loader = new Loader({ store: `wds:${INDEX}`, ids, batchSize: 4, seed, rank, worldSize: 4, rankShards: true, readAhead: false, decode: true });
    try {
      for await (const b of loader.epoch(0)) seen.push(...b.ids), b.release?.();
      bytes += loader.stats().received ?? 0;
    } finally {
      await loader.close();
    }
  }
  assert.equal(seen.sort(), [...ids].sort(), `seed ${seed}: every sample once`);
  assert.is(bytes, total, `seed ${seed}: ${bytes} bytes streamed by the 4 ranks, the shards hold ${total}`);
});

test("shards by address, read workers left to the Loader (one rank, no rankShards): the epoch streamed in the loader's thread, each shard's bytes once, the decode in the pool", async () => {
  const seed = freshSeed();
  const total = exported.shards.reduce((n, s) => n + s.bytes, 0);
  const loader = new Loader({ store: `wds:${INDEX}`, ids, batchSize: 4, seed, readAhead: false, decode: true });
  const seen: string[] = [];
  try {
    for await (const b of loader.epoch(0)) {
      seen.push(...b.ids);
      assert.ok(b.items.every((s) => (s as { image?: unknown }).image), "every sample decoded");
      b.release?.();
    }
    assert.equal(seen.sort(), [...ids].sort(), `seed ${seed}: every sample once`);
    // Two read workers would each stream every shard of the block their batches fall in.
    assert.is(loader.stats().received, total, `seed ${seed}: bytes streamed; the shards hold ${total}`);
  } finally {
    await loader.close();
  }
});

test("rankShards with 2 read workers a rank: each Loader reports the bytes its workers streamed (Loader.stats().received): at least its shards once, at most once a worker", async () => {
  const seed = freshSeed();
  const total = exported.shards.reduce((n, s) => n + s.bytes, 0);
  const biggest = Math.max(...exported.shards.map((s) => s.bytes));
  const alone = await ranks(2, 0, seed, true); // in the loader's thread: each rank's shards once
  let sum = 0;
  const seen: string[] = [];
  for (let rank = 0; rank < 2; rank++) {
    const loader = new Loader({ store: `wds:${INDEX}`, ids, batchSize: 4, seed, rank, worldSize: 2, rankShards: true, readAhead: false, workers: 2 });
    try {
      for await (const b of loader.epoch(0)) {
        seen.push(...b.ids);
        b.release?.();
      }
      const r = loader.stats().received ?? 0;
      // Each worker streams the shards of the samples it is given: the rank's batches go to
      // both, so a shard may be streamed by each (the workers do not split the shards).
      const once = alone[rank].bytes;
      assert.ok(r >= once && r <= 2 * once + biggest, `seed ${seed}: rank ${rank}'s workers received ${r} bytes; its shards, streamed here, ${once}`);
      sum += r;
    } finally {
      await loader.close();
    }
  }
  assert.equal(seen.sort(), [...ids].sort(), `seed ${seed}: every sample once`);
  assert.ok(sum >= total, `seed ${seed}: ${sum} bytes streamed by the 2 ranks' workers, the shards hold ${total}`);
});
