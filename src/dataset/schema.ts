/**
 * The three tables of "Scaling DL data management with Cassandra DB" (IEEE BigData 2021), §3.2, per
 * dataset, for SQLite and Cassandra, plus one registry table of datasets and their specs:
 *
 *   cassette_datasets        name → table prefix, spec (JSON)
 *   <p>_data_by_uuid         id → label, data: all that training reads, in one query
 *   <p>_metadata_by_nat      ((group columns…, label), other columns…, id): splits read this
 *   <p>_metadata_by_uuid     id → key, label, size, columns: trace a sample to its origin
 *
 * `<p>` is `tablePrefix(name)`. In Cassandra, metadata_by_nat's partition key also holds a
 * `bucket` (0..15 from the id) so that a dataset without group columns does not put all of a
 * label's rows in one partition, and it clusters by id alone: the paper clusters by the other
 * columns too, but clustering columns cannot be null and metadata is often incomplete.
 */
import { type Column, type DatasetSpec, otherColumns, tablePrefix } from "./spec.ts";

export const SCHEMA_VERSION = 2;
export const NAT_BUCKETS = 16;

export interface Tables {
  data: string;
  byUuid: string;
  byNat: string;
}

export function tables(name: string): Tables {
  const p = tablePrefix(name);
  return { data: `${p}_data_by_uuid`, byUuid: `${p}_metadata_by_uuid`, byNat: `${p}_metadata_by_nat` };
}

// --- SQLite ---------------------------------------------------------------------------------

const SQLITE_TYPE = { text: "TEXT", int: "INTEGER", float: "REAL" } as const;
const q = (name: string) => `"${name}"`;

export const SQLITE_REGISTRY = `
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS cassette_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO cassette_meta VALUES ('schema_version', '${SCHEMA_VERSION}');
CREATE TABLE IF NOT EXISTS cassette_datasets (
  name TEXT PRIMARY KEY,
  prefix TEXT NOT NULL UNIQUE,
  spec TEXT NOT NULL,
  created TEXT NOT NULL
);
`;

/**
 * A label other than one integer is a BLOB that may be NULL: some SQLite bindings (Node's) bind
 * an empty byte array, a multi-label sample with no class, as NULL, which NOT NULL would refuse
 * and INSERT OR IGNORE would then drop without a word.
 */
export function sqliteDatasetDdl(spec: DatasetSpec): string {
  const t = tables(spec.name);
  const col = (c: Column) => `${q(c.name)} ${SQLITE_TYPE[c.type]}`;
  const groups = spec.groupBy.map((g) => spec.columns.find((c) => c.name === g)!);
  return `
CREATE TABLE IF NOT EXISTS ${q(t.data)} (id TEXT PRIMARY KEY, label ${spec.label.kind === "int" ? "INTEGER NOT NULL" : "BLOB"}, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ${q(t.byUuid)} (
  id TEXT PRIMARY KEY, key TEXT NOT NULL, label INTEGER NOT NULL, size INTEGER NOT NULL${spec.columns.map((c) => `, ${col(c)}`).join("")}
);
CREATE TABLE IF NOT EXISTS ${q(t.byNat)} (
  ${[...groups.map((c) => `${col(c)} NOT NULL`), "label INTEGER NOT NULL", ...otherColumns(spec).map(col), "id TEXT NOT NULL"].join(",\n  ")},
  PRIMARY KEY (${[...spec.groupBy.map(q), "label", "id"].join(", ")})
) WITHOUT ROWID;
`;
}

// --- Cassandra -------------------------------------------------------------------------------

const CQL_TYPE = { text: "text", int: "bigint", float: "double" } as const;
/** The data table's label column per label kind (src/dataset/label.ts); the metadata tables keep the class, an int. */
const CQL_LABEL = { int: "int", ints: "list<int>", floats: "list<float>", blob: "blob" } as const;

export function cqlRegistry(keyspace: string, replication: string): string[] {
  return [
    `CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = ${replication}`,
    `CREATE TABLE IF NOT EXISTS ${keyspace}.cassette_datasets (name text PRIMARY KEY, prefix text, spec text, created timestamp)`,
  ];
}

export function cqlDatasetDdl(keyspace: string, spec: DatasetSpec): string[] {
  const t = tables(spec.name);
  const col = (c: Column) => `${c.name} ${CQL_TYPE[c.type]}`;
  const others = otherColumns(spec);
  const groups = spec.groupBy.map((g) => spec.columns.find((c) => c.name === g)!);
  return [
    `CREATE TABLE IF NOT EXISTS ${keyspace}.${t.data} (id uuid PRIMARY KEY, label ${CQL_LABEL[spec.label.kind]}, data blob)`,
    `CREATE TABLE IF NOT EXISTS ${keyspace}.${t.byUuid} (id uuid PRIMARY KEY, key text, label int, size int${spec.columns.map((c) => `, ${col(c)}`).join("")})`,
    `CREATE TABLE IF NOT EXISTS ${keyspace}.${t.byNat} (${[...groups.map(col), "label int", "bucket int", ...others.map(col), "id uuid"].join(", ")}, ` +
    `PRIMARY KEY ((${[...spec.groupBy, "label", "bucket"].join(", ")}), id))`,
  ];
}

/** The metadata_by_nat bucket of an id (its first hex digit). */
export function natBucket(id: string): number {
  return parseInt(id[0], 16) % NAT_BUCKETS;
}
