/**
 * One interface for every store that holds datasets (SQLite, Cassandra): create a dataset
 * from its spec, write samples atomically and idempotently, read them by id, scan the natural
 * metadata table to build splits. The loader's read path (a Source) is built on `get`.
 */
import { CassetteError } from "../errors.ts";
import { type DatasetSpec, RESERVED_COLUMNS } from "./spec.ts";

export type MetaValue = string | number | null;

/** One sample to store. */
export interface SampleInput {
  /** Source key: the id is `sampleId(dataset, key)`. */
  key: string;
  label: number;
  data: Uint8Array;
  /** Values of the spec's columns; group columns are required. */
  meta?: Record<string, MetaValue>;
}

/** What training reads: the label travels with the bytes. */
export interface StoredSample {
  id: string;
  label: number;
  data: Uint8Array;
}

/** A row of metadata_by_nat: what splits are built from. */
export interface NatRow {
  id: string;
  label: number;
  meta: Record<string, MetaValue>;
}

export interface DatasetInfo {
  spec: DatasetSpec;
  count: number;
  /** Samples per label, by label value. */
  perLabel: Record<number, number>;
  /** Bytes of sample data. */
  bytes: number;
}

export interface PutResult {
  written: number;
  existing: number;
}

export interface Store {
  readonly kind: "sqlite" | "cassandra";
  /** The address it was opened with, password hidden. */
  readonly address: string;
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
  info(dataset: string): Promise<DatasetInfo>;
  close(): Promise<void>;
}

/**
 * The spec's column values of `s`, in column order, checked: types match, group columns are
 * present, no unknown column. Errors name the sample's key and the column.
 */
export function metaValues(spec: DatasetSpec, s: SampleInput): MetaValue[] {
  const where = `sample '${s.key}' of '${spec.name}'`;
  if (!Number.isInteger(s.label) || s.label < 0 || s.label > 2 ** 31 - 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot store ${where} as its label must be a non-negative 32-bit integer: current value is ${s.label}`);
  }
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
