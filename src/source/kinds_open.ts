/**
 * How each kind of the table (kinds.ts) opens its sources and stores: the kind table's values
 * from the protocols' folders, in one file so that a page's bundle can put another in its
 * place (kinds_open.browser.ts: only what a page can open; ARCHITECTURE.md, "The browser
 * graph"). HTTP, S3 and WebDataset are imported when such an address is opened (undici is
 * loaded only then).
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Store } from "../dataset/store.ts";
import type { CassandraAddress } from "./address.ts";
import type { Source } from "./source.ts";
import { CassandraStore, type CassandraStoreOptions } from "./cassandra/cassandra.ts";
import { CassandraSource, type CassandraSourceOptions } from "./cassandra/cassandra_source.ts";
import { SqliteStore } from "./sqlite/sqlite.ts";
import { SqliteSource } from "./sqlite/sqlite_source.ts";
import { type FileSourceOptions, openFileSource as openFiles } from "./files/file.ts";
import type { HttpSourceOptions } from "./http/http.ts";
import type { S3Options } from "./http/s3.ts";
import type { WebDatasetSourceOptions } from "./webdataset/webdataset_source.ts";

export { LABELS_FILE } from "./files/file.ts";

/** The SQLite store at `path`; with `create`, made (and its folder) when absent. */
export function openSqliteStore(path: string, create: boolean): Promise<Store> {
  if (create) mkdirSync(dirname(path), { recursive: true });
  return Promise.resolve(SqliteStore.open(path, create));
}

/** The read side of `store` if it is a SQLite store. */
export function sqliteSourceOf(store: Store, dataset: string, maxInFlight: number | undefined): Source | undefined {
  return store instanceof SqliteStore ? new SqliteSource(store, dataset, maxInFlight) : undefined;
}

export function openCassandraStore(text: string, o: CassandraStoreOptions | undefined, create: boolean, parsed: CassandraAddress): Promise<Store> {
  return CassandraStore.open(text, o, create, parsed);
}

/** The read side of `store` if it is a Cassandra store. */
export function cassandraSourceOf(store: Store, dataset: string, maxInFlight: number | undefined, o: CassandraSourceOptions): Source | undefined {
  return store instanceof CassandraStore ? new CassandraSource(store, dataset, maxInFlight, o) : undefined;
}

export function openFileSource(dir: string, o: FileSourceOptions): Promise<Source> {
  return openFiles(dir, o);
}

export async function openHttpSource(url: string, o: HttpSourceOptions): Promise<Source> {
  const { openHttpSource } = await import("./http/http.ts");
  return openHttpSource(url, o);
}

export async function openS3Source(url: string, o: S3Options): Promise<Source> {
  const { openS3Source } = await import("./http/s3.ts");
  return openS3Source(url, o);
}

export async function openWebDatasetSource(index: string, o: WebDatasetSourceOptions): Promise<Source> {
  const { openWebDatasetSource } = await import("./webdataset/webdataset_source.ts");
  return openWebDatasetSource(index, o);
}
