/**
 * One interface for every store that holds datasets (SQLite, Cassandra): create a dataset
 * from its spec, write samples atomically and idempotently, read them by id, scan the natural
 * metadata table to build splits. The loader's read path (a Source) is built on `get`.
 */
import { CassetteError } from "../errors.ts";
import { type DatasetSpec, RESERVED_COLUMNS } from "./spec.ts";
import { type LabelValue, storedLabel } from "./label.ts";

/** A metadata column's value: text, a number, or null. */
export type MetaValue = string | number | null;

/** One sample to store. */
export interface SampleInput {
  /** Source key: the id is `sampleId(dataset, key)`. */
  key: string;
  /** By the spec's label kind (label.ts): an integer, class numbers, floats, or bytes. */
  label: LabelValue;
  /** The sample's bytes (an encoded image). */
  data: Uint8Array;
  /** Values of the spec's columns; group columns are required. */
  meta?: Record<string, MetaValue>;
}

/** What training reads: the label travels with the bytes. */
export interface StoredSample {
  /** The sample's id. */
  id: string;
  /** The class (label.ts: -1 where the label has none). */
  label: number;
  /** The sample's bytes as stored. */
  data: Uint8Array;
  /** For labels other than one integer: a float vector (multi-hot, or the floats), or the label's bytes. */
  target?: Float32Array | Uint8Array;
}

/** A row of metadata_by_nat: what splits are built from. */
export interface NatRow {
  /** The sample's id. */
  id: string;
  /** The class (label.ts). */
  label: number;
  /** The sample's metadata column values. */
  meta: Record<string, MetaValue>;
}

/** What a store holds of one dataset: its spec, sample count, samples per label and bytes. */
export interface DatasetInfo {
  /** The dataset's spec. */
  spec: DatasetSpec;
  /** How many samples are stored. */
  count: number;
  /** Samples per label, by label value. */
  perLabel: Record<number, number>;
  /** Bytes of sample data. */
  bytes: number;
}

/** What a `Store.put` did: samples written, and samples already stored (left as they are). */
export interface PutResult {
  /** Samples written. */
  written: number;
  /** Samples already stored, left as they are. */
  existing: number;
}

/** A store of datasets (SQLite or Cassandra): create a dataset, write samples idempotently, read them by id, scan metadata for splits. */
export interface Store {
  /** Which kind of store this is. */
  readonly kind: "sqlite" | "cassandra";
  /** The address it was opened with, password hidden. */
  readonly address: string;
  /** The specs of the datasets the store holds. */
  listDatasets(): Promise<DatasetSpec[]>;
  /** The stored spec; ERR_STORE naming the datasets that exist when there is none. */
  getDataset(name: string): Promise<DatasetSpec>;
  /** Creates the dataset's tables; a second call with the same schema is a no-op. */
  createDataset(spec: DatasetSpec): Promise<DatasetSpec>;
  /** Which of `ids` are stored. */
  existing(dataset: string, ids: readonly string[]): Promise<Set<string>>;
  /**
   * Writes each sample's data and metadata atomically; a stored id is left as it is and
   * counted as existing. `checked`: the caller has just filtered out stored ids with
   * `existing()` (ingest does), so a store that would need a read per sample to know may skip
   * it (re-writing a sample writes the same rows: ids are content keys).
   */
  put(dataset: string, samples: readonly SampleInput[], opts?: { checked?: boolean }): Promise<PutResult>;
  /** The samples, in the order asked; a missing id is ERR_STORE naming it. */
  get(dataset: string, ids: readonly string[]): Promise<StoredSample[]>;
  /** Every row of metadata_by_nat, in pages. */
  scanNat(dataset: string): AsyncIterable<NatRow[]>;
  /** What the store holds of `dataset`: its spec, count, samples per label and bytes. */
  info(dataset: string): Promise<DatasetInfo>;
  /** The keys the samples among `ids` were ingested from (metadata_by_uuid); an id not stored is absent. */
  keysOf(dataset: string, ids: readonly string[]): Promise<Map<string, string>>;
  /**
   * Writes predictions to `table` (made when missing, in the schema PREDICTION_COLUMNS names),
   * keyed by id: a row already there for an id is replaced. ERR_INVALID_OPTION for a bad table
   * name (checkPredictionTable), ERR_STORE when the table exists with other columns.
   */
  putPredictions(table: string, rows: readonly PredictionRow[]): Promise<void>;
  /** Every row of a predictions table, in pages, in no particular order; ERR_STORE when it does not exist. */
  scanPredictions(table: string): AsyncIterable<PredictionRow[]>;
  /** Closes the store's connections or file. */
  close(): Promise<void>;
}

