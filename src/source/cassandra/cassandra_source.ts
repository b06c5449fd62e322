/**
 * Cassandra as a Source: one prepared `SELECT label, data … WHERE id = ?` per sample, the
 * label travelling with the bytes. The driver multiplexes many requests per connection and
 * balances over hosts (its pooling and policies are configured through the address and
 * `driver` options, not reimplemented); this caps what is in flight and, by default, chooses
 * the connection each request goes out on by its measured rate (see `balance`).
 */
import { type LabelSpec, readLabel } from "../../dataset/label.ts";
import { CassetteError } from "../../errors.ts";
import { tables } from "../../dataset/schema.ts";
import type { CassandraStore } from "./cassandra.ts";
import { Capacity, type FetchCallback, type Source } from "../source.ts";
import { storeError } from "../retryable.ts";
import { prepareAhead } from "./cassandra_prepare.ts";
import { type Lane, RateChooser } from "./connection_choice.ts";
import { ADAPTIVE_CONNECTIONS, adaptsConnections, cassandraTypes } from "./cassandra_client.ts";

/** How a `cassandra://` read source spreads its requests, and how it reads labels. */
export interface CassandraSourceOptions {
  /**
   * How requests are spread over one host's connections.
   * - "rate" (default): to the connection where a new request should finish first, (in flight
   *   + 1) / measured completion rate, so a congested connection holds requests in proportion
   *   to what it delivers instead of a fair share of the window (NOTE [ Connection choice ]
   *   in src/source/cassandra/connection_choice.ts).
   * - "driver": the driver's own choice, the less loaded of two round-robin neighbours by
   *   in-flight count alone.
   */
  balance?: "rate" | "driver";
  /** The dataset's label spec (openSource passes the stored one): how a row's label is read. */
  label?: LabelSpec;
}

const BALANCED = Symbol("cassette.balanced");
/** cassandra-driver's distance.local: the hosts a client keeps its core connections to. */
const LOCAL = 0;
/** A host's connection pool in cassandra-driver 4.10 (lib/host-connection-pool.js), as far as cassette uses it. */
interface DriverPool {
  connections: Lane[];
  options: { pooling: { maxRequestsPerConnection: number } };
  /** Connections the pool keeps open; the driver opens one more per increaseSize() below it. */
  coreConnectionsLength: number;
  increaseSize(): void;
  isClosing(): boolean;
  on(event: "open", listener: (err?: Error) => void): void;
}
/** A node as a lane of the replica choice: requests this source has in flight there. */
interface NodeLane extends Lane {
  n: number;
}
/** A host (node) of cassandra-driver 4.10, as far as the connection and replica choices and growth need it. */
interface DriverHost {
  address: string;
  pool?: DriverPool;
  isUp(): boolean;
  borrowConnection(previous?: Lane): Lane;
  [BALANCED]?: true;
}

/**
 * Replaces a driver host's borrowConnection — the one call the request path makes
 * (lib/request-execution.js `_host.borrowConnection`) — by a RateChooser (NOTE [ Connection
 * choice ] in src/source/cassandra/connection_choice.ts). Per host, so it applies to every request of
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

/**
 * The driver's "no host available" as an error that names each node tried and what it said, so
 * that the epoch's error (which adds the sample and the epoch) says where it looked; retryable,
 * as a node may come back. A permission refused is a final ERR_STORE. Other errors pass as they are.
 */
function driverError(err: unknown, hosts: readonly DriverHost[]): Error {
  const e = err as { name?: string; code?: unknown; message?: string; innerErrors?: Record<string, unknown> } | null;
  // Unauthorized (protocol error 0x2100): the role may not read the table. Final, and named so.
  if (e?.code === 0x2100) return storeError("ERR_STORE", `the role may not read it: ${e.message}`, false, { cause: err });
  if (!e?.innerErrors) return err instanceof Error ? err : new Error(String(err));
  const tried = Object.entries(e.innerErrors).map(([node, x]) => `${node}: ${(x as Error)?.message ?? String(x)}`);
  // Nothing tried: every node was already marked down; say which nodes those are.
  const where = tried.length ? `tried ${tried.join("; ")}` : `every node is down: ${hosts.map((h) => `${h.address}${h.isUp() ? "" : " (down)"}`).join(", ") || "none known"}`;
  return storeError("ERR_STORE_UNREACHABLE", `no node answered (${where})`, true, { cause: err });
}

