/**
 * A dataset's spec: its metadata columns, the columns that group samples (the natural
 * partition key of metadata_by_nat, "Scaling DL data management with Cassandra DB" (IEEE BigData
 * 2021), §3.2), and its labels. It is stored with the dataset, so a reader never has to be told the
 * schema again, and hashed into split files so a split can be checked against the dataset it was
 * made from.
 */
import { createHash } from "node:crypto";
import { CassetteError } from "../errors.ts";
import { checkLabelSpec, type LabelSpec } from "./label.ts";

/** The type of a metadata column's values. */
export type ColumnType = "text" | "int" | "float";

/** A metadata column of a dataset: its name and type. */
export interface Column {
  /** The column's name. */
  name: string;
  /** The column's type. */
  type: ColumnType;
}

/** A dataset's description as a store keeps it: name, label kind, metadata columns and grouping. */
export interface DatasetSpec {
  /** The format's version, 1. */
  version: 1;
  /** Dataset name, as in `sampleId(name, key)`: letters, digits, '-', '_', '.'. */
  name: string;
  /** Metadata columns (besides id, key, label), in order. */
  columns: Column[];
  /** Columns that group samples (e.g. patient_id): never split across train/test. */
  groupBy: string[];
  /** What a label is: one integer (classes[i] names label i when known), several, floats, or bytes (label.ts). */
  label: LabelSpec;
  /** Free-form origin: the ingest source, JPEG quality, … */
  origin?: Record<string, unknown>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const COLUMN = /^[a-z][a-z0-9_]{0,47}$/;
/** Column names the schema itself uses. */
export const RESERVED_COLUMNS = new Set(["id", "key", "label", "data", "size", "grp"]);

/**
 * Checks a dataset's name as a spec's check does (the same error), for commands that take a
 * name before any spec exists: ingest checks it before it creates a store, `cassette id`
 * before it prints an id no ingest could give.
 */
export function checkDatasetName(name: string): string {
  if (!NAME.test(name)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot use the spec of dataset '${name}' as its name must be 1–64 letters, digits, '.', '-' or '_', starting with a letter or digit`);
  }
  return name;
}

/** Checks a spec; errors name the field that is wrong. */
export function validateSpec(spec: DatasetSpec): DatasetSpec {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot use the spec of dataset '${spec.name}' as ${why}`);
  };
  if (spec.version !== 1) bad(`its version must be 1: current value is ${spec.version}`);
  checkDatasetName(spec.name);
  // Specs also come from JSON and plain JS: a missing list is named, not a TypeError.
  if (!Array.isArray(spec.columns)) bad(`its 'columns' must be an array of { name, type } ([] for none): current value is ${JSON.stringify(spec.columns)}`);
  if (!Array.isArray(spec.groupBy)) bad(`its 'groupBy' must be an array of column names ([] for none): current value is ${JSON.stringify(spec.groupBy)}`);
  const seen = new Set<string>();
  for (const c of spec.columns) {
    if (!COLUMN.test(c.name)) bad(`column '${c.name}' is not a valid name (lower-case letter, then a-z, 0-9, _)`);
    if (RESERVED_COLUMNS.has(c.name)) bad(`column '${c.name}' is reserved (${[...RESERVED_COLUMNS].join(", ")})`);
    if (!["text", "int", "float"].includes(c.type)) bad(`column '${c.name}' has type '${c.type}': use text, int or float`);
    if (seen.has(c.name)) bad(`column '${c.name}' appears twice`);
    seen.add(c.name);
  }
  for (const g of spec.groupBy) if (!seen.has(g)) bad(`group column '${g}' is not one of its columns (${[...seen].join(", ") || "none"})`);
  checkLabelSpec(spec.label, bad);
  return spec;
}

/** SHA-1 of the spec's schema-relevant fields in canonical order (origin excluded). */
export function specHash(spec: DatasetSpec): string {
  const canonical = JSON.stringify({
    version: spec.version,
    name: spec.name,
    columns: spec.columns.map((c) => [c.name, c.type]),
    groupBy: spec.groupBy,
    label: spec.label,
  });
  return createHash("sha1").update(canonical).digest("hex");
}

/** Table-name prefix for a dataset: its name with every other character turned into '_'. */
export function tablePrefix(name: string): string {
  return `ds_${name.toLowerCase().replace(/[^a-z0-9]/g, "_")}`;
}

/** Columns of metadata_by_nat's clustering part: the non-group columns, in spec order. */
export function otherColumns(spec: DatasetSpec): Column[] {
  return spec.columns.filter((c) => !spec.groupBy.includes(c.name));
}

export function column(spec: DatasetSpec, name: string): Column {
  const c = spec.columns.find((c) => c.name === name);
  if (!c) {
    throw new CassetteError(
      "ERR_INVALID_OPTION",
      `Cannot use column '${name}' of dataset '${spec.name}' as it has no such column: columns are ${spec.columns.map((c) => c.name).join(", ") || "none"}`,
    );
  }
  return c;
}
