/**
 * Exactly once through a real network path: Cassandra behind the project's TCP proxy with
 * jitter and one congested connection in two, several epochs and two ranks whose shards must
 * partition each epoch.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { startProxy, uniform, unevenEvery } from "../../tools/proxy/proxy.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { CassandraSource } from "../../src/source/cassandra/cassandra_source.ts";
import { ADAPTIVE_CONNECTIONS } from "../../src/source/cassandra/cassandra_client.ts";
import { Loader } from "../../src/loader.ts";
import { runtime } from "../../runtime-adapters/index.ts";

/** A dataset of `count` samples of `bytes` each (sample i filled with i mod `fill`) in `keyspace`, and how to reach its node. */
async function seeded(keyspace: string, name: string, count: number, bytes: number, fill: number) {
  const address = testCassandra(keyspace)!;
  const a = parseStoreAddress(address) as Extract<ReturnType<typeof parseStoreAddress>, { kind: "cassandra" }>;
  const dataset = `${name}-${runtime.name}`;
  const direct = await CassandraStore.open(address);
  await direct.createDataset({ version: 1, name: dataset, columns: [], groupBy: [], label: { kind: "int" } });
  if (count) await direct.put(dataset, Array.from({ length: count }, (_, i) => ({ key: `k${i}`, label: i % 7, data: new Uint8Array(bytes).fill(i % fill) })));
  const ids: string[] = [];
  for await (const page of direct.scanNat(dataset)) ids.push(...page.map((r) => r.id));
  await direct.close();
  return { a, dataset, ids, auth: a.username ? `${a.username}:${a.password}@` : "" };
}

