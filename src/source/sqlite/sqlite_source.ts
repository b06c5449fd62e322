/**
 * The SQLite store as a Source. SQLite answers synchronously, so requests made in the same
 * turn of the event loop are gathered and read with one `IN (…)` query on the next turn:
 * the loader still sees independent, callback-answered requests.
 */
import { runtime, type SqliteDatabase } from "../../../runtime-adapters/index.ts";
import { tables } from "../../dataset/schema.ts";
import type { StoredSample } from "../../dataset/store.ts";
import { storeError } from "../retryable.ts";
import type { SqliteStore } from "./sqlite.ts";
import { Capacity, type FetchCallback, type Source } from "../source.ts";

export class SqliteSource implements Source {
  readonly name: string;
  /** The dataset it reads. */
  readonly dataset: string;
  readonly #store: SqliteStore;
  readonly #dataset: string;
  readonly #cap: Capacity;
  #pending: [string, FetchCallback][] = [];
  #scheduled = false;

  constructor(store: SqliteStore, dataset: string, maxInFlight = 4096) {
    this.#store = store;
    this.#dataset = this.dataset = dataset;
    this.#cap = new Capacity(maxInFlight);
    this.name = `${store.address} (${dataset})`;
  }

  fetch(id: string, done: FetchCallback): boolean {
    this.#pending.push([id, done]);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setTimeout(() => this.#flush(), 0);
    }
    return this.#cap.take();
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    const found = new Map<string, StoredSample>();
    let error: Error | null = null;
    try {
      // getSomeSync returns what is stored; a missing id is answered below with its own error.
      for (const s of this.#store.getSomeSync(this.#dataset, batch.map(([id]) => id))) found.set(s.id, s);
    } catch (e) {
      error = e as Error;
    }
    for (const [id, done] of batch) {
      this.#cap.release();
      const s = found.get(id);
      if (s) done(null, s.target ? { id, label: s.label, data: s.data, target: s.target, conn: "sqlite" } : { id, label: s.label, data: s.data, conn: "sqlite" });
      else done(error ?? storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.#dataset}' in ${this.#store.address}`, false));
    }
  }

  /**
   * The key `id` was ingested from (metadata_by_uuid), for an error that names the sample
   * (src/read/decode_source.ts). Rare, so through a handle of its own, opened on first use,
   * rather than a statement on every store's connection.
   */
  async keyOf(id: string): Promise<string | undefined> {
    // Immutable only where the store had to be (read-only media): it reads past the
    // write-ahead log, where recent samples may still be.
    this.#keys ??= tryOpen(this.#store.path) ?? runtime.openSqlite(this.#store.path, { immutable: true });
    const row = this.#keys.prepare(`SELECT key FROM "${tables(this.#dataset).byUuid}" WHERE id = ?`).get(id);
    return typeof row?.key === "string" ? row.key : undefined;
  }
  #keys?: SqliteDatabase;

  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }
  inFlight(): number {
    return this.#cap.inFlight;
  }
  close(): Promise<void> {
    this.#keys?.close();
    this.#keys = undefined;
    return Promise.resolve();
  }
}

function tryOpen(path: string): SqliteDatabase | undefined {
  try {
    return runtime.openSqlite(path);
  } catch {
    return undefined;
  }
}
