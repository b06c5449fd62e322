/**
 * The store kinds: one entry per protocol, the only door from outside `src/source/` into a
 * protocol's folder (ARCHITECTURE.md, "Where to add"; test/architecture.test.ts checks it).
 * An entry says which schemes are its, how its address parses, whether it holds several
 * datasets, how to open a Source to read and a Store to write (or why it cannot), and whether
 * its sources answer `shards()`. An address is parsed once, by `locate`, into an `Addressed`
 * that is passed on; nothing downstream parses it again.
 *
 * The entries open through kinds_open.ts, which a page's bundle replaces with
 * kinds_open.browser.ts (ARCHITECTURE.md, "The browser graph"): this file imports no protocol's
 * values itself but the address parsers.
 */
import type { CacheOptions } from "./cache/cache_source.ts";
import { CassetteError } from "../errors.ts";
import type { Store } from "../dataset/store.ts";
import type { LabelSpec } from "../dataset/label.ts";
import { type CassandraAddress, redact, type StoreAddress, storeAddressError } from "./address.ts";
import type { Fetched, Source } from "./source.ts";
import { parseCassandraAddress } from "./cassandra/address.ts";
import type { CassandraStoreOptions } from "./cassandra/cassandra.ts";
import type { CassandraSourceOptions } from "./cassandra/cassandra_source.ts";
import type { FileSourceOptions } from "./files/file.ts";
import * as opens from "./kinds_open.ts";
import type { HttpSourceOptions } from "./http/http.ts";
import type { S3Options } from "./http/s3.ts";
import type { WebDatasetSourceOptions } from "./webdataset/webdataset_source.ts";

// What the rooms outside src/source/ use of the protocols, named here so that they need not
// reach into a protocol's folder (the subpath mod.ts files re-export the public classes).
// Types only, and what is loaded anyway: a value re-exported from http/ would load undici
// with every read path.
export type { CassandraStoreOptions, CassandraSourceOptions, FileSourceOptions, HttpSourceOptions, S3Options, WebDatasetSourceOptions };
export type { AwsCredentials } from "./http/sigv4_request.ts";
export type { CassandraOptions, CassandraTls } from "./cassandra/cassandra_client.ts";
export type { CacheOptions };
export { LABELS_FILE } from "./kinds_open.ts";

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

/** Settings every kind's source takes: requests in flight, and Cassandra's spread over connections (a Loader's `source` options). */
export interface SourceSettings {
  /** Cap on requests in flight at the source (default: the source's own; per worker with `workers`). */
  maxInFlight?: number;
  /** For `cassandra://` addresses: "rate" (default) sends each request on the connection where it should finish first; "driver" leaves the choice to the driver. */
  balance?: "rate" | "driver";
  /**
   * Keep the samples fetched in a local SQLite file (`path`) within `bytes` and answer from it
   * first: a far store is then read in full only once. The Loader tells the cache each epoch's
   * order, so it gives up the sample needed furthest away (Belady's policy; `policy: "lru"` for
   * the usual one). Reads in this thread: not with read workers (src/source/cache/).
   */
  cache?: CacheOptions;
}

/** How a kind opens a Source to read: the dataset, requests in flight and each protocol's settings (`open`'s OpenReadOptions extends these). */
export interface SourceOpenOptions extends SourceSettings {
  /** Needed for sqlite: and cassandra:// stores (they hold several); checked against an export's labels.json for http(s)://, s3:// and file:. */
  dataset?: string;
  /** For `http(s)://` addresses: connections, pipelining, timeouts, size limits, redirects, credentials, CA (HttpSourceOptions). */
  http?: Omit<HttpSourceOptions, "dataset">;
  /** For `file:` addresses: files read at once. */
  file?: Omit<FileSourceOptions, "dataset">;
  /** For `s3://` addresses: endpoint, region, style, credentials, and the HTTP options (S3Options). */
  s3?: Omit<S3Options, "dataset">;
  /** For `wds:` addresses: the early-sample bound, resumes, entry size (the index's own http/s3 options come from `http`, `s3`). */
  wds?: Omit<WebDatasetSourceOptions, "dataset" | "http" | "s3">;
  /** For `cassandra://` addresses: driver options. */
  cassandra?: CassandraStoreOptions;
}

/** An address as given, parsed once, with its kind's entry. */
export interface Addressed<K extends StoreAddress = StoreAddress> {
  /** The address as the user wrote it (workers are sent this; messages redact it). */
  readonly text: string;
  readonly parsed: K;
  readonly kind: StoreKind<K>;
}

/** One protocol. */
export interface StoreKind<K extends StoreAddress = StoreAddress> {
  readonly kind: K["kind"];
  /** The prefixes of its addresses, and how the scheme error lists them. */
  readonly schemes: readonly string[];
  readonly label: string;
  /** Parses an address that starts with one of `schemes`; `bad` throws the address's named error. */
  parse(address: string, bad: (why: string) => never): K;
  /** It holds several datasets, so reading needs a dataset name. */
  readonly several: boolean;
  /** Its sources answer `shards()` (the Loader plans by shard: plan/epoch.ts `groups`). */
  readonly shards: boolean;
  /** A Source for reading; its close() closes whatever it opened. */
  read(at: Addressed<K>, o: SourceOpenOptions): Promise<Source>;
  /** A Store to write into; absent where the kind is read only. */
  write?(at: Addressed<K>, o: OpenStoreOptions): Promise<Store>;
  /** Why `open(…, { mode: "write" })` refuses it, where that says more than openStore's refusal. */
  writeRefusal?: string;
  /** The read side of an open Store of this kind; undefined for another kind's store. */
  sourceOf?(store: Store, dataset: string, maxInFlight: number | undefined, o: CassandraSourceOptions): Source | undefined;
}

type Of<N extends StoreAddress["kind"]> = StoreKind<Extract<StoreAddress, { kind: N }>>;

/** Only the given options that are set, so a kind's own defaults hold. */
const inFlight = (maxInFlight?: number) => (maxInFlight ? { maxInFlight } : {});

const sqlite: Of<"sqlite"> = {
  kind: "sqlite", schemes: ["sqlite:"], label: "sqlite:", several: true, shards: false,
  parse(address, bad) {
    const path = address.slice("sqlite:".length);
    if (!path) bad("it names no file (sqlite:PATH)");
    return { kind: "sqlite", path };
  },
  read: (at, o) => readStore(at, o),
  async write(at, o) {
    return await opens.openSqliteStore(at.parsed.path, o.create ?? true);
  },
  sourceOf: (store, dataset, maxInFlight) => opens.sqliteSourceOf(store, dataset, maxInFlight),
};

const cassandra: Of<"cassandra"> = {
  kind: "cassandra", schemes: ["cassandra://"], label: "cassandra://", several: true, shards: false,
  parse: (address, bad) => parseCassandraAddress(address, bad),
  read: (at, o) => readStore(at, o),
  write: (at, o) => opens.openCassandraStore(at.text, o.cassandra, o.create ?? true, at.parsed as CassandraAddress),
  sourceOf: (store, dataset, maxInFlight, o) => opens.cassandraSourceOf(store, dataset, maxInFlight, o),
};

const http: Of<"http"> = {
  kind: "http", schemes: ["http://", "https://"], label: "http(s)://", several: false, shards: false,
  parse: (address) => ({ kind: "http", url: address.replace(/\/+$/, "") }),
  read(at, o) {
    return opens.openHttpSource(at.parsed.url, { ...o.http, ...inFlight(o.maxInFlight), dataset: o.dataset });
  },
};

const s3: Of<"s3"> = {
  kind: "s3", schemes: ["s3://"], label: "s3://", several: false, shards: false,
  parse: (address) => ({ kind: "s3", url: address }),
  read(at, o) {
    return opens.openS3Source(at.parsed.url, { ...o.s3, ...inFlight(o.maxInFlight), dataset: o.dataset });
  },
};

const file: Of<"file"> = {
  kind: "file", schemes: ["file:"], label: "file:", several: false, shards: false,
  parse(address, bad) {
    const dir = address.slice("file:".length).replace(/^\/\/(?=\/)/, "");
    if (!dir) bad("it names no folder (file:DIR)");
    return { kind: "file", dir };
  },
  read: (at, o) => opens.openFileSource(at.parsed.dir, { ...o.file, ...inFlight(o.maxInFlight), dataset: o.dataset }),
};

const wds: Of<"wds"> = {
  kind: "wds", schemes: ["wds:"], label: "wds:", several: false, shards: true,
  parse(address, bad) {
    const index = address.slice("wds:".length).replace(/^file:(\/\/(?=\/))?/, "");
    if (!index) bad("it names no shard index (wds:PATH, wds:http(s)://…, wds:s3://…)");
    return { kind: "wds", index };
  },
  read(at, o) {
    return opens.openWebDatasetSource(at.parsed.index, { ...o.wds, ...inFlight(o.maxInFlight), dataset: o.dataset, ...(o.http ? { http: o.http } : {}), ...(o.s3 ? { s3: o.s3 } : {}) });
  },
  writeRefusal: "WebDataset shards are read only: write them with cassette export --format webdataset (exportShards)",
};

/** Every kind, in the order the scheme error names them. */
export const STORE_KINDS: readonly StoreKind[] = [sqlite, cassandra, http, s3, file, wds] as unknown as StoreKind[];

/** The kind whose scheme `address` starts with (nothing parsed), or undefined. */
export function storeKind(address: string): StoreKind | undefined {
  return STORE_KINDS.find((k) => k.schemes.some((s) => address.startsWith(s)));
}

/** Parses `address` once, into the value that is passed on; errors name the address and what is wrong with it. */
export function locate(address: string): Addressed {
  const bad = (why: string): never => {
    throw storeAddressError(address, why);
  };
  const kind = storeKind(address);
  if (!kind) return bad(`its scheme is none of ${STORE_KINDS.map((k) => k.label).join(", ")}`);
  return { text: address, parsed: kind.parse(address, bad), kind };
}

/** Parses a store address; errors name the address and what is wrong with it. */
export function parseStoreAddress(address: string): StoreAddress {
  return locate(address).parsed;
}

/** Opens the store at `at` to write into: a named error (a rejection, as every opening's) for a read-only kind. */
export async function writeStore(at: Addressed, o: OpenStoreOptions = {}): Promise<Store> {
  if (!at.kind.write) {
    throw new CassetteError(
      "ERR_UNSUPPORTED",
      `Cannot open '${redact(at.text)}' as a dataset store: ${at.parsed.kind} addresses are read-only sources (the loader reads them); ingest into sqlite: or cassandra://`,
    );
  }
  return await at.kind.write(at, o);
}

/** The read side of an open Store, by the kind whose store it is. */
export function sourceOfStore(store: Store, dataset: string, label: LabelSpec | undefined, maxInFlight?: number, o: CassandraSourceOptions = {}): Source {
  for (const k of STORE_KINDS) {
    const src = k.sourceOf?.(store, dataset, maxInFlight, { ...o, label });
    if (src) return src;
  }
  throw new CassetteError("ERR_UNSUPPORTED", `Cannot read from store ${store.address}: it has no source`);
}

/** A store's dataset by address as a Source: the store is opened (not made), and closed with the source. */
async function readStore(at: Addressed, o: SourceOpenOptions): Promise<Source> {
  const { dataset, maxInFlight } = o;
  const store = await writeStore(at, { cassandra: o.cassandra, create: false });
  let inner: Source;
  try {
    const spec = await store.getDataset(dataset!); // a clear error now rather than per sample
    inner = sourceOfStore(store, dataset!, spec.label, maxInFlight, { balance: o.balance });
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
  let closing: Promise<void> | undefined;
  const keyed = inner as Source & { keyOf?: (id: string) => string };
  return {
    name: inner.name,
    dataset,
    ids: async () => {
      const ids: string[] = [];
      for await (const page of store.scanNat(dataset!)) for (const r of page) ids.push(r.id);
      return ids;
    },
    fetch: (id, done) => inner.fetch(id, done),
    // A sample that fails to decode is named by its key (read/decode_source.ts).
    ...(keyed.keyOf ? { keyOf: (id: string) => keyed.keyOf!(id) } : {}),
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => (closing ??= inner.close().finally(() => store.close())),
  } satisfies Source<Fetched> & { keyOf?: (id: string) => string };
}
