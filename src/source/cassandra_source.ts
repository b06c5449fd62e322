/**
 * Cassandra as a Source: one prepared `SELECT label, data … WHERE id = ?` per sample, the
 * label travelling with the bytes. The driver multiplexes many requests per connection and
 * balances over connections and hosts (its pooling and policies are configured through the
 * address and `driver` options, not reimplemented); this only caps what is in flight.
 */
import { CassetteError } from "../errors.ts";
import { tables } from "../dataset/schema.ts";
import type { CassandraStore } from "./cassandra.ts";
import { Capacity, type FetchCallback, type Source } from "./source.ts";

export class CassandraSource implements Source {
  readonly name: string;
  readonly #store: CassandraStore;
  readonly #cql: string;
  readonly #cap: Capacity;
  readonly #dataset: string;

  constructor(store: CassandraStore, dataset: string, maxInFlight = 1024) {
    this.#store = store;
    this.#dataset = dataset;
    this.#cql = `SELECT label, data FROM ${store.keyspace}.${tables(dataset).data} WHERE id = ?`;
    this.#cap = new Capacity(maxInFlight);
    this.name = `${store.address} (${dataset})`;
  }

  fetch(id: string, done: FetchCallback): boolean {
    this.#store.client.execute(this.#cql, [id], { prepare: true }).then(
      (r) => {
        this.#cap.release();
        const row = r.first();
        if (!row) {
          return done(new CassetteError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.#dataset}' in ${this.#store.address}`));
        }
        const d: Uint8Array = row.data;
        const host = r.info?.queriedHost;
        done(null, { id, label: row.label, data: new Uint8Array(d.buffer, d.byteOffset, d.byteLength), conn: host ? String(host) : undefined });
      },
      (err) => {
        this.#cap.release();
        done(err instanceof Error ? err : new Error(String(err)));
      },
    );
    return this.#cap.take();
  }

  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }
  inFlight(): number {
    return this.#cap.inFlight;
  }
  close(): Promise<void> {
    return Promise.resolve(); // the store owns the client
  }
}
