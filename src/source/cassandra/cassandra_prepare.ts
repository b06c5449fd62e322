/**
 * NOTE [ Racing a statement's preparation ]
 *
 * Every prepared statement is prepared once per client before its first execution, and every
 * request for it waits for that. cassandra-driver 4.10 (lib/prepare-handler.js) prepares on one
 * node of its plan at a time and moves on only after an error: a node that accepts bytes and
 * never answers (frozen by SIGSTOP, a stalled route) holds the preparation, and so every read of
 * a new client, for the whole read timeout (30 s here). test/cluster/replicas.test.ts saw it.
 *
 * `racePreparation(client)` keeps the driver's cache and its waiting (a statement being prepared
 * is an entry with `preparing` set; requests wait for its 'prepared' event) and changes who
 * answers: the first node of a rotating order is asked, and another one each `staggerMs`
 * without an answer, or at once when one fails for a reason another node could avoid (socket
 * error, timeout, busy); the first answer wins. A refusal any node would repeat (a syntax
 * error, a missing table, a permission) fails at once, as with the driver. Preparing on two
 * nodes costs them a cache entry each: the driver's own prepareOnAllHosts does it on all.
 */
import cassandra from "cassandra-driver";
import type { CassandraClient } from "./cassandra_client.ts";

/** A prepared statement's entry in the driver's cache (lib/metadata/index.js getPreparedInfo). */
interface PreparedInfo {
  queryId?: unknown;
  meta?: unknown;
  preparing?: boolean;
  emit(event: "prepared", err: Error | null, info?: PreparedInfo): boolean;
  once(event: "prepared", listener: () => void): unknown;
}
interface PreparedResponse {
  id: unknown;
  meta: unknown;
}
interface DriverConnection {
  keyspace?: string;
  changeKeyspace(keyspace: string): Promise<void>;
  prepareOnceAsync(query: string, keyspace?: string): Promise<PreparedResponse>;
}
interface DriverHost {
  address: string;
  isUp(): boolean;
  borrowConnection(): DriverConnection;
}
interface DriverMetadata {
  getPreparedInfo(keyspace: string | undefined, query: string): PreparedInfo;
  setPreparedById(info: PreparedInfo): void;
}

const RACED = Symbol("cassette.racedPreparation");
const errors = cassandra.errors as unknown as {
  OperationTimedOutError: new (...a: never[]) => Error;
  BusyConnectionError: new (...a: never[]) => Error;
  NoHostAvailableError: new (innerErrors: Record<string, unknown>, message?: string) => Error;
};

/** Whether another node might prepare what this one failed to (the driver's own test, plus a busy connection). */
function anotherMayAnswer(err: unknown): boolean {
  return (err as { isSocketError?: boolean })?.isSocketError === true || err instanceof errors.OperationTimedOutError ||
    err instanceof errors.BusyConnectionError;
}

/** Prepares this client's statements on the first node to answer (NOTE above). Idempotent. */
export function racePreparation(client: CassandraClient, staggerMs = 500): void {
  const c = client as CassandraClient & { [RACED]?: true };
  if (c[RACED]) return;
  c[RACED] = true;
  const metadata = client.metadata as unknown as DriverMetadata;
  const original = metadata.getPreparedInfo.bind(metadata);
  let turn = 0;
  metadata.getPreparedInfo = (keyspace, query) => {
    const info = original(keyspace, query);
    if (!info.queryId && !info.preparing) {
      info.preparing = true; // now, before the driver looks: it then waits for 'prepared'
      const hosts = [...(client.hosts.values() as Iterable<unknown>)] as DriverHost[];
      const start = turn++ % Math.max(1, hosts.length);
      const order = [...hosts.slice(start), ...hosts.slice(0, start)].filter((h) => h.isUp());
      firstAnswer(order, keyspace, query, staggerMs).then(
        (r) => {
          info.preparing = false;
          info.queryId = r.id;
          info.meta = r.meta;
          metadata.setPreparedById(info);
          info.emit("prepared", null, info);
        },
        (err: Error) => {
          info.preparing = false; // the next request tries again
          info.emit("prepared", err);
        },
      );
    }
    return info;
  };
}

/**
 * Starts preparing `query` now, as its first execution would, so that the first reads do not
 * wait a round trip for it: a source made while the ids are still being listed has its
 * statement ready when the first request leaves (at 150 ms, the first batch came 150 ms sooner).
 * Resolves once prepared or failed, never rejects: a failure is left to the first execution,
 * which prepares again and reports it where the read is.
 */
export function prepareAhead(client: CassandraClient, query: string): Promise<void> {
  racePreparation(client);
  const metadata = client.metadata as unknown as DriverMetadata;
  // The key the driver's execute uses: the connection's keyspace (client.js, prepared branch).
  const info = metadata.getPreparedInfo((client as unknown as { keyspace?: string }).keyspace, query);
  if (info.queryId || !info.preparing) return Promise.resolve();
  return new Promise((resolve) => info.once("prepared", () => resolve()));
}

function firstAnswer(hosts: DriverHost[], keyspace: string | undefined, query: string, staggerMs: number): Promise<PreparedResponse> {
  return new Promise((resolve, reject) => {
    const failed: Record<string, unknown> = {};
    let next = 0, pending = 0, settled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
    };
    const askNext = () => {
      clearTimeout(timer);
      if (settled) return;
      if (next >= hosts.length) {
        if (pending === 0) finish(() => reject(new errors.NoHostAvailableError(failed, `Cannot prepare a statement: no node answered (${Object.entries(failed).map(([h, e]) => `${h}: ${(e as Error)?.message ?? e}`).join("; ") || "no node is up"})`)));
        return;
      }
      const host = hosts[next++];
      pending++;
      timer = setTimeout(askNext, staggerMs);
      let sent = false; // a failure before the statement left (no connection open yet) is this node's alone
      (async () => {
        const connection = host.borrowConnection();
        if (keyspace && connection.keyspace !== keyspace) await connection.changeKeyspace(keyspace);
        sent = true;
        return await connection.prepareOnceAsync(query, keyspace);
      })().then(
        (r) => finish(() => resolve(r)),
        (err) => {
          pending--;
          failed[host.address] = err;
          if (sent && !anotherMayAnswer(err)) return finish(() => reject(err));
          askNext();
        },
      );
    };
    askNext();
  });
}