/** One sample's prediction: a row of a predictions table, or a line of `cassette predict --out`. */
export interface PredictionRow {
  /** The sample's id. */
  id: string;
  /** The dataset the sample belongs to. */
  dataset: string;
  /** The key it was ingested from, where the store keeps it. */
  key: string | null;
  /** The top-k classes, most probable first (ties: the lower class first). */
  classes: number[];
  /** Their probabilities (f32 values), in the same order. */
  probs: number[];
  /** The stored class, or null where the sample has none. */
  label: number | null;
  /** "sha256:HEX" of the weights file that predicted it. */
  weights: string;
  /** When it was predicted (ISO 8601, milliseconds: what a Cassandra timestamp keeps). */
  at: string;
}

/** A predictions table's columns, in order (SQLite and Cassandra alike; types differ). */
export const PREDICTION_COLUMNS = ["id", "dataset", "key", "classes", "probs", "label", "weights", "at"] as const;

/**
 * Unquoted-safe in CQL and SQL, lower case (Cassandra folds unquoted names), within
 * Cassandra's 48 characters; not cassette's own tables' prefixes.
 */
const TABLE_NAME = /^[a-z][a-z0-9_]{0,47}$/;

/** Throws ERR_INVALID_OPTION naming `table` and the rule when it cannot name a predictions table. */
export function checkPredictionTable(table: string, where: string): string {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot use '${table}' as a predictions table in ${where} as ${why}`);
  };
  if (!TABLE_NAME.test(table)) bad("a table name must be a lower-case letter then up to 47 lower-case letters, digits or _ (a CQL and SQL identifier)");
  if (table.startsWith("ds_") || table.startsWith("cassette_")) bad("names starting ds_ or cassette_ are cassette's own tables");
  return table;
}

/** The default predictions table of a dataset: predictions_<name>, with every other character as _. */
export function defaultPredictionTable(dataset: string): string {
  return `predictions_${dataset.toLowerCase().replace(/[^a-z0-9]/g, "_")}`;
}

/** A sample checked for storing: its label as the data table holds it, its class, its column values. */
export interface CheckedSample {
  label: number | Uint8Array;
  cls: number;
  meta: MetaValue[];
}

/**
 * `s` checked against the spec: its label by the spec's kind (label.ts), and its column values in
 * column order (types match, group columns are present, no unknown column). Errors name the
 * sample's key and what is wrong.
 */
export function checkSample(spec: DatasetSpec, s: SampleInput): CheckedSample {
  const where = `sample '${s.key}' of '${spec.name}'`;
  const { stored, cls } = storedLabel(spec.label, s.label, where);
  return { label: stored, cls, meta: metaValues(spec, s, where) };
}

function metaValues(spec: DatasetSpec, s: SampleInput, where: string): MetaValue[] {
  if (!(s.data instanceof Uint8Array)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot store ${where} as its data is not bytes (Uint8Array)`);
  }
  const meta = s.meta ?? {};
  for (const k of Object.keys(meta)) {
    if (!spec.columns.some((c) => c.name === k)) {
      const hint = RESERVED_COLUMNS.has(k) ? " (reserved)" : "";
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot store ${where} as '${k}'${hint} is not a column of the dataset: columns are ${spec.columns.map((c) => c.name).join(", ") || "none"}`,
      );
    }
  }
  return spec.columns.map((c) => {
    const v = meta[c.name] ?? null;
    if (v === null) {
      if (spec.groupBy.includes(c.name)) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot store ${where} as it has no value for group column '${c.name}'`);
      }
      return null;
    }
    const ok = c.type === "text" ? typeof v === "string" : c.type === "int" ? Number.isSafeInteger(v) : typeof v === "number" && Number.isFinite(v);
    if (!ok) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot store ${where} as column '${c.name}' is ${c.type}: current value is ${JSON.stringify(v)}`);
    }
    return v;
  });
}

export function unknownDataset(name: string, where: string, known: string[]): CassetteError {
  return new CassetteError(
    "ERR_STORE",
    `Cannot find dataset '${name}' in ${where}: ${known.length ? `it has ${known.join(", ")}` : "it has no datasets yet (cassette ingest …)"}`,
  );
}

export function sameSchema(a: DatasetSpec, b: DatasetSpec, hash: (s: DatasetSpec) => string, where: string): void {
  if (hash(a) !== hash(b)) {
    throw new CassetteError(
      "ERR_INVALID_OPTION",
      `Cannot create dataset '${a.name}' in ${where} as it exists with another schema ` +
        `(stored columns ${JSON.stringify(b.columns)}, group by [${b.groupBy}]; asked ${JSON.stringify(a.columns)}, group by [${a.groupBy}])`,
    );
  }
}
