/**
 * The SQLite store as a Source. SQLite answers synchronously, so requests made in the same
 * turn of the event loop are gathered and read with one `IN (…)` query on the next turn:
 * the loader still sees independent, callback-answered requests.
 */
import { storeError } from "./retryable.ts";
import type { SqliteStore } from "./sqlite.ts";
import { Capacity, type FetchCallback, type Source } from "./source.ts";

export class SqliteSource implements Source {
  readonly name: string;
  readonly #store: SqliteStore;
  readonly #dataset: string;
  readonly #cap: Capacity;
  #pending: [string, FetchCallback][] = [];
  #scheduled = false;

  constructor(store: SqliteStore, dataset: string, maxInFlight = 4096) {
    this.#store = store;
    this.#dataset = dataset;
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
    const found = new Map<string, { label: number; data: Uint8Array }>();
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
      if (s) done(null, { id, label: s.label, data: s.data, conn: "sqlite" });
      else done(error ?? storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.#dataset}' in ${this.#store.address}`, false));
    }
  }

  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }
  inFlight(): number {
    return this.#cap.inFlight;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
