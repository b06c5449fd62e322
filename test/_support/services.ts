/** The services test/run.ts starts for the suite, and how a test reaches them. */
import { runtime } from "../../runtime-adapters/index.ts";

/**
 * The test Cassandra's address with `keyspace`, or undefined when the suite runs without it
 * (`--no-cassandra`). Each runtime gets its own keyspace, as runtimes run side by side.
 */
export function testCassandra(keyspace: string): string | undefined {
  const base = runtime.env("CASSETTE_TEST_CASSANDRA");
  if (!base) return undefined;
  return base.replace(/\/[^/?]*(\?|$)/, `/${keyspace}_${runtime.name}$1`);
}

export const NO_CASSANDRA = runtime.env("CASSETTE_TEST_CASSANDRA") ? false : "Cassandra not started (test/run.ts --no-cassandra)";

/** The three-node cluster test/run.ts starts for test/cluster/*.test.ts, and how to reach it. */
export interface TestCluster {
  /** The nodes' addresses, node N at hosts[N - 1] (127.0.0.N). */
  hosts: string[];
  /** Their CQL port (the same on every node). */
  port: number;
  /** A cassandra:// address of every node with `keyspace` (per runtime, as for testCassandra). */
  address(keyspace: string): string;
  /** The environment under which `cassette cassandra` acts on this cluster (run folder, ports). */
  env: Record<string, string>;
}

/**
 * The test cluster, or undefined when the run has none (see NO_CLUSTER for why). test/run.ts
 * starts it only when a selected file is under test/cluster/, and sets CASSETTE_TEST_CLUSTER
 * to {"hosts", "port", "storagePort", "run"}.
 */
export function testCluster(): TestCluster | undefined {
  const text = runtime.env("CASSETTE_TEST_CLUSTER");
  if (!text) return undefined;
  const c = JSON.parse(text) as { hosts: string[]; port: number; storagePort: number; run: string };
  return {
    hosts: c.hosts,
    port: c.port,
    address: (keyspace) => `cassandra://${c.hosts.join(",")}:${c.port}/${keyspace}_${runtime.name}`,
    // Logins off, as test/run.ts starts the cluster: a test process inherits the single node's
    // PasswordAuthenticator, and a node restarted with it would come back wanting a login.
    env: {
      CASSETTE_CASSANDRA_RUN: c.run, CASSETTE_CQL_PORT: String(c.port), CASSETTE_STORAGE_PORT: String(c.storagePort),
      CASSETTE_CASSANDRA_AUTH: "AllowAllAuthenticator",
    },
  };
}

export const NO_CLUSTER = runtime.env("CASSETTE_TEST_CLUSTER")
  ? false
  : runtime.env("CASSETTE_CLUSTER") === "0"
  ? "the three-node cluster is off (CASSETTE_CLUSTER=0)"
  : "the three-node cluster was not started (test/run.ts starts it for test/cluster/ files, not with --no-cassandra)";

/** The node test/run.ts starts for test/secure/*.test.ts: mutual TLS and logins required. */
export interface TestSecure {
  host: string;
  port: number;
  /** PEM files its run folder holds: the CA that signed its certificate, a client certificate and key the CA signed. */
  ca: string;
  cert: string;
  key: string;
  /** Its superuser (the default one of a node with PasswordAuthenticator). */
  user: string;
  password: string;
  /**
   * A cassandra:// address of the node with `keyspace` (per runtime, as for testCassandra), as
   * `user` (the superuser unless given), with the CA and the client certificate unless `query`
   * replaces them ("" for none).
   */
  address(keyspace: string, as?: { user: string; password: string }, query?: string): string;
}

/**
 * The secure node, or undefined when the run has none (see NO_SECURE for why). test/run.ts
 * starts it only when a selected file is under test/secure/, and sets CASSETTE_TEST_SECURE to
 * {"host", "port", "run", "ca", "cert", "key", "user", "password"}.
 */
export function testSecure(): TestSecure | undefined {
  const text = runtime.env("CASSETTE_TEST_SECURE");
  if (!text) return undefined;
  const s = JSON.parse(text) as Omit<TestSecure, "address">;
  return {
    ...s,
    address: (keyspace, as = s, query = `ca=${s.ca}&cert=${s.cert}&key=${s.key}`) =>
      `cassandra://${encodeURIComponent(as.user)}:${encodeURIComponent(as.password)}@${s.host}:${s.port}/${keyspace}_${runtime.name}${query ? `?${query}` : ""}`,
  };
}

export const NO_SECURE = runtime.env("CASSETTE_TEST_SECURE")
  ? false
  : runtime.env("CASSETTE_SECURE") === "0"
  ? "the node with TLS and logins is off (CASSETTE_SECURE=0)"
  : "the node with TLS and logins was not started (test/run.ts starts it for test/secure/ files, not with --no-cassandra)";
