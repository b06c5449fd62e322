/**
 * Which node a read goes to, on the three-node cluster (test/run.ts starts it for this folder):
 * token-aware, each sample from a replica of its partition; and a second request for a sample
 * still in flight (what a hedge and the epoch tail's re-ask send) to another replica than the
 * first, so a slow or dead node is not asked twice (src/source/cassandra/cassandra_source.ts).
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { test } from "../_support/harness.ts";
import { NO_CLUSTER, testCluster } from "../_support/services.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { CassandraSource } from "../../src/source/cassandra/cassandra_source.ts";
import { cassandraTypes } from "../../src/source/cassandra/cassandra_client.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { tables } from "../../src/dataset/schema.ts";
import type { Fetched } from "../../src/source/source.ts";
import { Loader } from "../../src/loader.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const DATASET = "fm-replicas";

/**
 * `store`'s dataset ingested (40 samples) and its ids. Written at consistency ALL by a client
 * of its own: at replication 3 a write at LOCAL_ONE may not have reached the replica a read
 * asks next (a bun run in CI read "Cannot find sample" on the second request).
 */
async function filled(store: CassandraStore, address: string, replication: number): Promise<string[]> {
  const writer = await CassandraStore.open(`${address}?consistency=all`, { replication });
  try {
    await ingest(writer, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: 20 });
  } finally {
    await writer.close();
  }
  // The token map knows a keyspace once the client's metadata has it: a new one may not be in yet.
  await (store.client.metadata as unknown as { refreshKeyspace(ks: string): Promise<void> }).refreshKeyspace(store.keyspace.toLowerCase());
  const ids: string[] = [];
  for await (const page of store.scanNat(DATASET)) ids.push(...page.map((r) => r.id));
  return ids;
}

const fetchOne = (source: CassandraSource, id: string) =>
  new Promise<Fetched>((resolve, reject) => source.fetch(id, (e, s) => (e ? reject(e) : resolve(s!))));

/** The addresses (host:port) of the replicas of `id` in the client's token map. */
function replicasOf(store: CassandraStore, id: string): string[] {
  const meta = store.client.metadata as unknown as { getReplicas(ks: string, key: Uint8Array): { address: string }[] | null };
  return (meta.getReplicas(store.keyspace.toLowerCase(), cassandraTypes.Uuid.fromString(id).getBuffer()) ?? []).map((h) => h.address);
}

test("token-aware: at replication 1 every sample comes from the one node that holds it", async () => {
  const c = testCluster()!;
  const store = await CassandraStore.open(c.address("cassette_rf1"), { replication: 1 });
  try {
    const ids = await filled(store, c.address("cassette_rf1"), 1);
    const source = new CassandraSource(store, DATASET);
    const nodes = new Set<string>();
    for (const id of ids) {
      const replicas = replicasOf(store, id);
      assert.is(replicas.length, 1, `one replica of ${id}: ${replicas}`);
      const s = await fetchOne(source, id);
      assert.is(s.conn, replicas[0], `${id} read from its replica`);
      nodes.add(s.conn!);
    }
    assert.ok(nodes.size >= 2, `the 40 samples spread over the nodes: ${[...nodes]}`);
    // The Loader's stats count what each node delivered: every sample, by its replica.
    const loader = new Loader({ store: source, ids, batchSize: 8, seed: 5 });
    for await (const _ of loader.epoch(0)) { /* read it all */ }
    const perNode = loader.stats().samplesPerConnection;
    await loader.close();
    const want: Record<string, number> = {};
    for (const id of ids) want[replicasOf(store, id)[0]] = (want[replicasOf(store, id)[0]] ?? 0) + 1;
    assert.equal(perNode, want, "samples per node, as the token map places them");
  } finally {
    await store.close();
  }
}, { skip: NO_CLUSTER, timeoutMs: 180_000 });

test("replication 3: a second request for a sample in flight goes to another replica than the first", async () => {
  const c = testCluster()!;
  const store = await CassandraStore.open(c.address("cassette_rf3"), { replication: 3 });
  try {
    const ids = await filled(store, c.address("cassette_rf3"), 3);
    const source = new CassandraSource(store, DATASET);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      // Both sent before either answers, as a hedge is, with other requests in between (a
      // hedge comes later): the driver's own token-aware plan turns round the replicas request
      // by request, so two requests in a row differ anyway, but three between bring it back.
      const first = fetchOne(source, id);
      const between = [1, 2, 3].map((k) => fetchOne(source, ids[(i + k) % ids.length]));
      const [a, b] = await Promise.all([first, fetchOne(source, id), ...between]);
      assert.ok(a.conn && b.conn, "each answer names its node");
      assert.is.not(a.conn, b.conn, `${id}: the second request went to another replica`);
      assert.ok(replicasOf(store, id).includes(b.conn!), "and to a replica");
    }
  } finally {
    await store.close();
  }
}, { skip: NO_CLUSTER, timeoutMs: 180_000 });

