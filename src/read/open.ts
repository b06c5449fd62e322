/**
 * `openReadSource(address, dataset)`: the read side of any store address as a Source, for the
 * Loader. `sqlite:` and `cassandra://` open the store and its source (the source's close()
 * closes the store too); `http(s)://` and `file:` read the layout `cassette export` writes
 * (src/source/file.ts). undici is loaded only when an HTTP address is opened.
 *
 * @example
 * ```ts
 * import { Loader, ingest, openReadSource, openStore } from "cassette";
 * const store = await openStore("sqlite:.tmp/open-read-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 8 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * await store.close();
 * const source = await openReadSource("sqlite:.tmp/open-read-example.sqlite", "fm");
 * const loader = new Loader({ store: source, ids, batchSize: 8 });
 * let n = 0;
 * for await (const batch of loader.epoch(0)) n += batch.ids.length;
 * console.log(n); // 16
 * await loader.close(); // closes the source, and with it the store
 * ```
 */
import { CassetteError } from "../errors.ts";
import { parseStoreAddress, redact } from "../source/address.ts";
import type { CassandraStoreOptions } from "../source/cassandra.ts";
import { type FileSourceOptions, openFileSource } from "../source/file.ts";
import type { HttpSourceOptions } from "../source/http.ts";
import { openSource, openStore } from "../source/open.ts";
import type { Source } from "../source/source.ts";

export interface OpenReadOptions {
  /** Cap on requests in flight at the source (default: the source's own). */
  maxInFlight?: number;
  /** For `http(s)://` addresses: connections, pipelining, timeouts. */
  http?: Omit<HttpSourceOptions, "dataset">;
  /** For `file:` addresses: files read at once. */
  file?: Omit<FileSourceOptions, "dataset">;
  /** For `cassandra://` addresses: driver options. */
  cassandra?: CassandraStoreOptions;
  /** For `cassandra://` addresses: how requests are spread over connections (default "rate"). */
  balance?: "rate" | "driver";
}

/**
 * A Source for `address`. `dataset` is required for sqlite: and cassandra:// stores; for
 * http(s):// and file: it is checked against the export's labels.json when given.
 */
export async function openReadSource(address: string, dataset?: string, options: OpenReadOptions = {}): Promise<Source> {
  const a = parseStoreAddress(address);
  const maxInFlight = options.maxInFlight;
  switch (a.kind) {
    case "http": {
      const { openHttpSource } = await import("../source/http.ts");
      return openHttpSource(a.url, { ...options.http, ...(maxInFlight ? { maxInFlight } : {}), dataset });
    }
    case "file":
      return openFileSource(a.dir, { ...options.file, ...(maxInFlight ? { maxInFlight } : {}), dataset });
    default: {
      if (!dataset) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot read from '${redact(address)}' without a dataset name: a ${a.kind} store holds several`);
      }
      const store = await openStore(address, { cassandra: options.cassandra, create: false });
      let inner: Source;
      try {
        inner = await openSource(store, dataset, maxInFlight, { balance: options.balance });
      } catch (e) {
        await store.close().catch(() => {});
        throw e;
      }
      let closing: Promise<void> | undefined;
      return {
        name: inner.name,
        dataset,
        ids: async () => {
          const ids: string[] = [];
          for await (const page of store.scanNat(dataset)) for (const r of page) ids.push(r.id);
          return ids;
        },
        fetch: (id, done) => inner.fetch(id, done),
        onDrain: (l) => inner.onDrain(l),
        inFlight: () => inner.inFlight(),
        close: () => (closing ??= inner.close().finally(() => store.close())),
      };
    }
  }
}
