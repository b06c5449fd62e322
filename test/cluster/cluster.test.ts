/**
 * A real three-node cluster (test/run.ts starts it for this folder): a dataset ingested at the
 * default replication (3 on 3 nodes) is read whole through the Loader while one node is killed
 * with kill -9 mid-epoch; `cassette cassandra restart --node N` brings it back as the same node
 * (same host id), and with the other two frozen (SIGSTOP) it alone answers every sample from
 * its own copy. Each runtime kills another node (bun 2, deno 3, node 1: the seed).
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import process from "node:process";
import cassandra from "cassandra-driver";
import { test } from "../_support/harness.ts";
import { NO_CLUSTER, testCluster, type TestCluster } from "../_support/services.ts";
import { cassette } from "../_support/cli.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { tables } from "../../src/dataset/schema.ts";
import { Loader } from "../../src/loader.ts";

const DATASET = "fm-cluster";
const SAMPLES = 400; // 200 per Fashion-MNIST split: 16 batches, requests in flight at the kill
const VICTIM = ({ bun: 2, deno: 3, node: 1 } as Record<string, number>)[runtime.name] ?? 2;

interface NodeStatus {
  node: number;
  address: string;
  port: number;
  pid: number | null;
  running: boolean;
}

/** `cassette cassandra ARGS --json` on the test cluster (its run folder and ports). */
function clusterCli(c: TestCluster, ...args: string[]): { code: number | null; doc: { nodes: NodeStatus[]; output: string } } {
  const [cmd, ...pre] = runtime.scriptCommand("src/cli/main.ts", ["cassandra", ...args, "--json"]);
  const r = spawnSync(cmd, pre, { encoding: "utf8", timeout: 240_000, env: { ...process.env, ...c.env } });
  assert.ok(r.stdout, `cassette cassandra ${args.join(" ")} printed nothing: ${r.stderr}`);
  return { code: r.status, doc: JSON.parse(r.stdout) };
}

/** A client that talks to node `host` only (an allowlist): what that node answers, not the cluster. */
async function nodeClient(c: TestCluster, host: string, keyspace?: string): Promise<cassandra.Client> {
  const { AllowListPolicy, RoundRobinPolicy } = cassandra.policies.loadBalancing;
  const client = new cassandra.Client({
    contactPoints: [host],
    localDataCenter: "datacenter1",
    keyspace,
    protocolOptions: { port: c.port },
    policies: {
      loadBalancing: new AllowListPolicy(new RoundRobinPolicy(), [`${host}:${c.port}`]),
      retry: new cassandra.policies.retry.FallthroughRetryPolicy(), // each failure seen here
    },
    queryOptions: { consistency: cassandra.types.consistencies.one },
  });
  await client.connect();
  return client;
}

/** The cluster's address of keyspace `name` (per runtime), dropped first if it exists. */
async function freshKeyspace(c: TestCluster, name: string): Promise<{ address: string; keyspace: string }> {
  const address = c.address(name);
  const keyspace = address.slice(address.lastIndexOf("/") + 1);
  const admin = await nodeClient(c, c.hosts[0]);
  try {
    await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
  } finally {
    await admin.shutdown();
  }
  return { address, keyspace };
}

async function hostId(c: TestCluster, host: string): Promise<string> {
  const client = await nodeClient(c, host);
  try {
    return (await client.execute("SELECT host_id FROM system.local")).first().host_id.toString();
  } catch (e) {
    throw described(e, `reading ${host}'s host id`);
  } finally {
    await client.shutdown();
  }
}

