/**
 * The three tables of the 2021 paper (§3.2), for SQLite and for Cassandra:
 *   data_by_uuid      id → label, data: all that training reads, in one query
 *   metadata_by_nat   natural order (dataset, group, label, id): what splits are built from
 *   metadata_by_uuid  id → origin (key, metadata): trace a sample back to its source
 * SQLite files may hold several datasets, so its tables carry a `dataset` column; a Cassandra
 * keyspace holds the same columns as the paper.
 */

export const SQLITE_SCHEMA_VERSION = 1;

export const SQLITE_SCHEMA = `
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS cassette_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO cassette_meta VALUES ('schema_version', '${SQLITE_SCHEMA_VERSION}');
CREATE TABLE IF NOT EXISTS data_by_uuid (
  id TEXT PRIMARY KEY,
  dataset TEXT NOT NULL,
  label INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS metadata_by_uuid (
  id TEXT PRIMARY KEY,
  dataset TEXT NOT NULL,
  key TEXT NOT NULL,
  label INTEGER NOT NULL,
  meta TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS metadata_by_nat (
  dataset TEXT NOT NULL,
  grp TEXT NOT NULL DEFAULT '',
  label INTEGER NOT NULL,
  id TEXT NOT NULL,
  PRIMARY KEY (dataset, grp, label, id)
) WITHOUT ROWID;
`;

/** CQL statements that create the keyspace (if absent) and its three tables. */
export function cqlSchema(keyspace: string, replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}"): string[] {
  return [
    `CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = ${replication}`,
    `CREATE TABLE IF NOT EXISTS ${keyspace}.data_by_uuid (id uuid PRIMARY KEY, label int, data blob)`,
    `CREATE TABLE IF NOT EXISTS ${keyspace}.metadata_by_uuid (id uuid PRIMARY KEY, dataset text, key text, label int, meta text)`,
    `CREATE TABLE IF NOT EXISTS ${keyspace}.metadata_by_nat (dataset text, grp text, label int, id uuid, PRIMARY KEY ((dataset, grp, label), id))`,
  ];
}
