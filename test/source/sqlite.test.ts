import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { SqliteStore } from "../../src/source/sqlite.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { CassetteError } from "../../src/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("SQLite store round trip: random blobs come back byte for byte, with labels, in the asked order", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const path = join(dir, "roundtrip.sqlite");
  const store = SqliteStore.open(path);
  const samples = Array.from({ length: 300 }, (_, i) => ({
    key: `img/${i}.jpg`,
    label: randomInt(next, 0, 9),
    data: randomBytes(next, randomInt(next, 0, 20_000)), // empty blobs included
  }));
  assert.equal(store.put("rt", samples), { written: 300, existing: 0 });
  store.close();

  const again = SqliteStore.open(path); // reopened: the data is on disk, not in a cache
  const ids = samples.map((s) => sampleId("rt", s.key)).reverse();
  const got = again.get(ids);
  assert.is(got.length, 300);
  got.forEach((g, i) => {
    const want = samples[299 - i];
    assert.is(g.id, ids[i]);
    assert.is(g.label, want.label, `label of ${want.key} (seed ${seed})`);
    assert.equal(Array.from(g.data), Array.from(want.data), `bytes of ${want.key} (seed ${seed})`);
  });
  assert.is(again.count("rt"), 300);
  assert.is(new Set(again.ids("rt")).size, 300);
  again.close();
});

test("SQLite store: writing the same samples twice stores them once", () => {
  const store = SqliteStore.open(join(dir, "idem.sqlite"));
  const samples = [0, 1, 2].map((i) => ({ key: `k${i}`, label: i, data: new Uint8Array([i]) }));
  assert.equal(store.put("d", samples), { written: 3, existing: 0 });
  assert.equal(store.put("d", samples), { written: 0, existing: 3 });
  assert.is(store.count("d"), 3);
  store.close();
});

test("SQLite store: a bad sample rolls back the whole call and names the key", () => {
  const store = SqliteStore.open(join(dir, "atomic.sqlite"));
  try {
    store.put("d", [
      { key: "good", label: 1, data: new Uint8Array([1]) },
      { key: "bad", label: 1.5, data: new Uint8Array([2]) },
    ]);
    assert.unreachable("should throw");
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
    assert.match((e as Error).message, /'bad'/);
  }
  assert.is(store.count("d"), 0, "the good sample of the failed call is not stored either");
  try {
    store.get([sampleId("d", "good")]);
    assert.unreachable("should throw");
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_STORE");
    assert.match((e as Error).message, new RegExp(sampleId("d", "good")));
  }
  store.close();
});
