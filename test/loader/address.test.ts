/**
 * The Loader opens every kind of store address itself, through open(…, { mode: "read" }): an export
 * served by a real nginx (`http://…`) and read in place (`file:DIR`), each id exactly once with
 * the store's bytes and labels; and `cassette read --json` over both, its ids from the export's
 * labels.json or from --split.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_NGINX, startNginx } from "../_support/nginx.ts";
import { cassette } from "../_support/cli.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { exportDataset } from "../../src/source/export/export.ts";
import { Loader } from "../../src/loader.ts";
import { assertEpochAsStored } from "../_support/expect.ts";

const DATASET = "fm";
const tmp = mkdtempSync(join(tmpdir(), "cassette-address-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const storePath = join(tmp, "fm.sqlite");
const { store, ids, want } = await fashionMnistStore(storePath, DATASET, 40);
const out = join(tmp, "export");
await exportDataset(store, DATASET, out);
await store.close();

const web = NO_NGINX ? undefined : await startNginx({ root: out });
afterAll(() => web?.close());

const addresses = () => [
  { name: "http", address: web?.url ?? "http://nginx-missing", skip: NO_NGINX },
  { name: "file", address: `file:${out}`, skip: false as const },
];

for (const a of addresses()) {
  test(`new Loader({ store: "${a.name}:…" }) opens it: every id once per epoch, the store's bytes and labels, in both orders`, async () => {
    for (const order of ["ready", "strict"] as const) {
      const loader = new Loader({ store: a.address, ids, batchSize: 16, prefetch: 2, seed: 5, order });
      try {
        for (let epoch = 0; epoch < 2; epoch++) await assertEpochAsStored(loader, epoch, ids, want, `${order} epoch ${epoch}`);
        assert.is(loader.stats().errors, 0);
      } finally {
        await loader.close();
      }
    }
    // The dataset, when given, is checked against the export's.
    const wrong = new Loader({ store: a.address, dataset: "mnist", ids, batchSize: 8 });
    try {
      await wrong.epoch(0).next();
      assert.unreachable("another dataset");
    } catch (e) {
      assert.match((e as Error).message, /Cannot read dataset 'mnist' from .* as it holds dataset 'fm'/);
    } finally {
      await wrong.close();
    }
  }, { skip: a.skip });

  test(`cassette read --json --store ${a.name}:…: ids from labels.json, or from --split`, () => {
    const all = cassette("read", "--store", a.address, "--batch", "32", "--json");
    assert.is(all.code, 0, all.err);
    const r = JSON.parse(all.out);
    assert.is(r.samples, ids.length);
    assert.is(r.bytes, [...want.values()].reduce((n, s) => n + s.data.length, 0));
    assert.is(r.dataset, DATASET);
    assert.equal([r.errors, r.duplicates, r.hedged], [0, 0, 0]);
    // The same through 2 read workers, each opening the address itself.
    const viaWorkers = cassette("read", "--store", a.address, "--batch", "32", "--workers", "2", "--json");
    assert.is(viaWorkers.code, 0, viaWorkers.err);
    const w = JSON.parse(viaWorkers.out);
    assert.equal([w.samples, w.bytes, w.errors, w.duplicates, w.workers], [r.samples, r.bytes, 0, 0, 2]);
    const grey = cassette("read", "--store", a.address, "--batch", "32", "--workers", "1", "--decode", "--grey", "--json");
    assert.is(grey.code, 0, grey.err);
    assert.equal([JSON.parse(grey.out).samples, JSON.parse(grey.out).errors, JSON.parse(grey.out).grey], [r.samples, 0, true]);

    const split = join(tmp, `split-${a.name}.json`);
    writeFileSync(split, JSON.stringify({ version: 1, dataset: DATASET, params: {}, splits: [{ name: "some", groups: [], ids: ids.slice(0, 30) }] }));
    const some = cassette("read", "--store", a.address, "--dataset", DATASET, "--split", `${split}:some`, "--batch", "8", "--json", "--hedge");
    assert.is(some.code, 0, some.err);
    const s = JSON.parse(some.out);
    assert.is(s.samples, 30);
    assert.is(s.errors, 0);
    assert.ok(s.hedged <= 0.05 * 30, `the hedge budget: ${s.hedged}`);
  }, { skip: a.skip, timeoutMs: 120_000 });
}

test("cassette read: what is missing is named (no labels.json, no --dataset for sqlite, a split of another dataset)", () => {
  const empty = cassette("read", "--store", `file:${join(tmp, "nothing")}`, "--json");
  assert.is(empty.code, 2);
  assert.match(empty.err, /labels\.json does not exist.*cassette export/);
  const noDataset = cassette("read", "--store", `sqlite:${storePath}`);
  assert.is(noDataset.code, 2);
  assert.match(noDataset.err, /needs --dataset: a sqlite store holds several/);
  const split = join(tmp, "split-other.json");
  writeFileSync(split, JSON.stringify({ version: 1, dataset: "other", params: {}, splits: [{ name: "x", groups: [], ids: ids.slice(0, 2) }] }));
  const other = cassette("read", "--store", `file:${out}`, "--split", split);
  assert.is(other.code, 2);
  assert.match(other.err, /the split file is for dataset 'other', not 'fm'/);
  const sqlite = cassette("read", "--store", `sqlite:${storePath}`, "--dataset", DATASET, "--json");
  assert.is(sqlite.code, 0, sqlite.err);
  assert.is(JSON.parse(sqlite.out).samples, ids.length, "sqlite: the ids from the store's scan");
  const badBalance = cassette("read", "--store", `sqlite:${storePath}`, "--dataset", DATASET, "--balance", "fastest");
  assert.is(badBalance.code, 2);
  assert.match(badBalance.err, /--balance must be rate or driver: current value is fastest/);
  const greyAlone = cassette("read", "--store", `sqlite:${storePath}`, "--dataset", DATASET, "--grey");
  assert.is(greyAlone.code, 2);
  assert.match(greyAlone.err, /--grey needs --decode/);
}, { timeoutMs: 120_000 });

test("cassette read --epochs 3 --prefetch auto: every epoch whole, the next epoch read ahead during each tail", () => {
  const r = cassette("read", "--store", `file:${out}`, "--batch", "8", "--prefetch", "auto", "--epochs", "3", "--json");
  assert.is(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.is(j.samples, 3 * ids.length);
  assert.is(j.duplicates, 0);
  assert.ok(j.readAhead > 0, `epochs 1 and 2 were started during the tails before them: ${j.readAhead} samples read ahead`);
  assert.ok(j.prefetch >= 8, `auto starts at 8 batches: ${j.prefetch}`);
}, { timeoutMs: 120_000 });
