/**
 * Apache Cassandra / ScyllaDB as a store (`cassandra://…/KEYSPACE`), through cassandra-driver.
 * Each sample's three rows go in one logged batch (atomic), many batches in flight; reads are
 * prepared single-partition queries, labels fetched with the bytes.
 */
import { CassetteError } from "../../errors.ts";
import { sampleId } from "../../dataset/sample_id.ts";
import { type DatasetSpec, otherColumns, specHash, tablePrefix, validateSpec } from "../../dataset/spec.ts";
import { cqlDatasetDdl, cqlRegistry, natBucket, tables } from "../../dataset/schema.ts";
import { cqlLabel, readLabel } from "../../dataset/label.ts";
import cassandra from "cassandra-driver";
import { type CassandraClient, type CassandraOptions, openCassandra } from "./cassandra_client.ts";
import { type CassandraAddress, redact } from "../address.ts";
import { cassandraAddress } from "./address.ts";
import { racePreparation } from "./cassandra_prepare.ts";
import { pagesInOrder, ringRanges, tokenWhere } from "./cassandra_scan.ts";
import { isRetryable } from "../retryable.ts";
import { mapLimit } from "../../util/map_limit.ts";
import {
  checkPredictionTable,
  type DatasetInfo,
  type MetaValue,
  checkSample,
  type NatRow,
  PREDICTION_COLUMNS,
  type PredictionRow,
  type PutResult,
  sameSchema,
  type SampleInput,
  type Store,
  type StoredSample,
  unknownDataset,
} from "../../dataset/store.ts";

/** How a `cassandra://` store is opened: the connection's options (CassandraOptions), and a new keyspace's replication, concurrency and scan paging. */
export interface CassandraStoreOptions extends CassandraOptions {
  /**
   * Replication of a keyspace cassette creates: a factor (SimpleStrategy) or a CQL map such as
   * `{'class': 'NetworkTopologyStrategy', 'dc1': 3}`. Default: SimpleStrategy with factor
   * min(3, the cluster's nodes), counted when the keyspace is made. An existing keyspace keeps its own.
   */
  replication?: string | number;
  /** Requests in flight for writes (default 64). */
  writeConcurrency?: number;
  /** Requests in flight for reads (default 256). */
  readConcurrency?: number;
  /**
   * Token ranges a whole-table scan (scanNat, info, scanPredictions) asks at once (default 16;
   * 1: one range after another, as one query). The rows come in the same order either way
   * (NOTE [ Ranged scan ] in src/source/cassandra/cassandra_scan.ts).
   */
  scanConcurrency?: number;
  /** Rows per page of a scan (default 5000). */
  scanPage?: number;
}

const PAGE = 5000;
/** Token ranges a scan asks at once, and pages each may hold ahead (NOTE [ Ranged scan ]): at most 32 pages held. */
const SCAN_RANGES = 16;
const SCAN_AHEAD = 2;
const q = { prepare: true } as const;
/**
 * The store's own reads (registry, existence, metadata): idempotent, so the driver asks another
 * node when one has not answered within SPECULATE_MS (its speculative execution, set up in
 * `open`), rather than wait the read timeout on a frozen node. The Loader's reads are not
 * marked: the read path hedges them itself (src/read/hedge.ts).
 */
const qr = { prepare: true, isIdempotent: true } as const;
const SPECULATE_MS = 1000;
/** Tries of one sample's write when it fails for a reason that may pass (0.5, 1, 2, 4, 8 s apart: ~15 s in all, time for the cluster to see a killed node down). */
const WRITE_ATTEMPTS = 6;

export class CassandraStore implements Store {
  readonly kind = "cassandra" as const;
  readonly address: string;
  readonly keyspace: string;
  readonly client: CassandraClient;
  readonly #opts: CassandraStoreOptions;
  readonly #specs = new Map<string, DatasetSpec>();

  private constructor(address: string, keyspace: string, client: CassandraClient, opts: CassandraStoreOptions) {
    this.address = redact(address);
    this.keyspace = keyspace;
    this.client = client;
    this.#opts = opts;
  }

  /**
   * Connects, and checks that the keyspace holds cassette's registry table; when it does not,
   * makes both with `create` (the default), else names what is missing. A store that is there
   * needs no schema statement, so a role granted only SELECT can open it.
   */
  static async open(address: string, opts: CassandraStoreOptions = {}, create = true, parsed?: CassandraAddress): Promise<CassandraStore> {
    const a = cassandraAddress(address, parsed);
    const speculate = new cassandra.policies.speculativeExecution.ConstantSpeculativeExecutionPolicy(SPECULATE_MS, 2);
    // The pools open after connecting, with a deadline (warmPools), not inside connect(): the
    // driver's warm-up waits for every node, so one frozen node held the opening.
    // Schema sync is off while connecting: the driver would read every keyspace's schema there,
    // one round trip in series, where the store needs only its own keyspace's (refreshed below,
    // beside the registry check). It is on again once connected, so schema changes are followed.
    const sync = opts.driver?.isMetadataSyncEnabled ?? true;
    const driver = {
      ...opts.driver,
      isMetadataSyncEnabled: false,
      pooling: { warmup: false, ...opts.driver?.pooling },
      policies: { speculativeExecution: speculate, ...opts.driver?.policies },
    };
    const client = await openCassandra(address, { ...opts, driver, withoutKeyspace: true }, a);
    client.options.isMetadataSyncEnabled = sync;
    racePreparation(client);
    // The pools open while the registry is checked: each costs a few round trips (~0.3 s at
    // 150 ms), and neither needs the other. warmPools never rejects.
    const warmed = warmPools(client);
    const ks = a.keyspace.toLowerCase(); // unquoted in CQL, so folded to lower case
    let missing: string | undefined;
    let registry: cassandra.types.ResultSet | undefined;
    try {
      // On the node the client connected to (its control connection, and that node's pool,
      // which holds the control connection), not a request any node may coordinate: a frozen
      // node cannot hold the opening. The three go at once: the keyspace's schema (its
      // replication, for the token map) and the registry table's existence are checked, and the
      // registry is read, so that getDataset needs no round trip of its own.
      const metadata = client.metadata as unknown as { refreshKeyspace(ks: string): Promise<void>; keyspaces: Record<string, unknown> };
      const here = { host: (client as unknown as { controlConnection?: { host?: cassandra.Host } }).controlConnection?.host, isIdempotent: true };
      const [, table, read] = await Promise.all([
        metadata.refreshKeyspace(ks),
        // The node's own schema table: one replica, whatever consistency the address asks of data.
        client.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = 'cassette_datasets'", [ks], { ...here, consistency: cassandra.types.consistencies.one }),
        // Only an early answer for getDataset: a missing table or a role that may not read it is checked and named where it is used.
        client.execute(`SELECT name, spec FROM ${a.keyspace}.cassette_datasets`, [], here).catch(() => undefined),
      ]);
      registry = read;
      if (!(ks in metadata.keyspaces && table.rowLength > 0)) {
        if (create) {
          for (const cql of cqlRegistry(a.keyspace, replicationMap(opts.replication ?? Math.min(3, clusterNodes(client))))) {
            await client.execute(cql);
          }
          if (!sync) await metadata.refreshKeyspace(ks); // the driver follows no schema change for the token map
        } else {
          missing = ks in metadata.keyspaces
            ? `Cannot read keyspace '${ks}' in ${redact(address)} as a cassette store: it has no cassette_datasets table (cassette ingest makes it)`
            : `Cannot find keyspace '${ks}' in ${redact(address)}: it does not exist (cassette ingest SOURCE --store ${redact(address)} --dataset NAME makes it)`;
        }
      }
    } catch (cause) {
      await warmed;
      await client.shutdown();
      throw new CassetteError("ERR_STORE", `Cannot ${create ? "prepare" : "check"} keyspace '${a.keyspace}' in ${redact(address)}: ${(cause as Error).message}`, { cause });
    }
    await warmed;
    if (missing) {
      await client.shutdown();
      throw new CassetteError("ERR_STORE", missing);
    }
    const store = new CassandraStore(address, a.keyspace, client, opts);
    for (const row of registry?.rows ?? []) store.#specs.set(row.name, JSON.parse(row.spec) as DatasetSpec);
    return store;
  }

  /**
   * The client's execute, with a permission the role lacks (Unauthorized, protocol error
   * 0x2100) as a final ERR_STORE that names the statement's table: asking again cannot help.
   */
  async #execute(cql: string, params: unknown[] = [], options?: cassandra.QueryOptions): Promise<cassandra.types.ResultSet> {
    try {
      return await this.client.execute(cql, params, options);
    } catch (cause) {
      if ((cause as { code?: unknown }).code !== 0x2100) throw cause;
      const table = /\b(?:FROM|INTO|TABLE(?: IF NOT EXISTS)?|UPDATE)\s+([\w."]+)/i.exec(cql)?.[1] ?? "its table";
      throw new CassetteError("ERR_STORE", `Cannot use ${table} in ${this.address} as the role may not: ${(cause as Error).message}`, { cause });
    }
  }

  async listDatasets(): Promise<DatasetSpec[]> {
    const r = await this.#execute(`SELECT spec FROM ${this.keyspace}.cassette_datasets`, [], qr);
    return r.rows.map((row) => JSON.parse(row.spec) as DatasetSpec).sort((x, y) => x.name.localeCompare(y.name));
  }

  async getDataset(name: string): Promise<DatasetSpec> {
    const cached = this.#specs.get(name);
    if (cached) return cached;
    const r = await this.#execute(`SELECT spec FROM ${this.keyspace}.cassette_datasets WHERE name = ?`, [name], qr);
    const row = r.first();
    if (!row) throw unknownDataset(name, this.address, (await this.listDatasets()).map((s) => s.name));
    const spec = JSON.parse(row.spec) as DatasetSpec;
    this.#specs.set(name, spec);
    return spec;
  }

  async createDataset(spec: DatasetSpec): Promise<DatasetSpec> {
    validateSpec(spec);
    const all = await this.listDatasets();
    const same = all.find((s) => s.name === spec.name);
    if (same) {
      sameSchema(spec, same, specHash, this.address);
      // Its tables too: a writer that died between registering and making them left none.
      for (const cql of cqlDatasetDdl(this.keyspace, same)) await this.#execute(cql);
      return same;
    }
    const clash = all.find((s) => tablePrefix(s.name) === tablePrefix(spec.name));
    if (clash) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot create dataset '${spec.name}' as its table names would clash with dataset '${clash.name}' in ${this.address}`);
    }
    // Registered first, as a lightweight transaction: of two ingests racing to create the
    // dataset exactly one wins, and the other either has the same schema (and goes on) or is
    // told whose it is. Only then the tables, from the winner's spec (IF NOT EXISTS).
    const r = await this.#execute(
      `INSERT INTO ${this.keyspace}.cassette_datasets (name, prefix, spec, created) VALUES (?, ?, ?, ?) IF NOT EXISTS`,
      [spec.name, tablePrefix(spec.name), JSON.stringify(spec), new Date()],
      q,
    );
    const row = r.first();
    let stored = spec;
    if (row && row["[applied]"] === false) {
      stored = JSON.parse(row.spec) as DatasetSpec;
      sameSchema(spec, stored, specHash, this.address);
    }
    for (const cql of cqlDatasetDdl(this.keyspace, stored)) await this.#execute(cql);
    this.#specs.set(stored.name, stored);
    return stored;
  }

  /**
   * The ids whose sample is stored whole: its data row, its metadata_by_uuid row and its
   * metadata_by_nat row. One logged batch writes the three, but a batch whose coordinator died
   * mid-write may have some of them only until the batch log replays it; the ingest's re-run
   * then writes such a sample again (the same values) rather than skip it. A fresh sample costs
   * one read (no data row), a stored one three.
   */
  async existing(dataset: string, ids: readonly string[]): Promise<Set<string>> {
    const spec = await this.getDataset(dataset);
    const t = tables(spec.name);
    const inData = `SELECT id FROM ${this.keyspace}.${t.data} WHERE id = ?`;
    const inUuid = `SELECT label${spec.groupBy.map((g) => `, ${g}`).join("")} FROM ${this.keyspace}.${t.byUuid} WHERE id = ?`;
    const inNat = `SELECT id FROM ${this.keyspace}.${t.byNat} WHERE ${[...spec.groupBy, "label", "bucket", "id"].map((c) => `${c} = ?`).join(" AND ")}`;
    const found = await mapLimit(ids, this.#opts.readConcurrency ?? 256, async (id) => {
      if ((await this.#execute(inData, [id], qr)).rowLength === 0) return false;
      const u = (await this.#execute(inUuid, [id], qr)).first();
      if (!u) return false;
      return (await this.#execute(inNat, [...spec.groupBy.map((g) => u[g]), u.label, natBucket(id), id], qr)).rowLength > 0;
    });
    return new Set(ids.filter((_, i) => found[i]));
  }

  async put(dataset: string, samples: readonly SampleInput[], opts: { checked?: boolean } = {}): Promise<PutResult> {
    const spec = await this.getDataset(dataset);
    const t = tables(spec.name);
    const ks = this.keyspace;
    const cols = spec.columns.map((c) => c.name);
    const natCols = [...spec.groupBy, "label", "bucket", ...otherColumns(spec).map((c) => c.name), "id"];
    const insData = `INSERT INTO ${ks}.${t.data} (id, label, data) VALUES (?, ?, ?)`;
    const insUuid = `INSERT INTO ${ks}.${t.byUuid} (id, key, label, size${cols.map((c) => `, ${c}`).join("")}) VALUES (?, ?, ?, ?${cols.map(() => ", ?").join("")})`;
    const insNat = `INSERT INTO ${ks}.${t.byNat} (${natCols.join(", ")}) VALUES (${natCols.map(() => "?").join(", ")})`;
    const rows = samples.map((s) => ({ s, id: sampleId(spec.name, s.key), c: checkSample(spec, s) })); // validate all first
    const stored = opts.checked ? new Set<string>() : await this.existing(dataset, rows.map((r) => r.id));
    const fresh = rows.filter((r) => !stored.has(r.id));
    await mapLimit(fresh, this.#opts.writeConcurrency ?? 64, async ({ s, id, c }) => {
      const meta = c.meta;
      const byName: Record<string, unknown> = Object.fromEntries(cols.map((col, i) => [col, meta[i]]));
      Object.assign(byName, { label: c.cls, bucket: natBucket(id), id });
      const label = cqlLabel(spec.label, c.label);
      // One logged batch: the data row and both metadata rows land together or not at all.
      const batch = [
        { query: insData, params: [id, label instanceof Uint8Array ? buffer(label) : label, buffer(s.data)] },
        { query: insUuid, params: [id, s.key, c.cls, s.data.length, ...meta] },
        { query: insNat, params: natCols.map((c) => byName[c]) },
      ];
      // Written again after a failure another moment may not repeat (a node just killed: "batchlog
      // write timeout", unavailable, no host): the same values, so a second write is harmless.
      // Then the ingest rides through one node's death at RF 3 rather than stop.
      for (let attempt = 1;; attempt++) {
        try {
          await this.client.batch(batch, { prepare: true, logged: true });
          break;
        } catch (cause) {
          if (attempt < WRITE_ATTEMPTS && isRetryable(cause)) {
            await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
            continue;
          }
          const tries = attempt > 1 ? ` (after ${attempt} attempts)` : "";
          throw new CassetteError("ERR_STORE", `Cannot store sample '${s.key}' (${id}) of '${dataset}' in ${this.address}${tries}: ${(cause as Error).message}`, { cause });
        }
      }
    });
    return { written: fresh.length, existing: rows.length - fresh.length };
  }

  async get(dataset: string, ids: readonly string[]): Promise<StoredSample[]> {
    const spec = await this.getDataset(dataset);
    const t = tables(spec.name);
    const cql = `SELECT label, data FROM ${this.keyspace}.${t.data} WHERE id = ?`;
    return mapLimit(ids, this.#opts.readConcurrency ?? 256, async (id) => {
      const row = (await this.#execute(cql, [id], qr)).first();
      if (!row) throw new CassetteError("ERR_STORE", `Cannot find sample ${id} of dataset '${dataset}' in ${this.address}`);
      const data: Uint8Array = row.data;
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      if (spec.label.kind === "int") return { id, label: row.label, data: bytes };
      return { id, data: bytes, ...readLabel(spec.label, row.label, `sample ${id} of '${dataset}' in ${this.address}`) };
    });
  }

  async *scanNat(dataset: string): AsyncIterable<NatRow[]> {
    const spec = await this.getDataset(dataset);
    const cols = spec.columns.map((c) => c.name);
    yield* this.#scan(tables(spec.name).byNat, "*", [...spec.groupBy, "label", "bucket"], (row) => ({
      id: row.id.toString(),
      label: row.label,
      meta: Object.fromEntries(cols.map((c) => [c, plain(row[c])])),
    }));
  }

  async info(dataset: string): Promise<DatasetInfo> {
    const spec = await this.getDataset(dataset);
    const perLabel: Record<number, number> = {};
    let count = 0, bytes = 0;
    for await (const page of this.#scan(tables(spec.name).byUuid, "label, size", ["id"], (row) => row)) {
      for (const row of page) {
        perLabel[row.label] = (perLabel[row.label] ?? 0) + 1;
        count++;
        bytes += row.size;
      }
    }
    return { spec, count, perLabel, bytes };
  }

  /**
   * A whole table's rows as `row` maps them, page by page in the order a full scan gives, its
   * token ranges asked at once (NOTE [ Ranged scan ] in cassandra_scan.ts). Not prepared: each
   * range's statement runs once, and preparing would only add a round trip before the first page.
   */
  async *#scan<T>(table: string, columns: string, partitionKey: readonly string[], row: (r: cassandra.types.Row) => T): AsyncGenerator<T[]> {
    // Equal-width ranges hold equal shares of the rows only where keys hash uniformly (Murmur3).
    const tokenizer = (this.client.metadata as unknown as { tokenizer?: object }).tokenizer;
    const n = tokenizer?.constructor.name === "Murmur3Tokenizer" ? this.#opts.scanConcurrency ?? SCAN_RANGES : 1;
    if (!Number.isInteger(n) || n < 1) throw new CassetteError("ERR_INVALID_OPTION", `Cannot scan ${this.keyspace}.${table} as 'scanConcurrency' must be a whole number ≥ 1: current value is ${n}`);
    const ranges = ringRanges(n);
    const select = `SELECT ${columns} FROM ${this.keyspace}.${table}`;
    yield* pagesInOrder(n, n, SCAN_AHEAD, async (i, pageState) => {
      const r = await this.#execute(select + tokenWhere(partitionKey, ranges[i]), [], { isIdempotent: true, fetchSize: this.#opts.scanPage ?? PAGE, pageState });
      return { rows: r.rows.map(row), pageState: r.pageState ?? undefined };
    });
  }

  async keysOf(dataset: string, ids: readonly string[]): Promise<Map<string, string>> {
    const t = tables((await this.getDataset(dataset)).name);
    const cql = `SELECT key FROM ${this.keyspace}.${t.byUuid} WHERE id = ?`;
    // Single-partition reads, many in flight: what the cluster serves best (an IN over ids asks one coordinator for all).
    const keys = await mapLimit(ids, this.#opts.readConcurrency ?? 256, async (id) => (await this.#execute(cql, [id], qr)).first()?.key as string | undefined);
    const out = new Map<string, string>();
    ids.forEach((id, i) => keys[i] !== undefined && out.set(id, keys[i]!));
    return out;
  }

  /** Top-k lists as list<int> and list<float>; an INSERT is an upsert, so a re-run replaces each id's row. */
  async putPredictions(table: string, rows: readonly PredictionRow[]): Promise<void> {
    checkPredictionTable(table, this.address);
    await this.#execute(
      `CREATE TABLE IF NOT EXISTS ${this.keyspace}."${table}" (id uuid PRIMARY KEY, dataset text, key text, classes list<int>, ` +
        `probs list<float>, label int, weights text, at timestamp)`,
    );
    await this.#predictionColumns(table);
    const cql = `INSERT INTO ${this.keyspace}."${table}" (${PREDICTION_COLUMNS.join(", ")}) VALUES (${PREDICTION_COLUMNS.map(() => "?").join(", ")})`;
    await mapLimit(rows, this.#opts.writeConcurrency ?? 64, async (r) => {
      const params = [r.id, r.dataset, r.key, r.classes, r.probs, r.label, r.weights, new Date(r.at)];
      for (let attempt = 1;; attempt++) {
        try {
          return await this.#execute(cql, params, { prepare: true, isIdempotent: true });
        } catch (cause) {
          if (attempt < WRITE_ATTEMPTS && isRetryable(cause)) {
            await new Promise((res) => setTimeout(res, 250 * 2 ** attempt));
            continue;
          }
          if (cause instanceof CassetteError) throw cause;
          throw new CassetteError("ERR_STORE", `Cannot write the prediction of sample ${r.id} to '${table}' in ${this.address}: ${(cause as Error).message}`, { cause });
        }
      }
    });
  }

  async *scanPredictions(table: string): AsyncIterable<PredictionRow[]> {
    checkPredictionTable(table, this.address);
    await this.#predictionColumns(table);
    yield* this.#scan(`"${table}"`, PREDICTION_COLUMNS.join(", "), ["id"], (row) => ({
      id: row.id.toString(), dataset: row.dataset, key: row.key ?? null, classes: row.classes ?? [], probs: row.probs ?? [],
      label: row.label ?? null, weights: row.weights, at: (row.at as Date).toISOString(),
    }));
  }

  /** Checks that `table` exists with a predictions table's columns: another table of that name is not written to. */
  async #predictionColumns(table: string): Promise<void> {
    const r = await this.#execute(
      "SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
      [this.keyspace.toLowerCase(), table],
      qr,
    );
    const cols = r.rows.map((row) => row.column_name as string).sort();
    if (cols.length === 0) throw new CassetteError("ERR_STORE", `Cannot read predictions table '${table}' in ${this.address}: there is no such table`);
    if (cols.join() !== [...PREDICTION_COLUMNS].sort().join()) {
      throw new CassetteError(
        "ERR_STORE",
        `Cannot use table '${table}' in ${this.address} for predictions as it exists with other columns (${cols.join(", ")}; predictions have ${PREDICTION_COLUMNS.join(", ")}): name another table`,
      );
    }
  }

  close(): Promise<void> {
    return this.client.shutdown();
  }
}

/** A replication factor as SimpleStrategy's map; a map as given. */
function replicationMap(r: string | number): string {
  if (typeof r === "string") return r;
  if (!Number.isInteger(r) || r < 1) throw new CassetteError("ERR_INVALID_OPTION", `Cannot use replication ${r}: a replication factor is a whole number ≥ 1`);
  return `{'class': 'SimpleStrategy', 'replication_factor': ${r}}`;
}

/**
 * Opens the connections to every node, as the driver's warm-up does, but waits for them at
 * most `deadlineMs`: a node that does not answer within it goes on opening in the background
 * (and requests go round it), while the others are ready for the first reads.
 */
async function warmPools(client: CassandraClient, deadlineMs = 2000): Promise<void> {
  const hosts = [...(client.hosts.values() as Iterable<unknown>)] as { isUp(): boolean; warmupPool(keyspace?: string): Promise<void> }[];
  const all = Promise.all(hosts.filter((h) => h.isUp()).map((h) => h.warmupPool(client.keyspace).catch(() => {})));
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)))]);
  clearTimeout(timer);
}

/** The nodes of the cluster `client` is connected to, up or down, as its control connection knows them. */
function clusterNodes(client: CassandraClient): number {
  return Math.max(1, client.hosts?.length ?? 1);
}

/** Driver values (Long for bigint) as plain JSON values. */
function plain(v: unknown): MetaValue {
  if (v === null || v === undefined) return null;
  if (typeof v === "object" && "toNumber" in (v as object)) return (v as { toNumber(): number }).toNumber();
  return v as MetaValue;
}

/** The driver's blob type over the same memory. */
function buffer(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}