test("a node frozen (SIGSTOP) before a new client opens the store, at replication 3: the opening, the statement's preparation and the epoch all go round it, well before the driver's 30 s timeout, every sample once", async () => {
  const c = testCluster()!;
  const filler = await CassandraStore.open(c.address("cassette_rf3"), { replication: 3 });
  // The node to freeze: not node 1 (the driver's control connection is there), a different one per runtime.
  const victim = c.hosts[{ bun: 1, deno: 2, node: 1 }[runtime.name as "bun" | "deno" | "node"] ?? 1];
  const pid = spawnSync("pgrep", ["-f", "--", `-Dcassandra.storagedir=${c.env.CASSETTE_CASSANDRA_RUN}/node${c.hosts.indexOf(victim) + 1}`], { encoding: "utf8" }).stdout.trim().split("\n")[0];
  assert.ok(/^\d+$/.test(pid), `the pid of ${victim}'s node: '${pid}'`);
  let frozen = false;
  let store: CassandraStore | undefined;
  try {
    const ids = await filled(filler, c.address("cassette_rf3"), 3);
    // Frozen before the new client exists: its registry reads, the preparation of its read
    // statement (src/source/cassandra/cassandra_prepare.ts) and some of the epoch's first requests are
    // sent to it (nothing is known of how fast each node is yet) and stay unanswered; the rest
    // must come from the other two.
    frozen = spawnSync("kill", ["-STOP", pid]).status === 0;
    assert.ok(frozen, "the node was frozen");
    const t0 = runtime.now();
    store = await CassandraStore.open(c.address("cassette_rf3"), { replication: 3 }, false);
    await (store.client.metadata as unknown as { refreshKeyspace(ks: string): Promise<void> }).refreshKeyspace(store.keyspace.toLowerCase());
    const opened = runtime.now() - t0;
    const source = new CassandraSource(store, DATASET);
    // reaskTail: at the epoch's end a sample pending far longer than usual is asked again, on
    // another replica than the first request's.
    const loader = new Loader({ store: source, ids, batchSize: 4, prefetch: 4, seed: 9, reaskTail: true });
    const seen: string[] = [];
    for await (const b of loader.epoch(0)) seen.push(...b.ids);
    const ms = runtime.now() - t0;
    const st = loader.stats();
    await loader.close();
    assert.not.ok(Object.keys(st.samplesPerConnection).some((n) => n.startsWith(`${victim}:`)), `nothing came from the frozen ${victim}: ${JSON.stringify(st.samplesPerConnection)}`);
    assert.equal([seen.length, new Set(seen).size], [ids.length, ids.length], "every sample once");
    const tally = JSON.stringify({ reasked: st.reasked, hedged: st.hedged, retries: st.retries });
    assert.ok(ms < 20_000, `opening (${opened.toFixed(0)} ms) and the epoch took ${ms.toFixed(0)} ms with ${victim} frozen (the driver gives up on a request after 30 s): ${tally}`);
    // A client opened before the freeze has connections open to every node, the frozen one too: the driver alone
    // would prepare a new statement on the first node of its round-robin plan and wait 30 s
    // when that is the frozen one (one in three). Nine new statements, each ready in seconds.
    for (let k = 0; k < 9; k++) {
      const t1 = runtime.now();
      const cql = `SELECT id FROM ${filler.keyspace}.${tables(DATASET).data} WHERE id = ? /* statement ${k} */`;
      assert.is((await filler.client.execute(cql, [ids[k]], { prepare: true, isIdempotent: true })).rowLength, 1);
      const took = runtime.now() - t1;
      assert.ok(took < 10_000, `statement ${k} was prepared and answered in ${took.toFixed(0)} ms with ${victim} frozen`);
    }
  } finally {
    spawnSync("kill", ["-CONT", pid]);
    await store?.close();
    await filler.close();
  }
}, { skip: NO_CLUSTER, timeoutMs: 180_000 });
