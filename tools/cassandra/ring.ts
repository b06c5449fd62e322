/**
 * The CQL checks cassandra.sh needs for a cluster of local nodes (run with the repository's bun):
 *
 *   bun tools/cassandra/ring.ts joined HOST PORT OTHER,…   wait until every OTHER node sees HOST
 *                                                          at its current gossip generation, NORMAL,
 *                                                          and the peers tables list them both ways
 *   bun tools/cassandra/ring.ts info HOST PORT             {"hostId","generation"} of HOST
 *
 * A node that answers CQL has finished its own start-up, but another node may still hold the
 * node's previous life (a restart) or not have heard of it yet (a join). Each restart raises a
 * node's gossip generation, and system_views.gossip_info on another node shows the generation it
 * last heard from it: equal to the node's own (system.local) means that node sees the new life.
 * Queries go to one host each (an allowlist policy): which node answers is the point.
 * `joined` gives up after CASSETTE_CASSANDRA_TIMEOUT seconds (default 180), exit status 1.
 */
import cassandra from "cassandra-driver";
import process from "node:process";

const [verb, host, portText, others = ""] = process.argv.slice(2);
const port = Number(portText);
if (!["joined", "info"].includes(verb) || !host || !Number.isInteger(port)) {
  console.error("usage: ring.ts joined HOST PORT OTHER,… | info HOST PORT");
  process.exit(2);
}
// The nodes' logins when they run with PasswordAuthenticator (as test/run.ts starts node 1).
const user = process.env.CASSETTE_CASSANDRA_USER ??
  ((process.env.CASSETTE_CASSANDRA_AUTH ?? "AllowAllAuthenticator") !== "AllowAllAuthenticator" ? "cassandra" : undefined);
const credentials = user ? { username: user, password: process.env.CASSETTE_CASSANDRA_PASSWORD ?? "cassandra" } : undefined;

function client(h: string): cassandra.Client {
  const { AllowListPolicy, RoundRobinPolicy } = cassandra.policies.loadBalancing;
  return new cassandra.Client({
    contactPoints: [h],
    localDataCenter: "datacenter1",
    protocolOptions: { port },
    credentials,
    policies: { loadBalancing: new AllowListPolicy(new RoundRobinPolicy(), [`${h}:${port}`]) },
    socketOptions: { connectTimeout: 5000, readTimeout: 10_000 },
    pooling: { coreConnectionsPerHost: { [cassandra.types.distance.local]: 1 } },
  });
}

async function info(h: string): Promise<{ hostId: string; generation: number }> {
  const c = client(h);
  try {
    const row = (await c.execute("SELECT host_id, gossip_generation FROM system.local")).first();
    return { hostId: row.host_id.toString(), generation: row.gossip_generation };
  } finally {
    await c.shutdown();
  }
}

/** The addresses in `c`'s node's peers table: what a driver connected there learns of the cluster. */
async function peersOf(c: cassandra.Client): Promise<string[]> {
  const rows = await c.execute("SELECT peer FROM system.peers_v2").catch(() => c.execute("SELECT peer FROM system.peers"));
  return rows.rows.map((r) => r.peer.toString());
}

/**
 * What `other` knows of `h`: its gossip generation and status there, and whether `h` is in its
 * peers table, or why not. Gossip can say NORMAL before the peers table lists the node, and a
 * driver counts the cluster's nodes from that table (a keyspace made then got RF 2 of 3 nodes).
 */
async function seenBy(other: string, h: string): Promise<{ generation?: number; status?: string; listed?: boolean; error?: string }> {
  const c = client(other);
  try {
    const rows = (await c.execute("SELECT address, generation, status_with_port FROM system_views.gossip_info")).rows;
    const row = rows.find((r) => r.address.toString() === h);
    return row ? { generation: row.generation, status: row.status_with_port, listed: (await peersOf(c)).includes(h) } : {};
  } catch (e) {
    return { error: (e as Error).message };
  } finally {
    await c.shutdown();
  }
}

async function ownPeers(): Promise<{ peers: string[] } | { error: string }> {
  const c = client(host);
  try {
    return { peers: await peersOf(c) };
  } catch (e) {
    return { error: (e as Error).message };
  } finally {
    await c.shutdown();
  }
}

if (verb === "info") {
  console.log(JSON.stringify(await info(host)));
  process.exit(0);
}
const peers = others.split(",").filter(Boolean);
const deadline = Date.now() + Number(process.env.CASSETTE_CASSANDRA_TIMEOUT ?? 180) * 1000;
const me = await info(host);
let last = "";
for (;;) {
  const views = await Promise.all(peers.map(async (p) => [p, await seenBy(p, host)] as const));
  const behind = views.filter(([, v]) => v.generation !== me.generation || !/^NORMAL/.test(v.status ?? "") || !v.listed);
  // And the other way: the node's own peers table lists every other one.
  const own = await ownPeers();
  const unlisted = "error" in own ? [] : peers.filter((p) => !own.peers.includes(p));
  if (behind.length === 0 && unlisted.length === 0 && !("error" in own)) break;
  last = [
    ...behind.map(([p, v]) => `${p} ${v.error ?? (v.generation === undefined ? "has not heard of it" : v.listed ? `sees generation ${v.generation}, ${v.status}` : "does not list it in system.peers yet")}`),
    ...("error" in own ? [`${host}: ${own.error}`] : unlisted.map((p) => `${host} does not list ${p} in system.peers yet`)),
  ].join("; ");
  if (Date.now() > deadline) {
    console.error(`cannot see ${host} joined (generation ${me.generation}, host id ${me.hostId}): ${last}`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 500));
}
console.log(JSON.stringify(me));
process.exit(0);
