/**
 * Does every connection of cassandra-driver go through the proxies? Against a running cluster,
 * this finds its nodes (system.local + system.peers), puts a proxy in front of each, connects
 * through the first proxy without and then with the address translator, and prints where the
 * driver's connections went.
 *
 *   bun tools/proxy/route_check.ts [cassandra://HOST[:PORT]/ks]   (default cassandra://127.0.0.1:9042/system)
 *
 * README.md beside this file has the results on a 2-node cluster.
 */
import cassandra from "cassandra-driver";
import { runtime } from "../../runtime-adapters/index.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import { startCassandraProxies } from "./cassandra.ts";
import { uniform } from "./proxy.ts";
import { parseArgs, usageError } from "../../src/cli/args.ts";
import { CassetteError } from "../../src/errors.ts";

const PROGRAM = "tools/proxy/route_check.ts";
const address = clusterAddress();

/** The argument, read by the cassette command's parser; a bad one ends the run as it ends a cassette command. */
function clusterAddress(): string {
  try {
    const { positional, options } = parseArgs(runtime.args(), "", [], [], PROGRAM);
    if (options.has("help")) {
      console.log("usage: bun tools/proxy/route_check.ts [cassandra://HOST[:PORT]/ks]   (default cassandra://127.0.0.1:9042/system)");
      runtime.exit(0);
    }
    if (positional.length > 1) usageError("", `takes one address: got also '${positional[1]}'`, PROGRAM);
    return positional[0] ?? "cassandra://127.0.0.1:9042/system";
  } catch (e) {
    if (!(e instanceof CassetteError)) throw e;
    console.error(`${PROGRAM}: ${e.message} [${e.code}]`);
    return runtime.exit(2);
  }
}
const a = parseStoreAddress(address);
if (a.kind !== "cassandra") throw new Error(`not a cassandra:// address: ${address}`);
const credentials = a.username ? { username: a.username, password: a.password ?? "" } : undefined;
const pooling = { coreConnectionsPerHost: { [cassandra.types.distance.local]: 2, [cassandra.types.distance.remote]: 1 } };

// The nodes, as the driver learns them (system.local and system.peers of its control connection).
const direct = new cassandra.Client({ contactPoints: a.hosts, protocolOptions: { port: a.port }, localDataCenter: a.dc, credentials });
await direct.connect();
const nodes = direct.hosts.values().map((h) => h.address);
await direct.shutdown();
console.log(`nodes: ${nodes.join(", ")}`);

const route = await startCassandraProxies({ nodes, profile: uniform(5) });
console.log(`proxies: ${route.contactPoints.join(", ")}`);
// Peers are dialled at rpc_address + protocolOptions.port: the nodes' port (the driver's
// default, 9042) or the proxy's (what a cassandra:// address with the proxy's port sets).
const cases = [
  { name: "without the translator, protocolOptions.port = the nodes' port", port: a.port, translate: false },
  { name: "without the translator, protocolOptions.port = the first proxy's port", port: route.proxies[0].port, translate: false },
  { name: "with the translator", port: a.port, translate: true },
];
for (const { name, port, translate } of cases) {
  const before = Object.values(route.stats()).map((s) => s.open);
  const client = new cassandra.Client({
    contactPoints: [route.contactPoints[0]],
    protocolOptions: { port },
    localDataCenter: a.dc,
    credentials,
    pooling,
    ...(translate ? { policies: { addressResolution: route.translator } } : {}),
  });
  await client.connect();
  await Promise.all(Array.from({ length: 40 }, () => client.execute("SELECT now() FROM system.local")));
  await new Promise((r) => setTimeout(r, 1500)); // pools to every node fill in the background
  const state = client.getState();
  const hosts = state.getConnectedHosts().map((h) => `${h.address} (${state.getOpenConnections(h)} open)`);
  const viaProxies = Object.values(route.stats()).map((s, i) => s.open - before[i]);
  const driverOpen = state.getConnectedHosts().reduce((s, h) => s + state.getOpenConnections(h), 0);
  const known = client.hosts.values().map((h) => `${h.address} (${h.isUp() ? "up" : "down"})`);
  console.log(`\n${name}:`);
  console.log(`  hosts the driver knows: ${known.join(", ")}`);
  console.log(`  hosts it is connected to: ${hosts.join(", ")}`);
  console.log(`  open through each proxy: ${viaProxies.join(", ")} (of ${driverOpen} the driver holds)`);
  await client.shutdown();
}
await route.close();
runtime.exit(0);