/** A driver error with what was being done, its class and code (some server errors carry no message). */
function described(e: unknown, doing: string): Error {
  const err = e as Error & { code?: number; coordinator?: string };
  return new Error(`${doing}: ${err.name ?? "error"}${err.code !== undefined ? ` (code 0x${err.code.toString(16)})` : ""}${err.coordinator ? ` from ${err.coordinator}` : ""}: ${err.message}`, { cause: e });
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

async function replicationOf(client: cassandra.Client, keyspace: string): Promise<Record<string, string>> {
  return (await client.execute("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", [keyspace])).first()?.replication;
}

test("kill -9 of one node mid-epoch: every sample read once; restarted, it rejoins as the same node with its data", async () => {
  const c = testCluster()!;
  const host = c.hosts[VICTIM - 1];
  // A fresh keyspace, so that the replication checked is the default's, made now.
  const { address, keyspace } = await freshKeyspace(c, "cassette_cluster");
  // Writes at ALL: every replica holds every sample before a node is killed (with hinted
  // handoff off, a write a replica missed would stay missed, and the last check would fail).
  const writer = await CassandraStore.open(address, { driver: { queryOptions: { consistency: cassandra.types.consistencies.all } } });
  const store = await CassandraStore.open(address); // reads at the driver's default, LOCAL_ONE
  let loader: Loader | undefined;
  const frozen: number[] = [];
  try {
    assert.equal(await replicationOf(store.client, keyspace), {
      class: "org.apache.cassandra.locator.SimpleStrategy",
      replication_factor: "3",
    }, "default replication: min(3, the cluster's 3 nodes)");
    const t0 = runtime.now();
    const summary = await ingest(writer, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: SAMPLES / 2 });
    assert.is(summary.written + summary.existing, SAMPLES);
    const ids: string[] = [];
    for await (const page of store.scanNat(DATASET)) ids.push(...page.map((r) => r.id));
    const want = new Map((await store.get(DATASET, ids)).map((s) => [s.id, s.data]));
    const before = await hostId(c, host);

    const victim = clusterCli(c, "status").doc.nodes.find((n) => n.node === VICTIM)!;
    assert.ok(victim.running && victim.pid, `node ${VICTIM} runs before the kill: ${JSON.stringify(victim)}`);

    // The epoch, with the node killed after the third batch, requests to it in flight.
    loader = new Loader({ store, dataset: DATASET, ids, batchSize: 25, prefetch: 8, retries: 5, seed: 7 });
    const seen: string[] = [];
    let batches = 0;
    for await (const b of loader.epoch(0)) {
      for (const [i, id] of b.ids.entries()) {
        assert.ok(sameBytes(b.data.subarray(b.offsets[i], b.offsets[i + 1]), want.get(id)!), `sample ${id}'s bytes`);
      }
      seen.push(...b.ids);
      if (++batches === 3) assert.is(spawnSync("kill", ["-9", String(victim.pid)]).status, 0, "kill -9");
    }
    assert.is(seen.length, ids.length, "nothing lost");
    assert.is(new Set(seen).size, ids.length, "nothing twice");
    const dead = clusterCli(c, "status");
    assert.is(dead.code, 1, "status exits 1 with a node down");
    assert.not.ok(dead.doc.nodes[VICTIM - 1].running, `node ${VICTIM} is dead: ${dead.doc.output}`);
    console.log(`  ingest at ALL and the epoch: ${((runtime.now() - t0) / 1000).toFixed(1)} s; node ${VICTIM} killed after batch 3 of ${batches}: ${loader.stats().retries} retries`);

    // Back, through the CLI: the same node (host id), at a new pid, seen by the others.
    const t1 = runtime.now();
    const back = clusterCli(c, "restart", "--node", String(VICTIM));
    assert.is(back.code, 0, back.doc.output);
    const again = back.doc.nodes.find((n) => n.node === VICTIM)!;
    assert.ok(again.running && again.pid !== victim.pid, `restarted at a new pid: ${JSON.stringify(again)}`);
    assert.match(back.doc.output, /resuming .* with its data/);
    console.log(`  restart --node ${VICTIM}: ${((runtime.now() - t1) / 1000).toFixed(1)} s`);
    assert.is(await hostId(c, host), before, "same host id after the restart");

    // Its own copy: the other two frozen, every read at ONE through it must come from its disk.
    for (const n of clusterCli(c, "status").doc.nodes) {
      if (n.node !== VICTIM && n.pid) assert.is(spawnSync("kill", ["-STOP", String(n.pid)]).status, 0), frozen.push(n.pid);
    }
    const t2 = runtime.now();
    const client = await nodeClient(c, host, keyspace).catch((e) => Promise.reject(described(e, `connecting to ${host} alone`)));
    try {
      const cql = `SELECT data FROM ${tables(DATASET).data} WHERE id = ?`;
      // Until it convicts the frozen nodes (seconds), it may still ask one of them and time out:
      // such a read is asked again, to a deadline. 32 at a time, so the wait is paid about once.
      const deadline = runtime.now() + 90_000;
      let same = 0, timeouts = 0;
      const readOne = async (id: string) => {
        for (;;) {
          try {
            const row = (await client.execute(cql, [id], { prepare: true })).first();
            assert.ok(row, `node ${VICTIM} alone has no row for ${id}`);
            if (sameBytes(row.data, want.get(id)!)) same++;
            return;
          } catch (e) {
            const known = [cassandra.errors.ResponseError, cassandra.errors.OperationTimedOutError, cassandra.errors.NoHostAvailableError];
            if (!known.some((k) => e instanceof k)) throw e;
            if (runtime.now() > deadline) throw described(e, `node ${VICTIM} alone did not answer for ${id} within 90 s`);
            timeouts++;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      };
      const queue = [...ids];
      await Promise.all(Array.from({ length: 32 }, async () => {
        for (let id = queue.shift(); id; id = queue.shift()) await readOne(id);
      }));
      console.log(`  node ${VICTIM} alone: ${same} of ${ids.length} samples in ${((runtime.now() - t2) / 1000).toFixed(1)} s, ${timeouts} reads asked again while it convicted the others`);
      assert.is(same, ids.length, `node ${VICTIM} alone holds every sample's bytes`);
    } finally {
      await client.shutdown();
    }
  } finally {
    for (const pid of frozen) spawnSync("kill", ["-CONT", String(pid)]);
    // The cluster as found, for the tests after this one (and the next runtime's), failed or not.
    if (!clusterCli(c, "status", "--node", String(VICTIM)).doc.nodes[0].running) clusterCli(c, "restart", "--node", String(VICTIM));
    await loader?.close();
    await store.close();
    await writer.close();
  }
}, { skip: NO_CLUSTER, timeoutMs: 300_000 });

test("cassette ingest --replication N makes the keyspace at factor N (test 1 checks the default)", async () => {
  const c = testCluster()!;
  const ks = `cassette_rf2_${runtime.name}`;
  const admin = await nodeClient(c, c.hosts[0]);
  try {
    await admin.execute(`DROP KEYSPACE IF EXISTS ${ks}`);
    const r = cassette("ingest", "idx:/usr/share/datasets/fashion-mnist/", "--store", `cassandra://${c.hosts.join(",")}:${c.port}/${ks}`, "--dataset", "fm", "--limit", "2", "--replication", "2");
    assert.is(r.code, 0, r.err);
    assert.is((await replicationOf(admin, ks)).replication_factor, "2");
  } finally {
    await admin.shutdown();
  }
}, { skip: NO_CLUSTER, timeoutMs: 120_000 });

test("kill -9 of a node mid-ingest at RF 3: the ingest rides through it, nothing half-written, and a re-run finds every sample whole", async () => {
  const c = testCluster()!;
  const { address, keyspace } = await freshKeyspace(c, "cassette_ingestkill");
  const victim = clusterCli(c, "status").doc.nodes.find((n) => n.node === VICTIM)!;
  assert.ok(victim.running && victim.pid, `node ${VICTIM} runs before the kill: ${JSON.stringify(victim)}`);
  const store = await CassandraStore.open(address);
  try {
    let killed = false;
    const t0 = runtime.now();
    // Killed once the ingest is under way: requests (logged batches) in flight to it, and it a
    // batchlog replica of others, until the cluster sees it down.
    const first = await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", {
      dataset: DATASET, limit: SAMPLES / 2, chunk: 32,
      onProgress: (p) => {
        if (!killed && p.done >= 64) killed = spawnSync("kill", ["-9", String(victim.pid)]).status === 0;
      },
    });
    assert.ok(killed, "the node was killed mid-ingest");
    assert.equal([first.written + first.existing, first.errors.length], [SAMPLES, 0], `every sample stored despite the kill (${((runtime.now() - t0) / 1000).toFixed(1)} s)`);
    // The re-run a user would make: everything is found whole (three rows each), nothing written.
    const again = await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: SAMPLES / 2 });
    assert.equal([again.written, again.existing], [0, SAMPLES], "the re-run finds every sample whole");
    // Each table, read at QUORUM (both live replicas), holds each sample exactly once.
    const quorum = { prepare: true, consistency: cassandra.types.consistencies.quorum, fetchSize: 1000 };
    const t = tables(DATASET);
    const idsOf = async (table: string) => {
      const ids: string[] = [];
      let pageState: string | undefined;
      do {
        const r = await store.client.execute(`SELECT id FROM ${keyspace}.${table}`, [], { ...quorum, pageState });
        ids.push(...r.rows.map((row) => String(row.id)));
        pageState = r.pageState ?? undefined;
      } while (pageState);
      return ids;
    };
    const [data, byUuid, byNat] = [await idsOf(t.data), await idsOf(t.byUuid), await idsOf(t.byNat)];
    for (const [name, ids] of [["data", data], ["metadata_by_uuid", byUuid], ["metadata_by_nat", byNat]] as const) {
      assert.equal([ids.length, new Set(ids).size], [SAMPLES, SAMPLES], `${name}: each sample once`);
    }
    assert.equal([...byUuid].sort(), [...data].sort(), "the same samples in data and metadata");
  } finally {
    if (!clusterCli(c, "status", "--node", String(VICTIM)).doc.nodes[0].running) clusterCli(c, "restart", "--node", String(VICTIM));
    await store.close();
  }
}, { skip: NO_CLUSTER, timeoutMs: 300_000 });
