/**
 * A local cache under a far source: samples fetched once are kept in a SQLite file on this
 * machine, within a byte budget, and served from it when asked again.
 *
 * The Loader announces each epoch's order (`Source.plan`), so the cache knows which sample it
 * will need next and gives up the one needed furthest away (src/source/cache/policy.ts, Belady's
 * policy); a sample needed later than everything kept is not kept at all.
 *
 * NOTE [ A cache that survives kill -9 ]
 * Every entry is written in one SQLite transaction (WAL, synchronous=NORMAL: a killed process
 * loses at most the entries being written, never a committed one) with a CRC-32 of its bytes.
 * A hit whose bytes do not match their CRC (a torn page, a disk's bad block, a hand-edited file)
 * is never served: it is deleted, counted as `torn`, and fetched from the source again, as a
 * miss. A cache made for another dataset is refused by name rather than answering with its ids.
 */
import { runtime } from "../../../runtime-adapters/index.ts";
import type { SqliteDatabase, SqliteStatement } from "../../../runtime-adapters/index.ts";
import { CassetteError } from "../../errors.ts";
import { crc32 } from "../../util/crc32.ts";
import type { FetchCallback, Fetched, Source } from "../source.ts";
import { CacheBook, cachePolicy } from "./policy.ts";

/** Where and how much to cache. */
export interface CacheOptions {
  /** The cache's SQLite file, made when absent and reused by later runs. */
  path: string;
  /** Budget for the cached samples' bytes (their data and non-class labels), e.g. half the dataset. */
  bytes: number;
  /** "belady" (default): give up the sample needed furthest in the announced plan; "lru": the least recently used. */
  policy?: "belady" | "lru";
}

/** What the cache did so far. */
export interface CacheStats {
  /** Requests answered from the cache. */
  hits: number;
  /** Requests passed to the source. */
  misses: number;
  /** Samples given up to stay within the budget. */
  evictions: number;
  /** Cached entries whose bytes failed their CRC: deleted and fetched again, never served. */
  torn: number;
  /** Entries that could not be written (the sample was still delivered). */
  writeErrors: number;
  /** Bytes held now. */
  bytes: number;
  /** The budget, in bytes. */
  budget: number;
}

const TARGET_NONE = 0, TARGET_F32 = 1, TARGET_U8 = 2;

/** A Source that answers from a local cache first, and keeps what it fetches (NOTE [ A cache that survives kill -9 ]). */
export class CacheSource<S extends Fetched = Fetched> implements Source<Fetched> {
  /** The inner source's name and the cache's file. */
  readonly name: string;
  /** The dataset the inner source reads, when it knows. */
  readonly dataset?: string;
  /** Every sample id the inner source can serve, where it can list them. */
  readonly ids?: () => string[] | Promise<string[]>;
  /** The inner source's ids by shard, where it is a shard set. */
  readonly shards?: () => string[][];
  readonly #inner: Source<S>;
  readonly #db: SqliteDatabase;
  readonly #book: CacheBook;
  readonly #get: SqliteStatement;
  readonly #put: SqliteStatement;
  readonly #delete: SqliteStatement;
  #pendingHits = 0;
  #closed = false;
  readonly #stats = { hits: 0, misses: 0, evictions: 0, torn: 0, writeErrors: 0 };

  /** A cache at `options.path` under `inner` (opened, or made when absent); a file made for another dataset is refused. */
  constructor(inner: Source<S>, options: CacheOptions) {
    checkCacheOptions(options);
    this.#inner = inner;
    this.#book = new CacheBook(cachePolicy(options.policy ?? "belady"), options.bytes);
    this.name = `${inner.name} (cached in ${options.path})`;
    this.dataset = inner.dataset;
    if (inner.ids) this.ids = () => inner.ids!();
    if (inner.shards) this.shards = () => inner.shards!();
    this.#db = openCacheFile(options.path, inner.dataset);
    this.#get = this.#db.prepare("SELECT label, data, target, target_kind, crc FROM cassette_cache WHERE id = ?");
    this.#put = this.#db.prepare("INSERT OR REPLACE INTO cassette_cache (id, label, data, target, target_kind, crc) VALUES (?, ?, ?, ?, ?, ?)");
    this.#delete = this.#db.prepare("DELETE FROM cassette_cache WHERE id = ?");
    this.#loadIndex();
  }

  /** The Loader's announcement of an epoch's order: what Belady's policy needs to know. */
  plan(epoch: number, ids: readonly string[]): void {
    this.#book.policy.plan(epoch, ids);
  }

  /** Answers from the cache (a whole entry only), else from the source, keeping the answer when the policy says so. */
  fetch(id: string, done: FetchCallback<Fetched>): boolean {
    this.#book.policy.touch(id);
    if (this.#book.has(id)) {
      const hit = this.#read(id);
      if (hit) {
        this.#stats.hits++;
        this.#pendingHits++;
        queueMicrotask(() => {
          this.#pendingHits--;
          done(null, hit);
        });
        return true;
      }
    }
    this.#stats.misses++;
    return this.#inner.fetch(id, (err, s) => {
      if (!err && s && !this.#closed) this.#keep(s);
      done(err, s);
    });
  }

  /** The inner source's drain: hits never saturate. */
  onDrain(listener: () => void): void {
    this.#inner.onDrain(listener);
  }

  /** The inner source's requests, and hits not yet answered. */
  inFlight(): number {
    return this.#inner.inFlight() + this.#pendingHits;
  }

  /** Hits, misses, evictions, torn entries and bytes held. */
  stats(): CacheStats {
    return { ...this.#stats, bytes: this.#book.used, budget: this.#book.budget };
  }

  /** Closes the cache's file and the inner source. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#db.close();
    }
    await this.#inner.close();
  }

  /** The cached entry, or undefined when its bytes fail their CRC (then it is gone). */
  #read(id: string): Fetched | undefined {
    const row = this.#get.get(id);
    if (row) {
      const data = row.data as Uint8Array, target = row.target as Uint8Array | null;
      if (crc32(data, target ?? undefined) === Number(row.crc)) {
        const kind = Number(row.target_kind);
        const s: Fetched = { id, label: Number(row.label), data, conn: "cache" };
        if (kind === TARGET_U8 && target) s.target = target;
        if (kind === TARGET_F32 && target) s.target = new Float32Array(target.slice().buffer);
        return s;
      }
      this.#stats.torn++;
    }
    this.#forget(id);
    return undefined;
  }

  #keep(s: Fetched): void {
    if (this.#book.has(s.id)) return; // a hedge's second answer
    const t = s.target;
    const target = t ? new Uint8Array(t.buffer, t.byteOffset, t.byteLength) : null;
    const kept = this.#book.keep(s.id, s.data.byteLength + (target?.byteLength ?? 0), (v) => {
      this.#delete.run(v);
      this.#stats.evictions++;
    });
    if (!kept) return;
    try {
      this.#put.run(s.id, s.label, s.data, target, t instanceof Float32Array ? TARGET_F32 : t ? TARGET_U8 : TARGET_NONE, crc32(s.data, target ?? undefined));
    } catch {
      this.#book.forget(s.id);
      this.#stats.writeErrors++; // a full disk: the sample is still delivered, just not kept
    }
  }

  #forget(id: string): void {
    this.#delete.run(id);
    this.#book.forget(id);
  }

  /** The entries a previous run left, oldest first; beyond a (smaller) budget, the oldest go. */
  #loadIndex(): void {
    const rows = this.#db.prepare("SELECT id, length(data) + ifnull(length(target), 0) AS size FROM cassette_cache ORDER BY rowid").all();
    const budget = this.#book.budget;
    let held = 0;
    for (const r of rows) {
      const id = String(r.id), size = Number(r.size);
      if (held + size > budget) {
        this.#delete.run(id);
        this.#stats.evictions++;
      } else if (this.#book.keep(id, size, () => {})) held += size;
    }
  }
}

/** Names a bad cache option before anything is opened. */
export function checkCacheOptions(o: CacheOptions): void {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot open a cache as ${why}`);
  };
  if (typeof o !== "object" || o === null) bad(`'cache' must be { path, bytes }: current value is ${o}`);
  if (typeof o.path !== "string" || o.path === "") bad(`'path' must name the cache's file: current value is ${o.path}`);
  if (!(Number.isFinite(o.bytes) && o.bytes > 0)) bad(`'bytes' must be a positive number of bytes: current value is ${o.bytes}`);
  if (o.policy !== undefined && o.policy !== "belady" && o.policy !== "lru") bad(`'policy' must be "belady" or "lru": current value is ${o.policy}`);
}

/** Opens (making it when absent) the cache file; one made for another dataset is refused. */
function openCacheFile(path: string, dataset: string | undefined): SqliteDatabase {
  let db: SqliteDatabase;
  try {
    db = runtime.openSqlite(path);
    // Two runs may share a cache: a writer waits for the other's transaction rather than failing.
    db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    db.exec(
      "CREATE TABLE IF NOT EXISTS cassette_cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);" +
        "CREATE TABLE IF NOT EXISTS cassette_cache (id TEXT PRIMARY KEY, label INTEGER NOT NULL, data BLOB NOT NULL, target BLOB, target_kind INTEGER NOT NULL, crc INTEGER NOT NULL);",
    );
  } catch (e) {
    throw new CassetteError("ERR_STORE", `Cannot open the cache at ${path}: ${(e as Error).message}`, { cause: e });
  }
  const row = db.prepare("SELECT value FROM cassette_cache_meta WHERE key = 'dataset'").get();
  const held = row ? String(row.value) : undefined;
  if (held !== undefined && dataset !== undefined && held !== dataset) {
    db.close();
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot use the cache at ${path} for dataset '${dataset}': it holds samples of '${held}' (give another path, or delete the file)`);
  }
  if (held === undefined && dataset !== undefined) db.prepare("INSERT INTO cassette_cache_meta (key, value) VALUES ('dataset', ?)").run(dataset);
  return db;
}
