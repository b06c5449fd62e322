/**
 * cassandra-driver through the latency proxy: every connection the driver opens goes through a
 * proxy (counted there), none goes to the node's rpc_address directly.
 */
import * as assert from "uvu/assert";
import cassandra from "cassandra-driver";
import { test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";
import { openCassandra } from "../../src/source/cassandra/cassandra_client.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import { uniform } from "../../tools/proxy/proxy.ts";
import { proxyAddressTranslator, startCassandraProxies } from "../../tools/proxy/cassandra.ts";
import { eventually, median } from "./_servers.ts";

test("the translator maps each node's rpc_address to its proxy, and the driver accepts it", () => {
  const t = proxyAddressTranslator({ "127.0.0.2": { host: "127.0.0.1", port: 19043 } });
  let got = "";
  t.translate("127.0.0.2", 9042, (e) => (got = e));
  assert.is(got, "127.0.0.1:19043");
  const warn = console.warn;
  console.warn = () => {};
  try {
    t.translate("127.0.0.3", 9042, (e) => (got = e));
  } finally {
    console.warn = warn;
  }
  assert.is(got, "127.0.0.3:9042", "an unknown node keeps the driver's default");
  assert.equal([...t.unmapped], ["127.0.0.3"], "and is reported");
  // The driver checks `instanceof AddressTranslator` when the client is built.
  const client = new cassandra.Client({ contactPoints: ["127.0.0.1:19042"], localDataCenter: "datacenter1", policies: { addressResolution: t } });
  assert.ok(client);
  // A bare object with the right method is refused by the driver: why the class extends its class.
  assert.throws(() => new cassandra.Client({ contactPoints: ["127.0.0.1"], localDataCenter: "dc", policies: { addressResolution: { translate() {} } } }));
});

test("startCassandraProxies refuses nodes it cannot tell apart", async () => {
  for (const [nodes, message] of [
    [[], /'nodes' must list at least one node/],
    [["127.0.0.1:9042", "127.0.0.1:9043"], /two nodes share the address 127\.0\.0\.1/],
    [["127.0.0.1:x"], /must be 'host:port'/],
  ] as const) {
    try {
      await startCassandraProxies({ nodes: nodes as unknown as string[], profile: uniform(0) });
      assert.unreachable("should throw");
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
      assert.match((e as Error).message, message);
    }
  }
});

test("every connection of the driver goes through the proxy, and each query pays its round trip", async () => {
  const a = parseStoreAddress(testCassandra("cassette_proxy")!);
  if (a.kind !== "cassandra") throw new Error("not a Cassandra address");
  const delay = 15;
  const route = await startCassandraProxies({ nodes: a.hosts.map((host) => ({ host, port: a.port })), profile: uniform(delay) });
  const auth = a.username ? `${encodeURIComponent(a.username)}:${encodeURIComponent(a.password ?? "")}@` : "";
  const [first] = route.proxies;
  const client = await openCassandra(`cassandra://${auth}${first.host}:${first.port}/none?dc=${a.dc}&connections=3`, {
    withoutKeyspace: true,
    driver: { policies: { addressResolution: route.translator } },
  });
  try {
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = runtime.now();
      await client.execute("SELECT release_version FROM system.local");
      ms.push(runtime.now() - t0);
    }
    await Promise.all(Array.from({ length: 60 }, () => client.execute("SELECT now() FROM system.local")));
    assert.ok(Math.min(...ms) >= 2 * delay, `each query ≥ ${2 * delay} ms through the proxy: ${ms.map((x) => x.toFixed(1))}`);
    assert.ok(median(ms) < 2 * delay + 100, `median query ${median(ms).toFixed(1)} ms`);

    // The driver knows the nodes only by their proxies' addresses…
    const proxyEndpoints = new Set(route.contactPoints);
    const state = client.getState();
    const hosts = state.getConnectedHosts();
    assert.ok(hosts.length >= 1);
    for (const h of hosts) assert.ok(proxyEndpoints.has(h.address), `host ${h.address} is not a proxy (${route.contactPoints})`);
    assert.equal([...route.translator.unmapped], [], "no node without a proxy");
    // …and every connection it holds is one the proxies hold.
    const driverOpen = hosts.reduce((s, h) => s + state.getOpenConnections(h), 0);
    const proxyOpen = () => Object.values(route.stats()).reduce((s, p) => s + p.open, 0);
    assert.ok(driverOpen >= 3, `the pool has ${driverOpen} connections, asked for 3`);
    // (The driver's first connection, closed after protocol negotiation, may still be closing.)
    await eventually(() => proxyOpen() === driverOpen);
    assert.is(proxyOpen(), driverOpen, "connections open at the proxies = connections the driver holds");
    const st = Object.values(route.stats());
    for (const p of st) {
      for (const c of p.connections.filter((c) => c.closedAt === undefined)) assert.ok(c.bytesDown > 0, `connection ${c.index} carried answers`);
    }
  } finally {
    await client.shutdown();
    await route.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });
