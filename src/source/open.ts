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
import type { Store } from "./store.ts";

export interface OpenStoreOptions {
  /** Options for `cassandra://` addresses (driver options pass through as `driver`). */
  cassandra?: CassandraStoreOptions;
}

export async function openStore(address: string, options: OpenStoreOptions = {}): Promise<Store> {
  const a = parseStoreAddress(address);
  switch (a.kind) {
    case "sqlite":
      mkdirSync(dirname(a.path), { recursive: true });
      return SqliteStore.open(a.path);
    case "cassandra":
      return CassandraStore.open(address, options.cassandra);
    default:
      throw new CassetteError(
        "ERR_UNSUPPORTED",
        `Cannot open '${redact(address)}' as a dataset store: ${a.kind} addresses are read-only sources (the loader reads them); ingest into sqlite: or cassandra://`,
      );
  }
}
