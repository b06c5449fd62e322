/**
 * Cassandra as a Source: one prepared `SELECT label, data … WHERE id = ?` per sample, the
 * label travelling with the bytes. The driver multiplexes many requests per connection and
 * balances over hosts (its pooling and policies are configured through the address and
 * `driver` options, not reimplemented); this caps what is in flight and, by default, chooses
 * the connection each request goes out on by its measured rate (see `balance`).
 */
import { CassetteError } from "../errors.ts";
import { tables } from "../dataset/schema.ts";
import type { CassandraStore } from "./cassandra.ts";
import { Capacity, type FetchCallback, type Source } from "./source.ts";
import { storeError } from "./retryable.ts";
import { type Lane, RateChooser } from "./connection_choice.ts";

export interface CassandraSourceOptions {
  /**
   * How requests are spread over one host's connections.
   * - "rate" (default): to the connection where a new request should finish first, (in flight
   *   + 1) / measured completion rate, so a congested connection holds requests in proportion
   *   to what it delivers instead of a fair share of the window (NOTE [ Connection choice ]
   *   in src/source/connection_choice.ts).
   * - "driver": the driver's own choice, the less loaded of two round-robin neighbours by
   *   in-flight count alone.
   */
  balance?: "rate" | "driver";
}

const BALANCED = Symbol("cassette.balanced");
/** A host of cassandra-driver 4.10, as far as the connection choice needs it. */
interface DriverHost {
  pool?: { connections: Lane[]; options: { pooling: { maxRequestsPerConnection: number } } };
  borrowConnection(previous?: Lane): Lane;
  [BALANCED]?: true;
}

/**
 * Replaces a driver host's borrowConnection — the one call the request path makes
 * (lib/request-execution.js `_host.borrowConnection`) — by a RateChooser (NOTE [ Connection
 * choice ] in src/source/connection_choice.ts). Per host, so it applies to every request of
 * that client; idempotent.
 */
function balanceByRate(host: DriverHost): void {
  if (host[BALANCED] || !host.pool) return;
  host[BALANCED] = true;
  const pool = host.pool;
  const original = host.borrowConnection.bind(host);
  const chooser = new RateChooser(() => performance.now());
  host.borrowConnection = (previous?: Lane) =>
    chooser.pick(pool.connections, pool.options.pooling.maxRequestsPerConnection, previous) ?? original(previous); // none: the driver throws BusyConnectionError
}

export class CassandraSource implements Source {
  readonly name: string;
  readonly #store: CassandraStore;
  readonly #cql: string;
  readonly #cap: Capacity;
  readonly #dataset: string;
  readonly #balance: "rate" | "driver";
  #balancedHosts = 0;

  constructor(store: CassandraStore, dataset: string, maxInFlight?: number, options: CassandraSourceOptions = {}) {
    this.#store = store;
    this.#dataset = dataset;
    this.#balance = options.balance ?? "rate";
    if (this.#balance !== "rate" && this.#balance !== "driver") {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot read from Cassandra as 'balance' must be "rate" or "driver": current value is ${this.#balance}`);
    }
    this.#cql = `SELECT label, data FROM ${store.keyspace}.${tables(dataset).data} WHERE id = ?`;
    // More in flight than the pool's connections accept makes the driver fail requests with
    // BusyConnectionError: cap at connections × requests per connection × hosts.
    const pooling = store.client.options.pooling ?? {};
    const perConn = pooling.maxRequestsPerConnection ?? 2048;
    const conns = (pooling.coreConnectionsPerHost as Record<number, number> | undefined)?.[0] ?? 1; // 0: distance.local
    const hosts = Math.max(1, store.client.hosts?.length ?? 1);
    this.#cap = new Capacity(Math.min(maxInFlight ?? Infinity, perConn * conns * hosts));
    this.name = `${store.address} (${dataset})`;
    this.#balanceHosts(); // now, so that requests sent on the same client without this source are balanced too
  }

  /** Patches hosts the client has learned since the last call (NOTE [ Connection choice ]). */
  #balanceHosts(): void {
    const hosts = this.#store.client.hosts;
    if (this.#balance !== "rate" || !hosts || hosts.length === this.#balancedHosts) return;
    for (const h of hosts.values() as Iterable<unknown>) balanceByRate(h as DriverHost);
    this.#balancedHosts = hosts.length;
  }

  fetch(id: string, done: FetchCallback): boolean {
    this.#balanceHosts();
    this.#store.client.execute(this.#cql, [id], { prepare: true }).then(
      (r) => {
        this.#cap.release();
        const row = r.first();
        if (!row) {
          // Final: a missing row stays missing, asking again cannot help.
          return done(storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.#dataset}' in ${this.#store.address}`, false));
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

  /** The key `id` was ingested from (metadata_by_uuid), for an error that names the sample (src/read/decode_source.ts). */
  async keyOf(id: string): Promise<string | undefined> {
    const r = await this.#store.client.execute(`SELECT key FROM ${this.#store.keyspace}.${tables(this.#dataset).byUuid} WHERE id = ?`, [id], { prepare: true });
    const key = r.first()?.key;
    return typeof key === "string" ? key : undefined;
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
