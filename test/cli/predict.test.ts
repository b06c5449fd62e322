import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cassette, type CliResult } from "../_support/cli.ts";
import { testDevice } from "../_support/gpu.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import type { PredictionRow, Store } from "../../src/dataset/store.ts";
import { openStore } from "../../src/source/open.ts";
import { Loader } from "../../src/loader.ts";
import type { DecodedImage } from "../../src/gpu/pack.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import { dense } from "../../src/train/layers.ts";
import { createModel } from "../../src/train/model.ts";
import { loaderBatches } from "../../src/train/loader_batches.ts";
import { inputNormalization, loadModel } from "../../src/train/predict.ts";

// One store of 2 × 150 Fashion-MNIST samples and an mlp trained on it for one epoch (train.ts,
// as a user makes one), shared by the tests of this file.
const dir = mkdtempSync(join(tmpdir(), "cassette-predict-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const FM = "idx:/usr/share/datasets/fashion-mnist/";
const store = `sqlite:${join(dir, "fm.sqlite")}`;
const weights = join(dir, "mlp.bin");

// The first prediction, into a table and a file at once: the tests below read what it wrote.
const first = join(dir, "p.jsonl");
let ready: Promise<{ predicted: CliResult }> | undefined;
function setUp(): Promise<{ predicted: CliResult }> {
  return (ready ??= (async () => {
    ok(cassette("ingest", FM, "--store", store, "--dataset", "fm", "--limit", "150"), "ingest");
    const [cmd, ...args] = runtime.scriptCommand("train.ts", [
      "--store", store, "--dataset", "fm", "--model", "mlp", "--epochs", "1", "--save", weights, "--out", join(dir, "run"), "--json",
    ]);
    const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 60_000 });
    assert.is(r.status, 0, `train.ts: ${r.stderr}`);
    const predicted = ok(cassette("predict", "--store", store, "--dataset", "fm", "--weights", weights, "--top-k", "3", "--batch", "64", "--out-table", "predictions_fm", "--out", first, "--json"), "predict");
    return { predicted };
  })());
}

function ok(r: CliResult, what: string): CliResult {
  assert.is(r.code, 0, `${what}: ${r.err}`);
  return r;
}