export class CassandraSource implements Source {
  readonly name: string;
  readonly #store: CassandraStore;
  readonly #cql: string;
  readonly #cap: Capacity;
  /** The dataset it reads. */
  readonly dataset: string;
  readonly #dataset: string;
  readonly #balance: "rate" | "driver";
  #balancedHosts = 0;
  readonly #perConnection: number;
  readonly #maxInFlight: number;
  /** Whether connections grow with demand (ADAPTIVE_CONNECTIONS). */
  readonly #grows: boolean;
  readonly #watched = new WeakSet<DriverPool>();
  readonly #keyspace: string;
  /** Per node: requests this source has in flight there, as a lane of the node chooser. */
  readonly #nodeLanes = new Map<DriverHost, NodeLane>();
  readonly #nodeChooser = new RateChooser(() => performance.now());
  /** The node each id in flight was first sent to: a second request avoids it. */
  readonly #firstHost = new Map<string, DriverHost>();
  /** The dataset's label spec, where it is not one integer a row. */
  readonly #label?: LabelSpec;

  constructor(store: CassandraStore, dataset: string, maxInFlight?: number, options: CassandraSourceOptions = {}) {
    this.#store = store;
    this.#dataset = this.dataset = dataset;
    this.#balance = options.balance ?? "rate";
    if (this.#balance !== "rate" && this.#balance !== "driver") {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot read from Cassandra as 'balance' must be "rate" or "driver": current value is ${this.#balance}`);
    }
    this.#cql = `SELECT label, data FROM ${store.keyspace}.${tables(dataset).data} WHERE id = ?`;
    this.#label = options.label;
    this.#keyspace = store.keyspace.toLowerCase(); // unquoted in CQL, so the metadata has it folded
    // More in flight than the pool's connections accept makes the driver fail requests with
    // BusyConnectionError: cap at connections × requests per connection × hosts.
    const pooling = store.client.options.pooling ?? {};
    this.#perConnection = pooling.maxRequestsPerConnection ?? 2048;
    const conns = (pooling.coreConnectionsPerHost as Record<number, number> | undefined)?.[LOCAL] ?? 1;
    const hosts = Math.max(1, store.client.hosts?.length ?? 1);
    this.#maxInFlight = maxInFlight ?? Infinity;
    this.#cap = new Capacity(Math.min(this.#maxInFlight, this.#perConnection * conns * hosts));
    this.#grows = adaptsConnections(store.client);
    this.name = `${store.address} (${dataset})`;
    this.#balanceHosts(); // now, so that requests sent on the same client without this source are balanced too
    const asked = performance.now();
    this.prepared = prepareAhead(store.client, this.#cql);
    // A far store: open its connections now, while the caller lists ids (ADAPTIVE_CONNECTIONS.far).
    if (this.#grows) {
      this.prepared.then(() => performance.now() - asked >= ADAPTIVE_CONNECTIONS.farMs && this.#grow(ADAPTIVE_CONNECTIONS.far), () => {});
    }
  }

  /** Resolves once the read statement is prepared (started at construction; NOTE [ Racing a statement's preparation ]). */
  readonly prepared: Promise<void>;

  #hosts(): DriverHost[] {
    const hosts = this.#store.client.hosts;
    return hosts ? [...(hosts.values() as Iterable<unknown>)] as DriverHost[] : [];
  }

  /**
   * Requests are waiting for a slot: every local host opens one more connection (or, with `to`,
   * as many as make `to`), up to ADAPTIVE_CONNECTIONS.max, and the capacity rises as each one
   * opens (the driver opens a pool's connections one after another, lib/host.js
   * _onNewConnectionOpen). Only for a client whose connections were left to cassette, and one
   * step at a time. The count lives in the client's pooling options, not the pool: the driver
   * resets each pool's count from them on every request (lib/host.js setDistance, called from
   * lib/request-handler.js).
   */
  #grow(to?: number): void {
    const core = this.#store.client.options.pooling?.coreConnectionsPerHost as Record<number, number> | undefined;
    const local = core?.[LOCAL] ?? 0;
    const target = Math.min(ADAPTIVE_CONNECTIONS.max, to ?? local + 1);
    if (!core || local >= target) return;
    const pools: DriverPool[] = [];
    for (const h of this.#hosts()) {
      const pool = h.pool;
      if (!pool || pool.isClosing() || !h.isUp() || pool.coreConnectionsLength !== local) continue;
      if (pool.connections.length < local) return; // the last step is still opening
      pools.push(pool);
    }
    if (!pools.length) return;
    core[LOCAL] = target;
    for (const pool of pools) {
      if (!this.#watched.has(pool)) {
        this.#watched.add(pool);
        pool.on("open", (err) => err || this.#cap.raise(Math.min(this.#maxInFlight, this.#perConnection * this.#openConnections())));
      }
      pool.coreConnectionsLength = target;
      pool.increaseSize();
    }
  }

  #openConnections(): number {
    let n = 0;
    for (const h of this.#hosts()) n += h.pool?.connections.length ?? 0;
    return Math.max(1, n);
  }

  /** Connections open to the store's hosts now. */
  get connections(): number {
    return this.#openConnections();
  }

  /** Patches hosts the client has learned since the last call (NOTE [ Connection choice ]). */
  #balanceHosts(): void {
    const hosts = this.#store.client.hosts;
    if (this.#balance !== "rate" || !hosts || hosts.length === this.#balancedHosts) return;
    for (const h of this.#hosts()) balanceByRate(h);
    this.#balancedHosts = hosts.length;
  }

  fetch(id: string, done: FetchCallback): boolean {
    this.#balanceHosts();
    const host = this.#replica(id);
    const nodeLane = host && this.#nodeLane(host);
    if (nodeLane) nodeLane.n++;
    if (host && !this.#firstHost.has(id)) this.#firstHost.set(id, host);
    this.#store.client.execute(this.#cql, [id], host ? { prepare: true, host: host as never } : { prepare: true }).then(
      (r) => {
        this.#answered(id, host, nodeLane);
        this.#cap.release();
        const row = r.first();
        if (!row) {
          // Final: a missing row stays missing, asking again cannot help.
          return done(storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.#dataset}' in ${this.#store.address}`, false));
        }
        const d: Uint8Array = row.data;
        const queried = r.info?.queriedHost;
        const data = new Uint8Array(d.buffer, d.byteOffset, d.byteLength), conn = queried ? String(queried) : undefined;
        if (!this.#label || this.#label.kind === "int") return done(null, { id, label: row.label, data, conn });
        let label;
        try {
          label = readLabel(this.#label, row.label, `sample ${id} of '${this.#dataset}' in ${this.#store.address}`);
        } catch (e) {
          return done(e as Error);
        }
        done(null, { id, data, conn, ...label });
      },
      (err) => {
        this.#answered(id, host, nodeLane);
        this.#cap.release();
        done(driverError(err, this.#hosts()));
      },
    );
    const more = this.#cap.take();
    if (!more && this.#grows && this.#cap.max < this.#maxInFlight) this.#grow();
    return more;
  }

  /**
   * The node a request for `id` goes to: one of the replicas of its partition that is up (the
   * driver's token map), chosen by the RateChooser as connections are (NOTE [ Connection
   * choice ]), with nodes as the lanes. A second request for an id still in flight (a hedge, the
   * epoch tail's re-ask) goes to another replica than the first when there is one. Undefined:
   * the token map does not know the keyspace yet, or no replica is up with a connection open; the driver's own plan
   * (token-aware, then any node) then decides.
   */
  #replica(id: string): DriverHost | undefined {
    if ((this.#store.client.hosts?.length ?? 0) < 2) return undefined; // one node: nothing to choose, no cost per request
    const meta = this.#store.client.metadata as unknown as { getReplicas(ks: string, key: Uint8Array): DriverHost[] | null } | undefined;
    let replicas: DriverHost[] | null | undefined;
    try {
      replicas = meta?.getReplicas(this.#keyspace, cassandraTypes.Uuid.fromString(id).getBuffer());
    } catch {
      return undefined; // not a uuid: the driver's own error comes with the request
    }
    if (!replicas?.length) return undefined;
    // Up, with a connection open: a node whose connections are still opening (or cannot open,
    // as to a frozen node) would fail the request at once with "no connection available".
    const up = replicas.filter((h) => h.isUp() && (h.pool?.connections.length ?? 0) > 0);
    if (!up.length) return undefined;
    if (up.length === 1) return up[0];
    const first = this.#firstHost.get(id);
    const lanes = up.map((h) => this.#nodeLane(h));
    const lane = this.#nodeChooser.pick(lanes, Infinity, first && this.#nodeLane(first));
    return lane ? up[lanes.indexOf(lane as NodeLane)] : up[0];
  }

  #nodeLane(host: DriverHost): NodeLane {
    let lane = this.#nodeLanes.get(host);
    if (!lane) {
      const l: NodeLane = { n: 0, getInFlight: () => l.n };
      this.#nodeLanes.set(host, (lane = l));
    }
    return lane;
  }

  #answered(id: string, host: DriverHost | undefined, lane: NodeLane | undefined): void {
    if (lane) lane.n--;
    if (host && this.#firstHost.get(id) === host) this.#firstHost.delete(id);
  }

  /** The key `id` was ingested from (metadata_by_uuid), for an error that names the sample (src/read/decode_source.ts). */
  async keyOf(id: string): Promise<string | undefined> {
    const r = await this.#store.client.execute(`SELECT key FROM ${this.#store.keyspace}.${tables(this.#dataset).byUuid} WHERE id = ?`, [id], { prepare: true, isIdempotent: true });
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
