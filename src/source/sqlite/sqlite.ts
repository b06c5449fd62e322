/**
 * The embedded store: one SQLite file (`sqlite:PATH`), through the runtime's own SQLite
 * (bun:sqlite, node:sqlite). Each `put` is one transaction: a sample's data and metadata land
 * together or not at all. Calls are synchronous underneath; the async interface is the Store's.
 */
import { existsSync, statSync } from "node:fs";
import { runtime } from "../../../runtime-adapters/index.ts";
import type { SqliteDatabase, SqliteStatement, SqliteValue } from "../../../runtime-adapters/index.ts";
import { CassetteError } from "../../errors.ts";
import { sampleId } from "../../dataset/sample_id.ts";
import { type DatasetSpec, otherColumns, specHash, tablePrefix, validateSpec } from "../../dataset/spec.ts";
import { SCHEMA_VERSION, SQLITE_REGISTRY, sqliteDatasetDdl, tables } from "../../dataset/schema.ts";
import { readLabel } from "../../dataset/label.ts";
import {
  checkPredictionTable,
  type DatasetInfo,
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

const IN_CHUNK = 500; // ids per SELECT … IN (…), under SQLite's parameter limit
const SCAN_PAGE = 10_000;

/*
 * NOTE [ Reading by rowid ]
 * A sample's row is found by its id through the table's primary-key index, then by rowid in
 * the table: two B-tree descents, the first comparing 36-character strings, each page read
 * by a read() into the connection's 2 MB cache (a read worker's file is 66 MB for
 * Fashion-MNIST). Read again by rowid (`rowid IN (…)`) it costs one descent, and pages come
 * through a memory mapping (`mmap_size`): a batch of 128 at random went from ~5.9 µs a sample
 * to ~2 µs on the 2-vCPU VM, and two read workers hand over ~1.12× the samples
 * (bench/read_workers.bench.ts --by-id; bench/RESULTS.md "Reading by rowid"). So each read by
 * id also returns the rowid, remembered per id, and later epochs read by rowid. A rowid is a
 * hint, never trusted: each row read that way must carry the id it was asked for, and an id
 * whose row is missing or is another's (rows deleted and added, a VACUUM renumbering) is
 * forgotten and read by id in the same call. The map costs ~50 bytes an id; past ROWIDS_MAX
 * ids (a photo set, where the decode's milliseconds dwarf the lookup's microseconds) the rest
 * are read by id.
 */
const ROWIDS_MAX = 1 << 20;
/** The first bytes of a store's file that SQLite reads through a memory mapping (address space, not memory). */
const MMAP_BYTES = 1 << 30;
/** CASSETTE_SQLITE_BY_ID=1 reads as before the note: by id, through read() (bench/read_workers.bench.ts --by-id). */
const BY_ID = runtime.env("CASSETTE_SQLITE_BY_ID") === "1";

interface Prepared {
  spec: DatasetSpec;
  insertData: SqliteStatement;
  insertByUuid: SqliteStatement;
  insertByNat: SqliteStatement;
  natOrder: string[]; // metadata_by_nat columns, in insert order
}

export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  readonly address: string;
  readonly path: string;
  readonly #db: SqliteDatabase;
  readonly #datasets = new Map<string, Prepared>();
  readonly #selects = new Map<string, SqliteStatement>();
  /** Samples read by rowid and by id (NOTE [ Reading by rowid ]), for the tests and benchmarks. */
  readonly lookups = { byRowid: 0, byId: 0 };
  /** Per dataset, the rowid of each sample read here (NOTE [ Reading by rowid ]), up to ROWIDS_MAX. */
  readonly #rowids = new Map<string, Map<string, number>>();

  private constructor(path: string, db: SqliteDatabase) {
    this.path = path;
    this.address = `sqlite:${path}`;
    this.#db = db;
  }

  /**
   * Opens the store at `path`; with `create` (the default) the file and cassette's tables are
   * made when absent, without it the file must already be a cassette store.
   */
  static open(path: string, create = true): SqliteStore {
    if (!create && !existsSync(path)) {
      throw new CassetteError("ERR_STORE", `Cannot open the SQLite store at '${path}': there is no such file (cassette ingest SOURCE --store sqlite:${path} --dataset NAME makes one)`);
    }
    let db: SqliteDatabase | undefined, ours: boolean;
    const isOurs = (d: SqliteDatabase) => !!d.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'cassette_meta'").get();
    try {
      try {
        db = runtime.openSqlite(path);
        db.exec("PRAGMA busy_timeout = 10000");
        // Pages read through a mapping, not a read() per page into each connection's 2 MB
        // cache (NOTE [ Reading by rowid ]); the mapped pages are the OS's page cache, shared
        // by every worker's connection. Writes still go through write().
        if (!BY_ID) db.exec(`PRAGMA mmap_size = ${MMAP_BYTES}`);
        ours = isOurs(db);
      } catch (cause) {
        closeQuietly(db);
        db = undefined;
        if (create || !cannotOpen(cause)) throw cause;
        db = openImmutable(path, cause);
        ours = isOurs(db);
      }
      if (!ours && create) {
        db.exec(SQLITE_REGISTRY);
        ours = true;
      }
    } catch (cause) {
      closeQuietly(db); // a handle that opened before the failure must not hold the file
      if (cause instanceof CassetteError) throw cause;
      throw new CassetteError("ERR_STORE", `Cannot open the SQLite store at '${path}': ${(cause as Error).message}`, { cause });
    }
    if (!ours) {
      db.close();
      throw new CassetteError("ERR_STORE", `Cannot read '${path}' as a cassette store: it is an SQLite file without cassette's tables (cassette ingest makes them)`);
    }
    const v = db.prepare("SELECT value FROM cassette_meta WHERE name = 'schema_version'").get()?.value;
    if (Number(v) !== SCHEMA_VERSION) {
      db.close();
      throw new CassetteError(
        "ERR_UNSUPPORTED",
        `Cannot use the SQLite store at '${path}' as its schema version is ${v}: this cassette reads version ${SCHEMA_VERSION} (re-ingest into a new file)`,
      );
    }
    return new SqliteStore(path, db);
  }

  async listDatasets(): Promise<DatasetSpec[]> {
    return this.#db.prepare("SELECT spec FROM cassette_datasets ORDER BY name").all().map((r) => JSON.parse(r.spec as string));
  }

  async getDataset(name: string): Promise<DatasetSpec> {
    return this.#prepared(name).spec;
  }

  async createDataset(spec: DatasetSpec): Promise<DatasetSpec> {
    validateSpec(spec);
    const row = this.#db.prepare("SELECT name, spec FROM cassette_datasets WHERE name = ? OR prefix = ?").get(spec.name, tablePrefix(spec.name));
    if (row) {
      const stored = JSON.parse(row.spec as string) as DatasetSpec;
      if (stored.name !== spec.name) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot create dataset '${spec.name}' as its table names would clash with dataset '${stored.name}' in ${this.address}`);
      }
      sameSchema(spec, stored, specHash, this.address);
      return stored;
    }
    this.#transaction(() => {
      this.#db.exec(sqliteDatasetDdl(spec));
      this.#db.prepare("INSERT INTO cassette_datasets (name, prefix, spec, created) VALUES (?, ?, ?, ?)")
        .run(spec.name, tablePrefix(spec.name), JSON.stringify(spec), new Date().toISOString());
    });
    return spec;
  }

  async existing(dataset: string, ids: readonly string[]): Promise<Set<string>> {
    const t = tables(this.#prepared(dataset).spec.name);
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const chunk = ids.slice(i, i + IN_CHUNK);
      for (const r of this.#select(t.data, "id", chunk.length).all(...chunk)) out.add(r.id as string);
    }
    return out;
  }

  async put(dataset: string, samples: readonly SampleInput[]): Promise<PutResult> {
    const p = this.#prepared(dataset);
    const rows = samples.map((s) => ({ s, id: sampleId(p.spec.name, s.key), c: checkSample(p.spec, s) })); // validate all first
    let written = 0, existing = 0;
    this.#transaction(() => {
      for (const { s, id, c } of rows) {
        if (p.insertData.run(id, c.label, s.data).changes === 0) {
          existing++;
          continue;
        }
        p.insertByUuid.run(id, s.key, c.cls, s.data.length, ...c.meta);
        const byName = Object.fromEntries(p.spec.columns.map((col, i) => [col.name, c.meta[i]]));
        p.insertByNat.run(...p.natOrder.map((n) => (n === "label" ? c.cls : n === "id" ? id : byName[n])) as SqliteValue[]);
        written++;
      }
    });
    return { written, existing };
  }

  async get(dataset: string, ids: readonly string[]): Promise<StoredSample[]> {
    return this.getSync(dataset, ids);
  }

  /**
   * The stored samples among `ids`, in no particular order: missing ids are simply absent.
   * Ids read before are looked up by their rowid (NOTE [ Reading by rowid ]).
   */
  getSomeSync(dataset: string, ids: readonly string[]): StoredSample[] {
    const spec = this.#prepared(dataset).spec;
    const t = tables(spec.name);
    const out: StoredSample[] = [];
    const plain = spec.label.kind === "int";
    const rowids = this.#rowidsOf(dataset);
    const add = (r: Record<string, unknown>) => {
      const id = r.id as string, data = r.data as Uint8Array;
      if (plain) out.push({ id, label: Number(r.label), data });
      else out.push({ id, data, ...readLabel(spec.label, r.label, `sample ${id} of '${dataset}' in ${this.address}`) });
    };
    const byId: string[] = [];
    const want = new Map<number, string>();
    for (const id of ids) {
      const r = rowids.get(id);
      if (r === undefined || BY_ID) byId.push(id);
      else want.set(r, id);
    }
    if (want.size) {
      const keys = [...want.keys()];
      for (let i = 0; i < keys.length; i += IN_CHUNK) {
        const chunk = keys.slice(i, i + IN_CHUNK);
        for (const r of this.#select(t.data, "rowid AS r, id, label, data", chunk.length, "rowid").all(...chunk)) {
          const rowid = Number(r.r);
          if (want.get(rowid) !== r.id) continue; // another row has that rowid now: read by id below
          want.delete(rowid);
          this.lookups.byRowid++;
          add(r);
        }
      }
      // Rows gone or renumbered (a VACUUM may renumber a table's rowids): forgotten, and read by id.
      for (const id of want.values()) rowids.delete(id), byId.push(id);
    }
    for (let i = 0; i < byId.length; i += IN_CHUNK) {
      const chunk = byId.slice(i, i + IN_CHUNK);
      for (const r of this.#select(t.data, "rowid AS r, id, label, data", chunk.length, "id").all(...chunk)) {
        if (rowids.size < ROWIDS_MAX) rowids.set(r.id as string, Number(r.r));
        this.lookups.byId++;
        add(r);
      }
    }
    return out;
  }

  #rowidsOf(dataset: string): Map<string, number> {
    let m = this.#rowids.get(dataset);
    if (!m) this.#rowids.set(dataset, (m = new Map()));
    return m;
  }

  /** `get` without the promise: for callers on the hot path that batch their own work. */
  getSync(dataset: string, ids: readonly string[]): StoredSample[] {
    const found = new Map(this.getSomeSync(dataset, ids).map((s) => [s.id, s]));
    return ids.map((id) => {
      const s = found.get(id);
      if (!s) throw new CassetteError("ERR_STORE", `Cannot find sample ${id} of dataset '${dataset}' in ${this.address}`);
      return s;
    });
  }

  async *scanNat(dataset: string): AsyncIterable<NatRow[]> {
    const p = this.#prepared(dataset);
    const t = tables(p.spec.name);
    const cols = p.spec.columns.map((c) => c.name);
    // Keyset pagination over the primary key: each page starts where the last ended, so a
    // scan of millions of rows costs one index walk, not a growing OFFSET.
    const key = [...p.spec.groupBy, "label", "id"].map((k) => `"${k}"`);
    const order = `ORDER BY ${key.join(", ")} LIMIT ${SCAN_PAGE}`;
    const first = this.#db.prepare(`SELECT * FROM "${t.byNat}" ${order}`);
    const next = this.#db.prepare(`SELECT * FROM "${t.byNat}" WHERE (${key.join(", ")}) > (${key.map(() => "?").join(", ")}) ${order}`);
    let rows = first.all();
    while (rows.length > 0) {
      yield rows.map((r) => ({
        id: r.id as string,
        label: Number(r.label),
        meta: Object.fromEntries(cols.map((c) => [c, (r[c] ?? null) as string | number | null])),
      }));
      if (rows.length < SCAN_PAGE) return;
      const last = rows[rows.length - 1];
      rows = next.all(...[...p.spec.groupBy, "label", "id"].map((k) => last[k]));
    }
  }

  async info(dataset: string): Promise<DatasetInfo> {
    const p = this.#prepared(dataset);
    const t = tables(p.spec.name);
    const perLabel: Record<number, number> = {};
    let count = 0, bytes = 0;
    for (const r of this.#db.prepare(`SELECT label, count(*) AS n, sum(size) AS b FROM "${t.byUuid}" GROUP BY label ORDER BY label`).all()) {
      perLabel[Number(r.label)] = Number(r.n);
      count += Number(r.n);
      bytes += Number(r.b);
    }
    return { spec: p.spec, count, perLabel, bytes };
  }

  async keysOf(dataset: string, ids: readonly string[]): Promise<Map<string, string>> {
    const t = tables(this.#prepared(dataset).spec.name);
    const out = new Map<string, string>();
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const chunk = ids.slice(i, i + IN_CHUNK);
      for (const r of this.#select(t.byUuid, "id, key", chunk.length).all(...chunk)) out.set(r.id as string, r.key as string);
    }
    return out;
  }

  /** Top-k lists are JSON arrays (SQLite has no list type); one transaction per call. */
  async putPredictions(table: string, rows: readonly PredictionRow[]): Promise<void> {
    checkPredictionTable(table, this.address);
    try {
      this.#db.exec(
        `CREATE TABLE IF NOT EXISTS "${table}" (id TEXT PRIMARY KEY, dataset TEXT NOT NULL, key TEXT, classes TEXT NOT NULL, ` +
          `probs TEXT NOT NULL, label INTEGER, weights TEXT NOT NULL, at TEXT NOT NULL)`,
      );
    } catch (cause) {
      throw new CassetteError("ERR_STORE", `Cannot make predictions table '${table}' in ${this.address}: ${(cause as Error).message}`, { cause });
    }
    this.#predictionColumns(table);
    const insert = this.#db.prepare(`INSERT OR REPLACE INTO "${table}" (${PREDICTION_COLUMNS.join(", ")}) VALUES (${PREDICTION_COLUMNS.map(() => "?").join(", ")})`);
    this.#transaction(() => {
      for (const r of rows) insert.run(r.id, r.dataset, r.key, JSON.stringify(r.classes), JSON.stringify(r.probs), r.label, r.weights, r.at);
    });
  }

  async *scanPredictions(table: string): AsyncIterable<PredictionRow[]> {
    checkPredictionTable(table, this.address);
    this.#predictionColumns(table);
    const page = this.#db.prepare(`SELECT * FROM "${table}" WHERE id > ? ORDER BY id LIMIT ${SCAN_PAGE}`);
    for (let after = "";;) {
      const rows = page.all(after);
      if (rows.length === 0) return;
      yield rows.map((r) => ({
        id: r.id as string, dataset: r.dataset as string, key: (r.key ?? null) as string | null,
        classes: JSON.parse(r.classes as string), probs: JSON.parse(r.probs as string),
        label: r.label === null || r.label === undefined ? null : Number(r.label), weights: r.weights as string, at: r.at as string,
      }));
      after = rows[rows.length - 1].id as string;
    }
  }

  /** Checks that `table` exists with a predictions table's columns: another table of that name is not overwritten. */
  #predictionColumns(table: string): void {
    const cols = this.#db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table).map((r) => r.name as string);
    if (cols.length === 0) throw new CassetteError("ERR_STORE", `Cannot read predictions table '${table}' in ${this.address}: there is no such table`);
    if (cols.join() !== PREDICTION_COLUMNS.join()) {
      throw new CassetteError(
        "ERR_STORE",
        `Cannot use table '${table}' in ${this.address} for predictions as it exists with other columns (${cols.join(", ")}; predictions have ${PREDICTION_COLUMNS.join(", ")}): name another table`,
      );
    }
  }

  async close(): Promise<void> {
    this.#db.close();
  }

  #prepared(name: string): Prepared {
    let p = this.#datasets.get(name);
    if (p) return p;
    const row = this.#db.prepare("SELECT spec FROM cassette_datasets WHERE name = ?").get(name);
    if (!row) {
      throw unknownDataset(name, this.address, this.#db.prepare("SELECT name FROM cassette_datasets ORDER BY name").all().map((r) => r.name as string));
    }
    const spec = JSON.parse(row.spec as string) as DatasetSpec;
    const t = tables(name);
    const colNames = spec.columns.map((c) => `"${c.name}"`);
    const natOrder = [...spec.groupBy, "label", ...otherColumns(spec).map((c) => c.name), "id"];
    p = {
      spec,
      insertData: this.#db.prepare(`INSERT OR IGNORE INTO "${t.data}" (id, label, data) VALUES (?, ?, ?)`),
      insertByUuid: this.#db.prepare(
        `INSERT OR REPLACE INTO "${t.byUuid}" (id, key, label, size${colNames.map((c) => `, ${c}`).join("")}) VALUES (?, ?, ?, ?${colNames.map(() => ", ?").join("")})`,
      ),
      insertByNat: this.#db.prepare(`INSERT OR REPLACE INTO "${t.byNat}" (${natOrder.map((n) => `"${n}"`).join(", ")}) VALUES (${natOrder.map(() => "?").join(", ")})`),
      natOrder,
    };
    this.#datasets.set(name, p);
    return p;
  }

  #select(table: string, cols: string, n: number, key: "id" | "rowid" = "id"): SqliteStatement {
    const name = `${table}|${cols}|${n}|${key}`;
    let st = this.#selects.get(name);
    if (!st) {
      st = this.#db.prepare(`SELECT ${cols} FROM "${table}" WHERE ${key} IN (${new Array(n).fill("?").join(",")})`);
      this.#selects.set(name, st);
    }
    return st;
  }

  #transaction(fn: () => void): void {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      fn();
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    }
  }
}

/**
 * SQLITE_CANTOPEN (14), as bun:sqlite (`errno`) and node:sqlite (`errcode`, extended) report
 * it: the file could not be opened, not a busy lock or a corrupt page, which an immutable read
 * must not paper over.
 */
function cannotOpen(e: unknown): boolean {
  const x = e as { errno?: unknown; errcode?: unknown };
  const code = typeof x.errcode === "number" ? x.errcode : typeof x.errno === "number" ? x.errno : -1;
  return (code & 0xff) === 14;
}

function closeQuietly(db: SqliteDatabase | undefined): void {
  try {
    db?.close();
  } catch { /* it was not open */ }
}

/**
 * A reader's second try. A store is in WAL mode, and SQLite opens a WAL file only where it can
 * make the -shm file beside it, so on read-only media (a read-only volume, squashfs, an ro NFS
 * export) the usual open fails. Nothing changes the file through such a mount: it is read as
 * immutable, unless a write-ahead log lies beside it, whose commits an immutable read would
 * miss. Throws `cause` (the first failure) when this cannot help.
 */
function openImmutable(path: string, cause: unknown): SqliteDatabase {
  const wal = `${path}-wal`;
  if (existsSync(wal) && statSync(wal).size > 0) {
    throw new CassetteError(
      "ERR_STORE",
      `Cannot open the SQLite store at '${path}': ${(cause as Error).message}. A write-ahead log (${wal}) holds commits that a reader cannot fold in where it cannot write: open the store once with write access (any cassette command) and copy it again`,
      { cause },
    );
  }
  try {
    return runtime.openSqlite(path, { immutable: true });
  } catch {
    throw cause;
  }
}