function readJsonl(path: string): PredictionRow[] {
  return readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

const byId = (rows: PredictionRow[]) => [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

async function tableRows(s: Store, table: string): Promise<PredictionRow[]> {
  const out: PredictionRow[] = [];
  for await (const page of s.scanPredictions(table)) out.push(...page);
  return out;
}

async function storedIds(s: Store, dataset: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const page of s.scanNat(dataset)) ids.push(...page.map((r) => r.id));
  return ids;
}

/** Every sample once, top-k sorted, probabilities > 0 summing to ≤ 1, keys that give the ids. */
function checkRows(rows: PredictionRow[], ids: string[], k: number, digest: string): void {
  assert.is(rows.length, ids.length, "one row per sample");
  assert.equal(new Set(rows.map((r) => r.id)), new Set(ids), "every sample exactly once");
  for (const r of rows) {
    assert.is(r.classes.length, k);
    assert.is(r.probs.length, k);
    assert.is(new Set(r.classes).size, k, `distinct classes: ${r.classes}`);
    for (let j = 1; j < k; j++) assert.ok(r.probs[j] <= r.probs[j - 1], `sorted: ${r.probs}`);
    assert.ok(r.probs.every((p) => p > 0 && p <= 1), `in (0, 1]: ${r.probs}`);
    const sum = r.probs.reduce((a, p) => a + p, 0);
    assert.ok(sum > 0 && sum <= 1 + 1e-6, `sum ${sum}`);
    assert.is(r.id, sampleId("fm", r.key!), "the key is the one the id was made from");
    assert.ok(r.label !== null && r.label >= 0 && r.label < 10);
    assert.is(r.weights, digest);
  }
}

/** model.evaluate's accuracy on `ids`, through the same loader and preprocessing. */
async function evaluateAccuracy(ids: string[]): Promise<number> {
  const device = await testDevice();
  const { model } = await loadModel(device, weights);
  const s = await openStore(store, { create: false });
  const loader = new Loader<DecodedImage>({ store: s, dataset: "fm", ids, batchSize: 64, shuffle: false, order: "strict", decode: { grey: true }, transform: (x) => x.image! });
  const pre = await createPreprocessor(device, { width: 28, height: 28, channels: 1, ...inputNormalization(1) });
  try {
    const m = await model.evaluate(loaderBatches(loader, pre, 0, { classes: 10 }));
    assert.is(m.samples, ids.length);
    return m.accuracy;
  } finally {
    await loader.close();
    pre.destroy();
    await model.destroy();
    await s.close();
  }
}

test("cassette predict writes every sample's top-k to a SQLite table and a JSONL file that agree; accuracy is evaluate's; a re-run replaces rows", async () => {
  const doc = JSON.parse((await setUp()).predicted.out);
  const s = await openStore(store, { create: false });
  try {
    const ids = await storedIds(s, "fm");
    assert.is(ids.length, 300);
    assert.is(doc.samples, 300);
    assert.is(doc.labelled, 300);
    assert.is(doc.model, "mlp", "the header's spec is the named model's");
    assert.match(doc.digest, /^sha256:[0-9a-f]{64}$/);
    const rows = readJsonl(first);
    checkRows(rows, ids, 3, doc.digest);
    // The summary's figures are the rows'.
    const hits = rows.filter((x) => x.classes[0] === x.label).length;
    assert.is(doc.accuracy, hits / rows.length);
    assert.is(doc.topKAccuracy, rows.filter((x) => x.classes.includes(x.label!)).length / rows.length);
    assert.is(doc.confusion.flat().reduce((a: number, v: number) => a + v, 0), 300);
    assert.is(doc.confusion.reduce((a: number, row: number[], i: number) => a + row[i], 0), hits, "the diagonal counts the hits");
    assert.is(doc.classes[0], "T-shirt/top", "classes named from the dataset's label map");
    assert.is(doc.accuracy, await evaluateAccuracy(ids), "top-1 accuracy equals model.evaluate's on the same samples");
    assert.ok(doc.accuracy > 0.3, `one epoch learns something: ${doc.accuracy}`);
    const table = await tableRows(s, "predictions_fm");
    assert.equal(byId(table), byId(rows), "the table's rows equal the JSONL's");

    // A re-run replaces each id's row (a later time), adds none.
    // A bare --out-table is predictions_<dataset>.
    const again = ok(cassette("predict", "--store", store, "--dataset", "fm", "--weights", weights, "--top-k", "3", "--out-table", "--limit", "100", "--json"), "re-run");
    assert.equal([JSON.parse(again.out).samples, JSON.parse(again.out).table], [100, "predictions_fm"]);
    const after = await tableRows(s, "predictions_fm");
    assert.is(after.length, 300, "no duplicates");
    assert.is(after.filter((x) => x.at !== rows[0].at).length, 100, "the 100 predicted again carry the new run's time");
    const before = new Map(rows.map((x) => [x.id, x]));
    for (const x of after) assert.equal([x.classes, x.probs], [before.get(x.id)!.classes, before.get(x.id)!.probs], "the same weights predict the same");
  } finally {
    await s.close();
  }
}, { timeoutMs: 90_000 });

test("cassette predict from cassette export's folder (file:) predicts what it predicts from the store; a store without tables refuses --out-table", async () => {
  await setUp();
  const folder = join(dir, "export");
  ok(cassette("export", "--store", store, "--dataset", "fm", "--out", folder), "export");
  const refused = cassette("predict", "--store", `file:${folder}`, "--weights", weights, "--out-table", "predictions_fm");
  assert.is(refused.code, 2);
  assert.match(refused.err, /Cannot write predictions to table 'predictions_fm' of file:.* as a file store holds no tables.*--out FILE\.jsonl \[ERR_UNSUPPORTED\]/);
  const bare = cassette("predict", "--store", `file:${folder}`, "--weights", weights, "--out-table");
  assert.match(bare.err, /Cannot write predictions to a table of file:.* as a file store holds no tables/);
  const fromFile = join(dir, "file.jsonl");
  ok(cassette("predict", "--store", `file:${folder}`, "--weights", weights, "--top-k", "3", "--out", fromFile), "predict file:");
  const a = byId(readJsonl(fromFile)), b = byId(readJsonl(first));
  assert.is(a.length, 300);
  assert.ok(a.every((x) => x.key === null), "an export keeps no keys");
  assert.equal(a.map((x) => [x.id, x.classes, x.probs, x.label]), b.map((x) => [x.id, x.classes, x.probs, x.label]));
}, { timeoutMs: 90_000 });

test("the weights' header carries train.ts's input normalization, and predict normalizes by the model's own; a bad one is named", async () => {
  await setUp();
  const { decodeWeights, encodeWeights } = await import("../../src/train/weights.ts");
  const { predict } = await import("../../src/train/predict.ts");
  const bytes = readFileSync(weights);
  const { header, values } = decodeWeights(bytes, weights);
  assert.equal(header.normalize, inputNormalization(1), "train.ts --save recorded the normalization it trained with");
  const device = await testDevice();
  const s = await openStore(store, { create: false });
  const ids = (await storedIds(s, "fm")).slice(0, 40);
  const { model } = await loadModel(device, weights);
  /** Each id's top class and its probability, predicted with the model's normalization as it stands. */
  const run = async () => {
    const out = new Map<string, string>();
    for await (const b of predict(model, { store: s, dataset: "fm", ids, topK: 1, batchSize: 16 })) {
      b.ids.forEach((id, i) => out.set(id, `${b.classes[i]}:${b.probs[i].toFixed(5)}`));
    }
    return out;
  };
  try {
    assert.equal(model.normalize, header.normalize, "loadModel reads it");
    const recorded = await run();
    model.normalize = { mean: [0.9], std: [0.1] };
    const other = await run();
    assert.ok([...recorded].some(([id, p]) => other.get(id) !== p), "another normalization in the model gives other predictions: predict uses the model's");
    model.normalize = undefined; // a file from before it was recorded: inputNormalization, as train.ts used
    assert.equal(await run(), recorded);
  } finally {
    await model.destroy();
    await s.close();
  }
  const bad = join(dir, "bad-normalize.bin");
  writeFileSync(bad, encodeWeights({ ...header, normalize: { mean: [0.2], std: [0] } }, values));
  await loadModel(device, bad).then(
    () => assert.unreachable("a std of 0 loads"),
    (e: Error) => assert.match(e.message, /normalization of weights file .*bad-normalize\.bin .*std > 0/),
  );
});

test("cassette predict refuses by name: another model's weights, a bad table name, a table of other columns; --help", async () => {
  await setUp();
  const fail = (args: string[], re: RegExp) => {
    const r = cassette("predict", "--store", store, "--dataset", "fm", ...args);
    assert.is(r.code, 2, `${args.join(" ")}: ${r.out}`);
    assert.match(r.err, re);
  };
  fail(["--weights", weights, "--model", "cnn"], /Cannot use weights file '.*mlp\.bin' for model 'cnn' as it holds model 'mlp'.*\[ERR_INVALID_OPTION\]/);
  // A model of 3 classes, saved as train.ts saves: refused for a dataset that names 10.
  const device = await testDevice();
  const three = createModel(device, { input: [1, 28, 28], layers: [dense(3)] });
  const other = join(dir, "three.bin");
  await three.save(other);
  await three.destroy();
  fail(["--weights", other], /Cannot predict dataset 'fm' with weights file '.*three\.bin' as its model has 3 classes: the dataset names 10 \(T-shirt\/top/);
  fail(["--weights", join(dir, "missing.bin")], /Cannot read weights file '.*missing\.bin'/);
  for (const name of ["Predictions", "p-1", "ds_fm_data_by_uuid", "x".repeat(49)]) {
    fail(["--weights", weights, "--out-table", name], new RegExp(`Cannot use '${name}' as a predictions table in sqlite:.*\\[ERR_INVALID_OPTION\\]`));
  }
  fail(["--weights", weights, "--out-table", "cassette_meta"], /names starting ds_ or cassette_ are cassette's own tables/);
  // A table of that name that is not a predictions table is left alone.
  const db = runtime.openSqlite(join(dir, "fm.sqlite"));
  db.exec("CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY, text TEXT)");
  db.close();
  fail(["--weights", weights, "--out-table", "notes"], /Cannot use table 'notes' in sqlite:.* for predictions as it exists with other columns \(id, text; .*\[ERR_STORE\]/);
  fail(["--weights", weights, "--top-k", "11"], /--top-k must be at most the model's 10 classes: current value is 11/);
  const help = ok(cassette("predict", "--help"), "--help");
  assert.match(help.out, /usage: cassette predict/);
  assert.match(help.out, /--out-table \[NAME\]/);
  assert.match(ok(cassette("--help"), "--help").out, /predict --store URL/);
}, { timeoutMs: 90_000 });

test("cassette predict writes a Cassandra predictions table keyed by id: the rows equal the JSONL, a re-run replaces them", async () => {
  await setUp();
  const address = testCassandra("cassette_predict")!;
  ok(cassette("ingest", FM, "--store", address, "--dataset", "fm", "--limit", "40"), "ingest into Cassandra");
  const out = join(dir, "cassandra.jsonl");
  const args = ["--store", address, "--dataset", "fm", "--weights", weights, "--out-table", "predictions_fm"];
  // Twice: the second run replaces the first's rows (and must find the table it made).
  ok(cassette("predict", ...args, "--top-k", "2"), "predict");
  const doc = JSON.parse(ok(cassette("predict", ...args, "--top-k", "2", "--out", out, "--json"), "re-run").out);
  const s = await openStore(address, { create: false });
  try {
    const ids = await storedIds(s, "fm");
    assert.is(ids.length, 80);
    const rows = readJsonl(out);
    checkRows(rows, ids, 2, doc.digest);
    assert.equal(byId(await tableRows(s, "predictions_fm")), byId(rows), "the table holds the second run's rows, once each");
  } finally {
    await s.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });
