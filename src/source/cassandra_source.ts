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

  constructor(store: CassandraStore, dataset: string, maxInFlight?: number) {
    this.#store = store;
    this.#dataset = dataset;
    this.#cql = `SELECT label, data FROM ${store.keyspace}.${tables(dataset).data} WHERE id = ?`;
    // More in flight than the pool's connections accept makes the driver fail requests with
    // BusyConnectionError: cap at connections × requests per connection × hosts.
    const pooling = store.client.options.pooling ?? {};
    const perConn = pooling.maxRequestsPerConnection ?? 2048;
    const conns = (pooling.coreConnectionsPerHost as Record<number, number> | undefined)?.[0] ?? 1; // 0: distance.local
    const hosts = Math.max(1, store.client.hosts?.length ?? 1);
    this.#cap = new Capacity(Math.min(maxInFlight ?? Infinity, perConn * conns * hosts));
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
  /** Requests this source allows in flight. */
  get capacity(): number {
    return this.#cap.max;
  }
  close(): Promise<void> {
    return Promise.resolve(); // the store owns the client
  }
}
