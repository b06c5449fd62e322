/**
 * `openStore(address)`: one entry for every store address (src/source/address.ts).
 *
 * @example
 * ```ts
 * import { openStore } from "cassette";
 * const store = await openStore("sqlite:.tmp/example.sqlite");
 * console.log((await store.listDatasets()).map((d) => d.name));
 * await store.close();
 * ```
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { CassetteError } from "../errors.ts";
import { parseStoreAddress, redact } from "./address.ts";
import { CassandraStore, type CassandraStoreOptions } from "./cassandra.ts";
import { SqliteStore } from "./sqlite.ts";
import type { Store } from "../dataset/store.ts";
import type { Source } from "./source.ts";
import { SqliteSource } from "./sqlite_source.ts";
import { CassandraSource, type CassandraSourceOptions } from "./cassandra_source.ts";

/** How `openStore` opens a store: Cassandra's options, and whether to make a store that is not there. */
export interface OpenStoreOptions {
  /** Options for `cassandra://` addresses (driver options pass through as `driver`). */
  cassandra?: CassandraStoreOptions;
  /**
   * Make the store when it is not there: the SQLite file (and its folder), or the Cassandra
   * keyspace, with cassette's registry table. `true` (the default) suits writers such as
   * ingest; readers pass `false`, so that a mistyped address is named, not made. Either way a
   * store that is there is opened without schema statements (a SELECT-only role can open it).
   */
  create?: boolean;
}

/** Opens the store at `address` (`sqlite:PATH`, `cassandra://…`) to write into or manage, made when missing unless `create: false`: the older name of `open(address, { mode: "write" })`. */
export async function openStore(address: string, options: OpenStoreOptions = {}): Promise<Store> {
  const a = parseStoreAddress(address);
  const create = options.create ?? true;
  switch (a.kind) {
    case "sqlite":
      if (create) mkdirSync(dirname(a.path), { recursive: true });
      return SqliteStore.open(a.path, create);
    case "cassandra":
      return CassandraStore.open(address, options.cassandra, create);
    default:
      throw new CassetteError(
        "ERR_UNSUPPORTED",
        `Cannot open '${redact(address)}' as a dataset store: ${a.kind} addresses are read-only sources (the loader reads them); ingest into sqlite: or cassandra://`,
      );
  }
}

/**
 * The read side of a store for the loader. `maxInFlight` caps requests in flight (default:
 * the driver pool's capacity for Cassandra, 4096 for SQLite). `options.balance` picks how
 * Cassandra requests are spread over connections (CassandraSourceOptions).
 * @deprecated For users, `open(store, { mode: "read", dataset, maxInFlight, balance })`: one door for every address and store (the read path still calls this one).
 */
export async function openSource(store: Store, dataset: string, maxInFlight?: number, options: CassandraSourceOptions = {}): Promise<Source> {
  const spec = await store.getDataset(dataset); // a clear error now rather than per sample
  if (store instanceof SqliteStore) return new SqliteSource(store, dataset, maxInFlight);
  if (store instanceof CassandraStore) return new CassandraSource(store, dataset, maxInFlight, { ...options, label: spec.label });
  throw new CassetteError("ERR_UNSUPPORTED", `Cannot read from store ${store.address}: it has no source`);
}
