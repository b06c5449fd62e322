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
import type { Store } from "../dataset/store.ts";
import type { Source } from "./source.ts";
import { type CassandraSourceOptions, locate, type OpenStoreOptions, sourceOfStore, writeStore } from "./kinds.ts";

export type { OpenStoreOptions };

/** Opens the store at `address` (`sqlite:PATH`, `cassandra://…`) to write into or manage, made when missing unless `create: false`: the older name of `open(address, { mode: "write" })`. */
export async function openStore(address: string, options: OpenStoreOptions = {}): Promise<Store> {
  return await writeStore(locate(address), options); // a bad address is a rejection, as it was
}

/**
 * The read side of a store for the loader. `maxInFlight` caps requests in flight (default:
 * the driver pool's capacity for Cassandra, 4096 for SQLite). `options.balance` picks how
 * Cassandra requests are spread over connections (CassandraSourceOptions).
 * @deprecated For users, `open(store, { mode: "read", dataset, maxInFlight, balance })`: one door for every address and store (the read path still calls this one).
 */
export async function openSource(store: Store, dataset: string, maxInFlight?: number, options: CassandraSourceOptions = {}): Promise<Source> {
  const spec = await store.getDataset(dataset); // a clear error now rather than per sample
  return sourceOfStore(store, dataset, spec.label, maxInFlight, options);
}
