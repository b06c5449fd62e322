/**
 * The embedded store: one SQLite file (`sqlite:PATH`), through the runtime's own SQLite
 * (bun:sqlite, node:sqlite). Writes are one transaction per call, so a sample's data and
 * metadata land together or not at all; ids are UUIDv5, so writing twice stores once.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import type { SqliteDatabase, SqliteStatement } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { sampleId } from "../dataset/sample_id.ts";
import { SQLITE_SCHEMA, SQLITE_SCHEMA_VERSION } from "../dataset/schema.ts";

/** One sample to store. */
export interface SampleInput {
  /** Source key: the id is `sampleId(dataset, key)`. */
  key: string;
  label: number;
  data: Uint8Array;
  /** Group for splits (e.g. a patient or a scan); "" when none. */
  group?: string;
  meta?: Record<string, unknown>;
}

/** What training reads: the label travels with the bytes. */
export interface StoredSample {
  id: string;
  label: number;
  data: Uint8Array;
}

const IN_CHUNK = 500; // ids per SELECT … IN (…), under SQLite's parameter limit

export class SqliteStore {
  readonly path: string;
  readonly #db: SqliteDatabase;
  readonly #insertData: SqliteStatement;
  readonly #insertMeta: SqliteStatement;
  readonly #insertNat: SqliteStatement;
  readonly #select = new Map<number, SqliteStatement>();

  private constructor(path: string, db: SqliteDatabase) {
    this.path = path;
    this.#db = db;
    this.#insertData = db.prepare("INSERT OR IGNORE INTO data_by_uuid (id, dataset, label, data) VALUES (?, ?, ?, ?)");
    this.#insertMeta = db.prepare("INSERT OR IGNORE INTO metadata_by_uuid (id, dataset, key, label, meta) VALUES (?, ?, ?, ?, ?)");
    this.#insertNat = db.prepare("INSERT OR IGNORE INTO metadata_by_nat (dataset, grp, label, id) VALUES (?, ?, ?, ?)");
  }

  /** Opens (creating if needed) the store at `path`. */
  static open(path: string): SqliteStore {
    let db: SqliteDatabase;
    try {
      db = runtime.openSqlite(path);
      db.exec(SQLITE_SCHEMA);
    } catch (cause) {
      throw new CassetteError("ERR_STORE", `Cannot open the SQLite store at '${path}': ${(cause as Error).message}`, { cause });
    }
    const v = db.prepare("SELECT value FROM cassette_meta WHERE name = 'schema_version'").get()?.value;
    if (Number(v) !== SQLITE_SCHEMA_VERSION) {
      db.close();
      throw new CassetteError("ERR_UNSUPPORTED", `Cannot use the SQLite store at '${path}' as its schema version is ${v}: this cassette reads ${SQLITE_SCHEMA_VERSION}`);
    }
    return new SqliteStore(path, db);
  }

  /**
   * Stores `samples` of `dataset` in one transaction. Returns how many were new and how many
   * were already there (same id). On error nothing of this call is stored.
   */
  put(dataset: string, samples: Iterable<SampleInput>): { written: number; existing: number } {
    let written = 0, existing = 0;
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const s of samples) {
        if (!Number.isInteger(s.label)) {
          throw new CassetteError("ERR_INVALID_OPTION", `Cannot store sample '${s.key}' of '${dataset}' as its label must be an integer: current value is ${s.label}`);
        }
        const id = sampleId(dataset, s.key);
        if (this.#insertData.run(id, dataset, s.label, s.data).changes === 0) {
          existing++;
          continue;
        }
        this.#insertMeta.run(id, dataset, s.key, s.label, JSON.stringify(s.meta ?? {}));
        this.#insertNat.run(dataset, s.group ?? "", s.label, id);
        written++;
      }
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    }
    return { written, existing };
  }

  /** Which of `ids` are stored (to skip work for them, e.g. re-encoding on a resumed ingest). */
  has(ids: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const chunk = ids.slice(i, i + IN_CHUNK);
      const rows = this.#db.prepare(`SELECT id FROM data_by_uuid WHERE id IN (${chunk.map(() => "?").join(",")})`).all(...chunk);
      for (const r of rows) out.add(r.id as string);
    }
    return out;
  }

  /** Number of samples of `dataset`. */
  count(dataset: string): number {
    return Number(this.#db.prepare("SELECT count(*) AS n FROM data_by_uuid WHERE dataset = ?").get(dataset)?.n ?? 0);
  }

  /** Ids of `dataset` in natural order (group, label, id). */
  ids(dataset: string): string[] {
    return this.#db.prepare("SELECT id FROM metadata_by_nat WHERE dataset = ? ORDER BY grp, label, id").all(dataset).map((r) => r.id as string);
  }

  /** The samples with these ids, in the order given; a missing id is an error that names it. */
  get(ids: readonly string[]): StoredSample[] {
    const found = new Map<string, StoredSample>();
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const chunk = ids.slice(i, i + IN_CHUNK);
      let st = this.#select.get(chunk.length);
      if (!st) {
        st = this.#db.prepare(`SELECT id, label, data FROM data_by_uuid WHERE id IN (${chunk.map(() => "?").join(",")})`);
        this.#select.set(chunk.length, st);
      }
      for (const r of st.all(...chunk)) found.set(r.id as string, { id: r.id as string, label: Number(r.label), data: r.data as Uint8Array });
    }
    return ids.map((id) => {
      const s = found.get(id);
      if (!s) throw new CassetteError("ERR_STORE", `Cannot find sample ${id} in the SQLite store at '${this.path}'`);
      return s;
    });
  }

  close(): void {
    this.#db.close();
  }
}
