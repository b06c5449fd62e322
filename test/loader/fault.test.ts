/**
 * A server that dies in the middle of an epoch: through the project's TCP proxy in front of
 * the real Cassandra node, the link is cut mid-epoch. Restored within the retry budget, the
 * epoch completes with nothing lost or duplicated; left down, the epoch ends with a clear error.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { startProxy, uniform } from "../../tools/proxy/proxy.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { Loader } from "../../src/loader.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";

const DATASET = `fault-${runtime.name}`;

async function prepare() {
  const address = testCassandra("cassette_fault")!;
  const a = parseStoreAddress(address) as Extract<ReturnType<typeof parseStoreAddress>, { kind: "cassandra" }>;
  const direct = await CassandraStore.open(address);
  await direct.createDataset({ version: 1, name: DATASET, columns: [], groupBy: [], label: { kind: "int" } });
  const samples = Array.from({ length: 600 }, (_, i) => ({ key: `k${i}`, label: i % 10, data: new Uint8Array(512).fill(i % 251) }));
  await direct.put(DATASET, samples);
  const ids: string[] = [];
  for await (const page of direct.scanNat(DATASET)) ids.push(...page.map((r) => r.id));
  await direct.close();
  return { a, ids };
}

test("the link dies mid-epoch and comes back within the retry budget: the epoch completes, exactly once", async () => {
  const { a, ids } = await prepare();
  let proxy = await startProxy({ target: { host: a.hosts[0], port: a.port }, profile: uniform(2) });
  const port = proxy.port;
  const auth = a.username ? `${a.username}:${a.password}@` : "";
  const store = await CassandraStore.open(`cassandra://${auth}127.0.0.1:${port}/${a.keyspace}`, {
    // Reconnect quickly so the test is short; the retry budget (below) covers the outage.
    driver: { policies: { reconnection: new (await import("cassandra-driver")).default.policies.reconnection.ConstantReconnectionPolicy(200) } },
  });
  const loader = new Loader({ store, dataset: DATASET, ids, batchSize: 20, prefetch: 4, retries: 10, seed: 1 });
  const seen: string[] = [];
  let batches = 0;
  try {
    for await (const b of loader.epoch(0)) {
      seen.push(...b.ids);
      if (++batches === 5) {
        await proxy.close(); // every connection to the server is cut
        await new Promise((r) => setTimeout(r, 500));
        proxy = await startProxy({ target: { host: a.hosts[0], port: a.port }, profile: uniform(2), listen: { port } });
      }
    }
  } finally {
    await loader.close();
    await store.close();
    await proxy.close();
  }
  assert.is(seen.length, ids.length, "nothing lost");
  assert.is(new Set(seen).size, ids.length, "nothing twice");
  assert.ok(loader.stats().retries > 0, `the outage was felt: ${loader.stats().retries} retries`);
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });

test("the link dies mid-epoch and stays down: a clear error naming a sample, in bounded time", async () => {
  const { a, ids } = await prepare();
  const proxy = await startProxy({ target: { host: a.hosts[0], port: a.port }, profile: uniform(2) });
  const auth = a.username ? `${a.username}:${a.password}@` : "";
  const store = await CassandraStore.open(`cassandra://${auth}127.0.0.1:${proxy.port}/${a.keyspace}`);
  const loader = new Loader({ store, dataset: DATASET, ids, batchSize: 20, prefetch: 4, retries: 3, seed: 2 });
  let batches = 0;
  const t0 = runtime.now();
  try {
    for await (const _ of loader.epoch(0)) if (++batches === 3) await proxy.close();
    assert.unreachable("the epoch cannot complete");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.match((e as Error).message, /Cannot read sample [0-9a-f-]{36} of epoch 0/);
    // …and where it looked: the node (the proxy in front of it), what it said or that it is down.
    assert.match((e as Error).message, new RegExp(`no node answered \\((tried|every node is down:) 127\\.0\\.0\\.1:${proxy.port}`));
  } finally {
    await loader.close();
    await store.close().catch(() => {});
  }
  assert.ok(runtime.now() - t0 < 30_000, `gave up in ${(runtime.now() - t0).toFixed(0)} ms`);
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });
