/**
 * `cassette predict`: a trained model over stored images (src/train/predict.ts), its top-k per
 * sample into a predictions table of the store, a JSONL file, or both; accuracy and a confusion
 * matrix where the samples have labels.
 */
import { open as openFile, rename, rm } from "node:fs/promises";
import process from "node:process";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { loadSplit } from "../dataset/splits.ts";
import { labelClasses } from "../dataset/label.ts";
import { checkPredictionTable, defaultPredictionTable, type PredictionRow, type Store } from "../dataset/store.ts";
import { datasetNeeded, open } from "../read/open.ts";
import type { ReadSource } from "../read/sample.ts";
import { redact } from "../source/address.ts";
import { parseStoreAddress } from "../source/kinds.ts";
import { openStore } from "../source/open.ts";
import { progress } from "../observe/progress.ts";
import { deviceInfo, requestDevice } from "../gpu/device.ts";
import { intOption, optionalValue, parseArgs, required, usageError } from "./args.ts";
import type { PredictedBatch } from "../train/predict.ts";
import { count } from "../util/plural.ts";

export const help = `usage: cassette predict --store URL --dataset NAME --weights FILE [--split FILE[:INDEX|:NAME]]
                        [--out-table [NAME]] [--out FILE.jsonl] [options]

Runs the model of a weights file (train.ts --save FILE writes one; its header names the
model, so the file is enough) over the samples of a split, or of the whole dataset, through
the loader and GPU path train.ts evaluates with: decode, resize and normalize on the GPU (as the
weights' header says the model was trained; older files: train.ts's defaults), the
model's eval forward (batch norm with its running statistics), softmax. Each sample is
predicted exactly once. Where samples have labels it prints the accuracy (top-1 and top-k)
and a confusion matrix (rows: the label, columns: the prediction).

Nothing is written unless asked, so predict may read a store it cannot write:
  --out-table [NAME]   one row per sample in table NAME (default predictions_<dataset>) of the
                       store (sqlite: and cassandra:// only; made when missing), keyed by id:
                       a re-run replaces each row.
                       Columns: id, dataset, key, classes, probs (the top-k, most probable
                       first), label (null where none), weights (sha256 of the file), at (time
                       of the run). A name is a lower-case letter, then up to 47 lower-case
                       letters, digits or _, not starting ds_ or cassette_
  --out FILE.jsonl     one JSON object a line, with the same fields (replaced whole, atomically)

  --store URL          sqlite:PATH, cassandra://HOST/KEYSPACE, or what cassette read reads
                       (http(s)://, s3://, file:, wds:; these hold no tables: use --out)
  --dataset NAME       needed for sqlite: and cassandra://
  --weights FILE       the weights (format: src/train/weights.ts)
  --model NAME         check that the file holds this named model (mlp, cnn, cnn-bn)
  --split FILE[:INDEX|:NAME]  the ids (default: every sample the store lists)
  --limit N            only the first N ids
  --top-k K            classes kept per sample (default 5, at most the model's classes)
  --batch B            samples per batch (default 256)
  --workers N          read and decode in N worker threads (default 0: in this thread)
  --prefetch K|auto    batches of requests in flight (default auto)
  --json               print { store, dataset, weights, digest, model, samples, labelled,
                       accuracy, topKAccuracy, k, seconds, samplesPerSec, table, out,
                       adapter, classes, confusion } instead of the summary (accuracy and
                       confusion are null where no sample has a label)`;

const VALUED = ["store", "dataset", "split", "weights", "model", "out-table", "out", "top-k", "batch", "limit", "workers", "prefetch"];

export async function run(argv: string[]): Promise<number> {
  const o = await predictOptions(argv);
  if (o === undefined) return 0; // --help
  // From source under Node the kernels' .wgsl text needs the loader hooks (as train.ts and
  // cassette read --preprocess do); the bundle (dist/) inlines it.
  if (runtime.name === "node" && import.meta.url.endsWith(".ts")) await import("../../runtime-adapters/node_hooks.mjs");
  const { loadModel, predict, describeSpec } = await import("../train/predict.ts");

  const device = await requestDevice();
  const held: { store?: Store; source?: ReadSource; model?: { destroy(): Promise<void> | void } } = {};
  try {
    const loaded = await loadModel(device, o.weights, { name: o.model });
    const { model } = loaded;
    held.model = model;
    if (o.topK !== undefined && o.topK > model.classes) usageError("predict", `--top-k must be at most the model's ${model.classes} classes: current value is ${o.topK}`);
    const { ids, classNames } = await sampleIds(o, model.classes, held);
    const datasetName = o.dataset ?? o.split?.file.dataset ?? "";
    const tally = new Tally(model.classes, { dataset: datasetName, digest: loaded.digest, keyed: o.kind === "wds" });
    const out = await PredictionsOut.open(o, held.store);
    const bar = progress("predict", ids.length, o.json);
    const t0 = runtime.now();
    try {
      // Read workers open the address themselves: the source here only listed the ids.
      if (o.workers > 0) await held.source?.close();
      const readFrom = o.workers > 0 ? o.address : (held.store ?? held.source!);
      held.source = undefined; // the Loader closes a source it is given
      for await (const b of predict(model, { store: readFrom, dataset: o.dataset, ids, batchSize: o.batch, topK: o.topK, workers: o.workers, prefetch: o.prefetch })) {
        await out.write(tally.add(b), b.ids);
        bar.update(tally.samples);
      }
      await out.finish();
      bar.done();
    } catch (e) {
      await out.abort();
      throw e;
    }
    const seconds = (runtime.now() - t0) / 1000;
    const info = deviceInfo(device);
    const report = {
      store: redact(o.address), dataset: o.dataset ?? null, weights: o.weights, digest: loaded.digest, model: loaded.name ?? describeSpec(model.spec),
      ...tally.figures(), seconds, samplesPerSec: tally.samples / seconds, table: o.table ?? null, out: o.out ?? null,
      adapter: info ? `${info.backend}: ${info.adapter}` : null,
      classes: classNames ?? null,
    };
    if (o.json) console.log(JSON.stringify(report));
    else printSummary(report, o.holdsTables ? defaultPredictionTable(datasetName) : undefined);
    return 0;
  } finally {
    await held.source?.close().catch(() => {});
    await held.model?.destroy();
    await held.store?.close();
    device.destroy();
  }
}

interface PredictOptions {
  json: boolean;
  address: string;
  kind: string;
  /** sqlite: and cassandra:// hold tables (keys, class names, the predictions table). */
  holdsTables: boolean;
  dataset?: string;
  weights: string;
  model?: string;
  table?: string;
  out?: string;
  topK?: number;
  batch?: number;
  limit?: number;
  workers: number;
  prefetch: number | "auto";
  split?: Awaited<ReturnType<typeof loadSplit>>;
}

/** The command line, checked whole before the device, the store or the model are opened; undefined after --help. */
async function predictOptions(argv: string[]): Promise<PredictOptions | undefined> {
  // A bare --out-table names the default table (a name never starts with "-").
  const { positional, options } = parseArgs(optionalValue(argv, "out-table", "", /^[^-]/), "predict", VALUED);
  if (options.has("help")) return void console.log(help);
  if (positional.length) usageError("predict", `takes no positional arguments: got '${positional[0]}'`);
  const address = required(options, "predict", "store");
  const weights = required(options, "predict", "weights");
  const dataset = options.get("dataset") as string | undefined;
  const why = datasetNeeded(address, dataset);
  if (why) usageError("predict", `needs --dataset: ${why}`);
  const kind = parseStoreAddress(address).kind;
  const holdsTables = kind === "sqlite" || kind === "cassandra";
  const given = options.get("out-table") as string | undefined;
  const table = given === "" && holdsTables ? defaultPredictionTable(dataset!) : given;
  if (table !== undefined) {
    if (!holdsTables) {
      throw new CassetteError(
        "ERR_UNSUPPORTED",
        `Cannot write predictions to ${table ? `table '${table}'` : "a table"} of ${redact(address)} as a ${kind} store holds no tables (only sqlite: and cassandra:// do): write them to a file with --out FILE.jsonl`,
      );
    }
    checkPredictionTable(table, redact(address));
  }
  const positive = (name: string) => {
    const v = intOption(options, "predict", name);
    if (v !== undefined && v < 1) usageError("predict", `--${name} must be a positive integer: current value is ${v}`);
    return v;
  };
  const workers = intOption(options, "predict", "workers") ?? 0;
  if (workers < 0) usageError("predict", `--workers must be ≥ 0: current value is ${workers}`);
  const prefetchOpt = options.get("prefetch");
  const split = options.has("split") ? await loadSplit(String(options.get("split"))) : undefined;
  if (split && dataset !== undefined && split.file.dataset !== dataset) usageError("predict", `the split file is for dataset '${split.file.dataset}', not '${dataset}'`);
  return {
    json: options.has("json"), address, kind, holdsTables, dataset, weights, model: options.get("model") as string | undefined, table, out: options.get("out") as string | undefined,
    topK: positive("top-k"), batch: positive("batch"), limit: positive("limit"), workers,
    prefetch: prefetchOpt === undefined || prefetchOpt === "auto" ? "auto" : positive("prefetch")!, split,
  };
}

/**
 * The ids to predict (the split's, or every one the store lists; the first --limit), and the
 * dataset's class names. A store with tables is opened once, into `held`: it answers the keys,
 * the class names and the writes, and the Loader reads from it (read workers open their own).
 */
async function sampleIds(o: PredictOptions, classes: number, held: { store?: Store; source?: ReadSource }): Promise<{ ids: string[]; classNames?: string[] }> {
  let ids: string[], classNames: string[] | undefined;
  if (o.holdsTables) {
    const store = (held.store = await openStore(o.address, { create: false }));
    const spec = await store.getDataset(o.dataset!);
    classNames = labelClasses(spec.label);
    if (classNames && classNames.length !== classes) {
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot predict dataset '${o.dataset}' with weights file '${o.weights}' as its model has ${classes} classes: the dataset names ${classNames.length} (${classNames.slice(0, 5).join(", ")}${classNames.length > 5 ? ", …" : ""})`,
      );
    }
    if (o.split) ids = o.split.split.ids;
    else {
      ids = [];
      for await (const page of store.scanNat(o.dataset!)) for (const r of page) ids.push(r.id);
    }
  } else {
    const source = (held.source = await open(o.address, { mode: "read", dataset: o.dataset }));
    o.dataset ??= source.dataset;
    if (o.split && o.dataset !== undefined && o.split.file.dataset !== o.dataset) usageError("predict", `the split file is for dataset '${o.split.file.dataset}', not '${o.dataset}'`);
    if (o.split) ids = o.split.split.ids;
    else if (source.ids) ids = await source.ids();
    else throw new CassetteError("ERR_INVALID_OPTION", `Cannot predict from ${redact(o.address)} without sample ids as it cannot list them: pass --split FILE`);
  }
  if (o.limit !== undefined) ids = ids.slice(0, o.limit);
  if (ids.length === 0) throw new CassetteError("ERR_INVALID_OPTION", `Cannot predict dataset '${o.dataset}' of ${redact(o.address)} as there are no samples to predict`);
  return { ids, classNames };
}

/** The rows of each batch, and the accuracy and confusion matrix over the labelled ones. */
class Tally {
  samples = 0;
  #labelled = 0;
  #hits = 0;
  #topHits = 0;
  #k = 0;
  readonly #confusion: number[][];
  readonly #startedAt = new Date().toISOString();
  readonly #row: { dataset: string; digest: string; keyed: boolean };

  constructor(classes: number, row: { dataset: string; digest: string; keyed: boolean }) {
    this.#confusion = Array.from({ length: classes }, () => new Array<number>(classes).fill(0));
    this.#row = row;
  }

  add(b: PredictedBatch): PredictionRow[] {
    const k = (this.#k = b.k);
    const rows = b.ids.map((id, i) => {
      const label = b.labels[i] >= 0 ? b.labels[i] : null;
      const classes = Array.from(b.classes.subarray(i * k, i * k + k));
      if (label !== null) {
        this.#labelled++;
        this.#confusion[label][classes[0]]++;
        if (classes[0] === label) this.#hits++;
        if (classes.includes(label)) this.#topHits++;
      }
      // wds: ids are the shards' keys themselves; export layouts keep no keys.
      const key = this.#row.keyed ? id : null;
      return { id, dataset: this.#row.dataset, key, classes, probs: Array.from(b.probs.subarray(i * k, i * k + k)), label, weights: this.#row.digest, at: this.#startedAt };
    });
    this.samples += rows.length;
    return rows;
  }

  figures(): Pick<Summary, "samples" | "labelled" | "accuracy" | "topKAccuracy" | "k" | "confusion"> {
    const n = this.#labelled;
    return { samples: this.samples, labelled: n, accuracy: n ? this.#hits / n : null, topKAccuracy: n ? this.#topHits / n : null, k: this.#k, confusion: n ? this.#confusion : null };
  }
}

/**
 * Where the rows go: the store's table and/or a JSONL file, written whole under a temporary
 * name and renamed at the end (removed on failure). One batch's write is outstanding while the
 * next batch is read and predicted.
 */
class PredictionsOut {
  #writing: Promise<void> = Promise.resolve();
  readonly #o: PredictOptions;
  readonly #store?: Store;
  readonly #file?: Awaited<ReturnType<typeof openFile>>;
  readonly #tmp?: string;

  private constructor(o: PredictOptions, store: Store | undefined, file: Awaited<ReturnType<typeof openFile>> | undefined, tmp: string | undefined) {
    this.#o = o;
    this.#store = store;
    this.#file = file;
    this.#tmp = tmp;
  }

  static async open(o: PredictOptions, store: Store | undefined): Promise<PredictionsOut> {
    const tmp = o.out && `${o.out}.${process.pid}.tmp`;
    const file = tmp ? await openFile(tmp, "w").catch((cause) => {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot write --out file '${o.out}': ${(cause as Error).message}`, { cause });
    }) : undefined;
    return new PredictionsOut(o, store, file, tmp);
  }

  /** Waits for the last batch's write, then starts this one's (the keys looked up first, where the store has them). */
  async write(rows: PredictionRow[], ids: readonly string[]): Promise<void> {
    await this.#writing;
    const { table } = this.#o, store = this.#store, file = this.#file;
    this.#writing = (async () => {
      if (store && (table || file)) {
        const keys = await store.keysOf(this.#o.dataset!, ids);
        for (const r of rows) r.key = keys.get(r.id) ?? null;
      }
      if (table) await store!.putPredictions(table, rows);
      if (file) await file.write(rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    })();
    this.#writing.catch(() => {}); // awaited before the next batch's and at the end
  }

  async finish(): Promise<void> {
    await this.#writing;
    if (this.#file) {
      await this.#file.close();
      await rename(this.#tmp!, this.#o.out!);
    }
  }

  async abort(): Promise<void> {
    await this.#writing.catch(() => {});
    if (this.#file) {
      await this.#file.close().catch(() => {});
      await rm(this.#tmp!, { force: true });
    }
  }
}

interface Summary {
  store: string;
  dataset: string | null;
  weights: string;
  model: string;
  samples: number;
  labelled: number;
  accuracy: number | null;
  topKAccuracy: number | null;
  k: number;
  seconds: number;
  samplesPerSec: number;
  table: string | null;
  out: string | null;
  classes: string[] | null;
  confusion: number[][] | null;
}

function printSummary(r: Summary, suggestTable: string | undefined): void {
  console.log(`predicted ${count(r.samples, "sample")} of ${r.dataset ?? "the dataset"} (${r.store}) with ${r.weights} (${r.model}) in ${r.seconds.toFixed(2)} s: ${r.samplesPerSec.toFixed(0)} samples/s`);
  if (r.accuracy !== null) {
    console.log(`  accuracy ${(100 * r.accuracy).toFixed(2)} % (top-${r.k} ${(100 * r.topKAccuracy!).toFixed(2)} %) over ${count(r.labelled, "labelled sample")}`);
  } else console.log("  no sample has a label: no accuracy");
  const wrote = [r.table && `table ${r.table}`, r.out].filter(Boolean);
  if (wrote.length) console.log(`  top-${r.k} per sample written to ${wrote.join(" and ")}`);
  else console.log(`  nothing written (${suggestTable ? `--out-table, into ${suggestTable}, ` : ""}or --out FILE.jsonl keeps them)`);
  // A matrix wider than a terminal helps no one: past 20 classes it is in --json only.
  if (r.confusion && r.confusion.length <= 20) console.log(confusionText(r.confusion, r.classes));
  else if (r.confusion) console.log(`  confusion matrix of ${count(r.confusion.length, "class", "classes")}: see --json`);
}

/** The matrix with a column per predicted class; rows and columns by number, names listed after. */
function confusionText(m: number[][], names: string[] | null): string {
  const C = m.length;
  const w = Math.max(4, ...m.flat().map((v) => String(v).length + 1));
  const lines = ["  confusion (rows: label, columns: predicted; right: the row's share on the diagonal)", `  ${"".padStart(6)}${m.map((_, j) => String(j).padStart(w)).join("")}   right`];
  m.forEach((row, i) => lines.push(`  ${String(i).padStart(4)}  ${row.map((v) => String(v).padStart(w)).join("")}   ${row.reduce((a, v) => a + v, 0) ? `${((100 * row[i]) / row.reduce((a, v) => a + v, 0)).toFixed(0)} %` : ""}`));
  if (names) lines.push(`  classes: ${names.slice(0, C).map((n, i) => `${i} ${n}`).join(", ")}`);
  return lines.join("\n");
}
