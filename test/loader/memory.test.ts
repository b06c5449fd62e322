/**
 * maxPrefetchBytes: the window holds at most that many bytes' worth of samples (at their mean
 * size so far), never less than a batch, whatever the window in batches would allow; and every
 * sample is still delivered once. A slow consumer lets the window fill, as a training step does.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { openStore } from "../../src/source/open.ts";
import { Loader } from "../../src/loader.ts";
import { CassetteError } from "../../src/errors.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { corpus, disabled, jpegBytes } from "../decode/_fixtures.ts";

test("maxPrefetchBytes bounds the samples outstanding by their bytes; every sample still once", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-membound-"));
  const address = `sqlite:${join(dir, "big.sqlite")}`;
  const store = await openStore(address);
  try {
    const seed = freshSeed();
    const next = rng(seed);
    await store.createDataset({ version: 1, name: "big", columns: [], groupBy: [], label: { kind: "int" } });
    // 120 samples of 150–250 kB: a window of 16 batches of 4 would hold ~13 MB.
    await store.put("big", Array.from({ length: 120 }, (_, i) => ({ key: `k${i}`, label: i % 3, data: randomBytes(next, randomInt(next, 150_000, 250_000)) })));
    const ids: string[] = [];
    for await (const page of store.scanNat("big")) ids.push(...page.map((r) => r.id));
    // An open store reads here, sample by sample; its address, in read workers' packets (their
    // buffers are reused, larger than what a packet holds: the bound counts what it holds).
    const read = async (maxPrefetchBytes: number | undefined, workers: boolean) => {
      const loader = new Loader({ store: workers ? address : store, dataset: "big", ids, batchSize: 4, prefetch: 16, seed: 1, maxPrefetchBytes, workers: workers ? 2 : 0 });
      const seen: string[] = [];
      for (const epoch of [0, 1]) {
        for await (const b of loader.epoch(epoch)) {
          seen.push(...b.ids);
          assert.is(!!b.images, workers, "packets where workers read");
          b.release?.();
          await new Promise((r) => setTimeout(r, 3)); // a step: the window fills meanwhile
        }
      }
      const s = loader.stats();
      await loader.close();
      assert.is(seen.length, 2 * ids.length, `every sample read in both epochs (seed ${seed})`);
      assert.is(new Set(seen).size, ids.length);
      return { most: s.maxOutstanding, mean: s.bytes / s.samples };
    };
    for (const workers of [false, true]) {
      const free = await read(undefined, workers);
      const bound = 2_000_000;
      const bounded = await read(bound, workers);
      // At most the bound's worth at the mean size (+ one sample: the mean moves as answers come).
      const allowed = Math.max(4, Math.floor(bound / bounded.mean)) + 1;
      assert.ok(bounded.most <= allowed, `workers ${workers}: outstanding ${bounded.most} samples of ~${(bounded.mean / 1e3).toFixed(0)} kB ≤ ${allowed} (seed ${seed})`);
      assert.ok(free.most > allowed, `workers ${workers}: without the bound the window holds more: ${free.most} (the test would not see a missing bound otherwise)`);
      assert.ok(bounded.most >= 4, "at least a batch");
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("maxPrefetchBytes must be a positive number of bytes", () => {
  for (const bad of [0, -1, Number.NaN]) {
    assert.throws(() => new Loader({ store: "sqlite:/nonexistent.sqlite", dataset: "d", ids: [], batchSize: 1, maxPrefetchBytes: bad }), (e: Error) =>
      e instanceof CassetteError && /'maxPrefetchBytes' must be a positive number of bytes: current value is/.test(e.message));
  }
});

test("decoded in the pool, a released batch's image buffers carry later samples' pixels (NOTE [ Image buffers ]): every image right over 3 epochs, a batch kept unreleased untouched", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-recycle-"));
  const address = `sqlite:${join(dir, "photos.sqlite")}`;
  const store = await openStore(address);
  const jpeg = await createJpegDecoder();
  try {
    // Real JPEGs of many sizes, so that a buffer given back is often larger than the image it then holds.
    const skip = disabled();
    const names = corpus().filter((n) => !skip.has(n)).slice(0, 24);
    await store.createDataset({ version: 1, name: "photos", columns: [], groupBy: [], label: { kind: "int" } });
    await store.put("photos", names.map((n, i) => ({ key: n, label: i, data: jpegBytes(n) })));
    await store.close();
    const want = new Map(names.map((n, i) => [i, jpeg.decode(jpegBytes(n)).data]));
    const ids: string[] = [];
    const reader = await openStore(address);
    for await (const page of reader.scanNat("photos")) ids.push(...page.map((r) => r.id));
    await reader.close();
    const loader = new Loader({ store: address, dataset: "photos", ids, batchSize: 4, seed: freshSeed(), workers: 0, decodeWorkers: 2, decode: {} });
    let kept: { images: Uint8Array[]; labels: Int32Array } | undefined;
    for (let epoch = 0; epoch < 3; epoch++) {
      let n = 0;
      for await (const b of loader.epoch(epoch)) {
        b.items.forEach((s, i) => assert.equal(s.image!.data, want.get(b.labels[i]), `epoch ${epoch}: ${names[b.labels[i]]}'s pixels`));
        n += b.ids.length;
        if (!kept) kept = { images: b.items.map((s) => s.image!.data), labels: b.labels };
        else b.release?.();
      }
      assert.is(n, ids.length, `epoch ${epoch}: every sample`);
    }
    kept!.images.forEach((d, i) => assert.equal(d, want.get(kept!.labels[i]), "a batch never released keeps its pixels"));
    const st = loader.stats().prepare!;
    await loader.close();
    assert.ok((st.recycled ?? 0) >= ids.length, `later samples decoded into buffers released batches gave back: ${st.recycled} of ${st.jobs}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
