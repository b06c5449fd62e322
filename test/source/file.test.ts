/**
 * `cassette export` and the file source: a small Fashion-MNIST dataset exported through the
 * CLI (one split first, then the rest, then nothing: resumable, atomic per file), read back in
 * place with the Loader through openReadSource("file:DIR"); missing files, unknown ids and
 * bad labels files are clear errors; the source's backpressure holds.
 */
import * as assert from "uvu/assert";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cassette } from "../_support/cli.ts";
import { assertEpochAsStored, expectError } from "../_support/expect.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { openReadSource } from "../../src/read/open.ts";
import { openFileSource } from "../../src/source/files/file.ts";
import { Loader } from "../../src/loader.ts";

const DATASET = "fm";
const tmp = mkdtempSync(join(tmpdir(), "cassette-file-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const storePath = join(tmp, "fm.sqlite");
const { store, ids, want } = await fashionMnistStore(storePath, DATASET, 50);
await store.close();
const out = join(tmp, "export");

test("cassette export: a split, then the rest, then nothing; parts of an interrupted run are removed; --json and --help", () => {
  const splitFile = join(tmp, "splits.json");
  writeFileSync(splitFile, JSON.stringify({ version: 1, dataset: DATASET, params: {}, splits: [{ name: "first", groups: [], ids: ids.slice(0, 30) }] }));
  const base = ["export", "--store", `sqlite:${storePath}`, "--dataset", DATASET, "--out", out, "--json"];
  const first = cassette(...base, "--split", `${splitFile}:0`);
  assert.is(first.code, 0, first.err);
  const a = JSON.parse(first.out);
  assert.equal([a.samples, a.written, a.existing, a.labels], [30, 30, 0, 30]);
  assert.is(a.bytes, ids.slice(0, 30).reduce((n, id) => n + want.get(id)!.data.length, 0));

  // What a run killed mid-write leaves: a part under a temporary name, never a final one.
  const part = join(out, `.cassette-part-${ids[40]}-dead`);
  writeFileSync(part, want.get(ids[40])!.data.subarray(0, 10));
  const second = cassette(...base);
  assert.is(second.code, 0, second.err);
  const b = JSON.parse(second.out);
  assert.equal([b.samples, b.written, b.existing, b.labels], [100, 70, 30, 100]);
  const names = readdirSync(out).sort();
  assert.equal(names, [...ids, "labels.json"].sort(), "the objects and labels.json, no parts");

  const third = cassette(...base);
  assert.is(third.code, 0, third.err);
  assert.equal([JSON.parse(third.out).written, JSON.parse(third.out).existing], [0, 100], "a re-run writes nothing");

  const labels = JSON.parse(readFileSync(join(out, "labels.json"), "utf8"));
  assert.equal([labels.format, labels.version, labels.dataset, labels.count], ["cassette-labels", 1, DATASET, 100]);
  for (const id of ids) assert.is(labels.labels[id], want.get(id)!.label, `label of ${id}`);

  const help = cassette("export", "--help");
  assert.is(help.code, 0);
  assert.match(help.out, /usage: cassette export --store URL --dataset NAME --out DIR/);
  const missing = cassette("export", "--store", `sqlite:${storePath}`, "--dataset", DATASET);
  assert.is(missing.code, 2);
  assert.match(missing.err, /needs --out/);
  const other = cassette("export", "--store", `sqlite:${storePath}`, "--dataset", "nope", "--out", join(tmp, "x"));
  assert.is(other.code, 2);
  assert.match(other.err, /nope/);
}, { timeoutMs: 60_000 });

test("file:DIR through the Loader: every id once, the store's bytes and labels", async () => {
  const source = await openReadSource(`file:${out}`, DATASET, { file: { concurrency: 4 } });
  assert.is(source.name, `file:${out} (fm)`);
  const loader = new Loader({ store: source, ids, batchSize: 16, prefetch: 3, seed: 11 });
  try {
    await assertEpochAsStored(loader, 0, ids, want);
    assert.equal(loader.stats().perConnection, { file: loader.stats().bytes });
    assert.equal(loader.stats().samplesPerConnection, { file: ids.length });
  } finally {
    await loader.close();
  }
});

test("a missing file and an id outside labels.json are ERR_STORE 'Cannot find sample <id>', not retried", async () => {
  const gone = ids[5];
  renameSync(join(out, gone), join(tmp, "away"));
  try {
    const loader = new Loader({ store: await openReadSource(`file:${out}`), ids, batchSize: 10 });
    try {
      await expectError((async () => {
        for await (const _ of loader.epoch(0));
      })(), "ERR_STORE", new RegExp(`Cannot find sample ${gone} of dataset 'fm' in file:.*${gone} does not exist`));
      assert.is(loader.stats().retries, 0);
    } finally {
      await loader.close();
    }
  } finally {
    renameSync(join(tmp, "away"), join(out, gone));
  }
  const src = await openFileSource(out);
  const err = await new Promise<Error | null>((r) => src.fetch("labels.json", (e) => r(e)));
  assert.match(err!.message, /Cannot find sample labels\.json .*not in labels\.json/);
});

test("backpressure: fetch answers false at maxInFlight and drains once a read completes", async () => {
  const src = await openFileSource(out, { dataset: DATASET, concurrency: 2, maxInFlight: 4 });
  const answers: boolean[] = [];
  let drained = 0;
  src.onDrain(() => drained++);
  const done = ids.slice(0, 4).map((id) => new Promise<number>((resolve, reject) => {
    answers.push(src.fetch(id, (e, s) => (e ? reject(e) : resolve(s!.data.length))));
  }));
  assert.equal(answers, [true, true, true, false]);
  assert.is(src.inFlight(), 4);
  const lengths = await Promise.all(done);
  assert.equal(lengths, ids.slice(0, 4).map((id) => want.get(id)!.data.length));
  assert.is(drained, 1);
  assert.is(src.inFlight(), 0);
});

test("opening: no labels.json, a bad labels.json, another dataset, sqlite without a dataset: each a clear error", async () => {
  const empty = join(tmp, "empty");
  await expectError(openReadSource(`file:${empty}`), "ERR_STORE", /labels\.json does not exist.*cassette export/);
  const bad = join(tmp, "bad");
  const badLabels = (doc: unknown) => {
    rmSync(bad, { recursive: true, force: true });
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, "labels.json"), typeof doc === "string" ? doc : JSON.stringify(doc));
  };
  badLabels("{ not json");
  await expectError(openReadSource(`file:${bad}`), "ERR_MALFORMED_INPUT", /labels\.json as it is not JSON/);
  badLabels({ [ids[0]]: 1, dataset: "fm", count: 1 });
  await expectError(openReadSource(`file:${bad}`), "ERR_MALFORMED_INPUT", /'format' is not "cassette-labels"/);
  badLabels({ format: "cassette-labels", version: 1, dataset: "fm", count: 2, labels: { [ids[0]]: 1 } });
  await expectError(openReadSource(`file:${bad}`), "ERR_MALFORMED_INPUT", /'count' is 2 but it lists 1 labels/);
  badLabels({ format: "cassette-labels", version: 1, dataset: "fm", count: 1, labels: { "../etc/passwd": 1 } });
  await expectError(openReadSource(`file:${bad}`), "ERR_MALFORMED_INPUT", /'\.\.\/etc\/passwd' is not a valid sample id/);
  badLabels({ format: "cassette-labels", version: 2, dataset: "fm", count: 0, labels: {} });
  await expectError(openReadSource(`file:${bad}`), "ERR_UNSUPPORTED", /version is 2/);
  await expectError(openReadSource(`file:${out}`, "mnist"), "ERR_STORE", /Cannot read dataset 'mnist' from file:.* as it holds dataset 'fm'/);
  await expectError(openReadSource(`sqlite:${storePath}`), "ERR_INVALID_OPTION", /without a dataset name/);
});

test("openReadSource(sqlite:…) reads through the store's source; closing it closes the store", async () => {
  const source = await openReadSource(`sqlite:${storePath}`, DATASET);
  const loader = new Loader({ store: source, ids: ids.slice(0, 20), batchSize: 8 });
  let n = 0;
  for await (const b of loader.epoch(0)) n += b.ids.length;
  assert.is(n, 20);
  await loader.close();
  await source.close(); // a second close is harmless
});