test("ready order through jitter and a congested connection: 2 ranks × 3 epochs, every id exactly once per epoch", async () => {
  const { a, dataset, ids, auth } = await seeded("cassette_jitter", "jitter", 400, 2048, 256);

  const proxy = await startProxy({
    target: { host: a.hosts[0], port: a.port },
    profile: unevenEvery(2, { delayMs: 8, jitterMs: 6, bandwidthBytesPerSec: 300_000 }, { delayMs: 2, jitterMs: 2 }),
  });
  const store = await CassandraStore.open(`cassandra://${auth}127.0.0.1:${proxy.port}/${a.keyspace}?connections=3`);
  try {
    for (let epoch = 0; epoch < 3; epoch++) {
      const seen: string[] = [];
      for (let rank = 0; rank < 2; rank++) {
        const loader = new Loader({ store, dataset, ids, batchSize: 24, prefetch: 3, seed: 11, rank, worldSize: 2 });
        for await (const b of loader.epoch(epoch)) {
          seen.push(...b.ids);
          b.ids.forEach((id, i) => assert.is(b.offsets[i + 1] - b.offsets[i], 2048, `bytes of ${id}`));
        }
        await loader.close();
      }
      assert.is(seen.length, ids.length, `epoch ${epoch}: every id read`);
      assert.is(new Set(seen).size, ids.length, `epoch ${epoch}: no id twice, the ranks' shards are disjoint`);
    }
    assert.ok(proxy.stats().accepted >= 3, `went through the proxy: ${proxy.stats().accepted} connections`);
  } finally {
    await store.close();
    await proxy.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 180_000 });

// Connections left to cassette (no `connections=` in the address) start at 2 and grow, up to
// ADAPTIVE_CONNECTIONS.max, while requests wait for a slot; an address that names a count keeps
// it. `requests=16` makes each connection's slots few, so a window of 256 must wait for them.
test("connections: 2 to start, more while requests wait for a slot (not when the address names them), every id once", async () => {
  const { a, dataset, ids, auth } = await seeded("cassette_conns", "conns", 600, 512, 251);

  const read = async (query: string) => {
    const proxy = await startProxy({ target: { host: a.hosts[0], port: a.port }, profile: uniform(3) });
    const store = await CassandraStore.open(`cassandra://${auth}127.0.0.1:${proxy.port}/${a.keyspace}?${query}`);
    try {
      const source = new CassandraSource(store, dataset);
      const opened = source.connections;
      const loader = new Loader({ store: source, ids, batchSize: 32, prefetch: 8, seed: 3 });
      const seen: string[] = [];
      for (const epoch of [0, 1]) {
        for await (const b of loader.epoch(epoch)) {
          seen.push(...b.ids);
          b.ids.forEach((id, i) => assert.is(b.offsets[i + 1] - b.offsets[i], 512, `bytes of ${id}`));
        }
      }
      await loader.close();
      assert.is(seen.length, 2 * ids.length, `${query}: every id read in both epochs`);
      assert.is(new Set(seen).size, ids.length, `${query}: no id missing`);
      // The proxy sees every TCP connection the driver made. A growth step may still be opening
      // one (accepted by the proxy, not yet in the pool): wait for it to join, a few seconds at
      // most, so that only a connection that never joins (a refused offer) tells them apart.
      const until = runtime.now() + 3000;
      while (proxy.stats().accepted !== source.connections && runtime.now() < until) await new Promise((r) => setTimeout(r, 20));
      return { opened, end: source.connections, capacity: source.capacity, accepted: proxy.stats().accepted };
    } finally {
      await store.close();
      await proxy.close();
    }
  };
  const auto = await read("requests=16");
  assert.is(auto.opened, ADAPTIVE_CONNECTIONS.start, "cassette's default opens 2 connections");
  assert.ok(auto.end > ADAPTIVE_CONNECTIONS.start && auto.end <= ADAPTIVE_CONNECTIONS.max, `grew while requests waited: ${auto.end} connections`);
  assert.is(auto.capacity, 16 * auto.end, "capacity follows the connections that opened");
  // The control connection is one of the pool's (the driver adds it to its host's pool); the
  // connection more seen before was the driver's first protocol offer, refused (now v4 is offered first).
  assert.is(auto.accepted, auto.end, "the proxy saw the pool's connections, the control connection among them, and no other");
  const fixed = await read("requests=16&connections=2");
  assert.is(fixed.end, 2, "an address that names its connections keeps them");
  assert.is(fixed.capacity, 32);
}, { skip: NO_CASSANDRA, timeoutMs: 180_000 });

// A far store (the read statement's preparation took ADAPTIVE_CONNECTIONS.farMs or more) opens
// ADAPTIVE_CONNECTIONS.far connections at once, before any sample is asked for: the driver opens
// them one after another, ~3 round trips each, too slow to wait for the window's demand. A near
// one keeps 2 until requests wait.
test("connections: a far store opens 4 while the caller lists ids, before any read; a near one keeps 2", async () => {
  const { a, dataset, auth } = await seeded("cassette_conns", "far", 0, 0, 1);
  const connectionsAfter = async (oneWayMs: number) => {
    const proxy = await startProxy({ target: { host: a.hosts[0], port: a.port }, profile: uniform(oneWayMs) });
    const store = await CassandraStore.open(`cassandra://${auth}127.0.0.1:${proxy.port}/${a.keyspace}`);
    try {
      const source = new CassandraSource(store, dataset);
      await source.prepared;
      // Each connection costs a few round trips: wait up to 20 of them for the far start.
      const until = runtime.now() + 40 * oneWayMs + 500;
      while (source.connections < ADAPTIVE_CONNECTIONS.far && runtime.now() < until) await new Promise((r) => setTimeout(r, 20));
      return { connections: source.connections, capacity: source.capacity, inFlight: source.inFlight() };
    } finally {
      await store.close();
      await proxy.close();
    }
  };
  const far = await connectionsAfter(40); // RTT 80 ms
  assert.is(far.connections, ADAPTIVE_CONNECTIONS.far, `a store 80 ms away opens ${ADAPTIVE_CONNECTIONS.far} connections: ${far.connections}`);
  assert.is(far.capacity, 2048 * ADAPTIVE_CONNECTIONS.far, "and its capacity follows them");
  assert.is(far.inFlight, 0, "with no sample asked for");
  const near = await connectionsAfter(2); // RTT 4 ms
  assert.is(near.connections, ADAPTIVE_CONNECTIONS.start, `a store 4 ms away keeps ${ADAPTIVE_CONNECTIONS.start}: ${near.connections}`);
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });
