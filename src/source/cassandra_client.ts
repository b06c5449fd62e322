/**
 * Opens a cassandra-driver Client for a `cassandra://` address, with errors that say which
 * host did not answer, and a deadline: a host that accepts TCP but never speaks CQL gives a
 * clear error after `connectTimeoutMs`, not a hang.
 *
 * Bun and Deno run the driver through their Node compatibility. Checked with Bun 1.4.5 and
 * Deno 2.9.5 against Cassandra 5.0.8 (test/source/cassandra.test.ts): connect, schema,
 * prepared writes and reads of blobs work with no workaround. The old Bun failures
 * (oven-sh/bun#4033, #4815: NoHostAvailableError) came from protocol negotiation; capping the
 * protocol at v4 (the driver's PR #416) stays available as `maxProtocolVersion`.
 */
import cassandra from "cassandra-driver";
import { CassetteError } from "../errors.ts";
import { parseStoreAddress } from "./address.ts";

export interface CassandraOptions {
  /**
   * cassandra-driver client options, merged over cassette's (pooling, policies, socket options
   * …): the driver's own settings are passed through, not reimplemented.
   */
  driver?: Partial<cassandra.ClientOptions>;
  /** Give up connecting after this long (default 10 s). */
  connectTimeoutMs?: number;
  /** Cap the native protocol version (e.g. 4); default: negotiate. */
  maxProtocolVersion?: number;
  /** Connect without setting the keyspace (to create it). */
  withoutKeyspace?: boolean;
}

/** local_quorum → localQuorum: the driver's names for the levels an address spells in snake case. */
function snakeToCamel(level: string): keyof typeof cassandra.types.consistencies {
  return level.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) as keyof typeof cassandra.types.consistencies;
}

/**
 * The driver's Client with `options`: the options it runs with (ours over its defaults), which
 * client.js sets in its constructor and index.d.ts leaves out.
 */
export type CassandraClient = cassandra.Client & { readonly options: cassandra.ClientOptions };

/**
 * Connections per local host when the address does not say (`connections=N`): two to start,
 * so that a connection on a congested route has a neighbour to take its share (the 2025
 * paper, §3.3), and more, up to the max, while a source's requests wait for a free slot
 * (src/source/cassandra_source.ts): what is in flight grows with latency × rate through the
 * loader's window, and the connections follow it.
 */
export const ADAPTIVE_CONNECTIONS = { start: 2, max: 8 } as const;
const adaptive = new WeakSet<cassandra.Client>();
/** Whether this client's connections per host were left to cassette (no `connections=` nor driver pooling). */
export function adaptsConnections(client: cassandra.Client): boolean {
  return adaptive.has(client);
}
export const cassandraTypes = cassandra.types;

export async function openCassandra(address: string, options: CassandraOptions = {}): Promise<CassandraClient> {
  const a = parseStoreAddress(address);
  if (a.kind !== "cassandra") {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot open '${address}' as Cassandra: it is a ${a.kind} address`);
  }
  const timeout = options.connectTimeoutMs ?? 10_000;
  // Credentials: from the address, else from the environment (so they need not be typed).
  const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
  const username = a.username ?? env.CASSETTE_CASSANDRA_USER;
  const password = a.password ?? env.CASSETTE_CASSANDRA_PASSWORD ?? "";
  const d = options.driver ?? {};
  const client = new cassandra.Client({
    ...d,
    contactPoints: a.hosts,
    localDataCenter: a.dc,
    keyspace: options.withoutKeyspace ? undefined : a.keyspace,
    protocolOptions: { port: a.port, maxVersion: options.maxProtocolVersion, ...d.protocolOptions },
    socketOptions: { connectTimeout: timeout, readTimeout: 30_000, ...d.socketOptions },
    credentials: d.credentials ?? (username ? { username, password } : undefined),
    sslOptions: d.sslOptions ?? (a.tls ? {} : undefined),
    // A statement is prepared on the node that runs it, and on another node when it first
    // answers "unprepared": preparing on every node first (the driver's default) waits for all
    // of them, so one frozen node held every new client's first read for the 30 s read timeout.
    prepareOnAllHosts: d.prepareOnAllHosts ?? false,
    // The address's consistency (default LOCAL_ONE: a read needs one replica of the local DC).
    queryOptions: { consistency: cassandra.types.consistencies[snakeToCamel(a.consistency)], ...d.queryOptions },
    pooling: {
      heartBeatInterval: 10_000,
      coreConnectionsPerHost: { [cassandra.types.distance.local]: a.connections ?? ADAPTIVE_CONNECTIONS.start, [cassandra.types.distance.remote]: 1 },
      ...(a.requests ? { maxRequestsPerConnection: a.requests } : {}),
      ...d.pooling,
    },
  }) as CassandraClient;
  if (!a.connections && !d.pooling?.coreConnectionsPerHost) adaptive.add(client);
  const where = `${a.hosts.join(",")}:${a.port}`;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new CassetteError("ERR_STORE_UNREACHABLE", `Cannot connect to Cassandra at ${where} as it did not answer CQL within ${timeout} ms`)),
          timeout + 1000, // the driver's own timeout usually fires first, with its detail
        );
      }),
    ]);
    return client;
  } catch (cause) {
    await client.shutdown().catch(() => {});
    if (cause instanceof CassetteError) throw cause;
    const e = cause as Error & { innerErrors?: Record<string, Error> };
    const detail = e.innerErrors ? Object.entries(e.innerErrors).map(([h, err]) => `${h}: ${err.message}`).join("; ") : e.message;
    const keyspaceMissing = /keyspace/i.test(detail) && !options.withoutKeyspace;
    const auth = /auth|credential|password|username/i.test(detail);
    if (auth) {
      throw new CassetteError(
        "ERR_STORE",
        `Cannot log in to Cassandra at ${where} as ${username ? `user '${username}'` : "no user"}: ${detail} ` +
          "(credentials come from the address, or CASSETTE_CASSANDRA_USER and CASSETTE_CASSANDRA_PASSWORD)",
        { cause },
      );
    }
    throw new CassetteError(
      keyspaceMissing ? "ERR_STORE" : "ERR_STORE_UNREACHABLE",
      keyspaceMissing
        ? `Cannot use keyspace '${a.keyspace}' at ${where}: ${detail}`
        : `Cannot connect to Cassandra at ${where} (datacenter '${a.dc}'): ${detail}. Is it running? (cassette cassandra status)`,
      { cause },
    );
  } finally {
    clearTimeout(timer);
  }
}
