/**
 * Network faults during an epoch, injected by the project's TCP proxy (tools/proxy/proxy.ts
 * `fault()`) between the driver and the real test node: every connection reset mid-response, a
 * stall longer than the driver's request timeout, a one-way partition each way. Each time the
 * epoch completes, every sample comes once, its bytes equal to those stored (SHA-1), and the
 * fault was felt (retries, or the driver reconnecting through the proxy).
 *
 * The driver's readTimeout is 1 s here (30 s by default), so a held request fails in time for
 * the loader's retries to carry the epoch past a fault of 2.5 s.
 */
import * as assert from "uvu/assert";
import { createHash } from "node:crypto";
import cassandra from "cassandra-driver";
import { test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { randomBytes, rng } from "../_support/random.ts";
import { parseStoreAddress } from "../../src/source/kinds.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { Loader } from "../../src/loader.ts";
import { type FaultSpec, uniform } from "../../tools/proxy/proxy.ts";
import { startCassandraProxies } from "../../tools/proxy/cassandra.ts";

const DATASET = "faults";
const SAMPLES = 300;
const READ_TIMEOUT_MS = 1000;
/** How long a stall or partition holds: well past the read timeout, well within the retries' budget. */
const HOLD_MS = 2500;

const sha1 = (b: Uint8Array) => createHash("sha1").update(b).digest("hex");

let prepared: Promise<{ address: string; ids: string[]; sums: Map<string, string> }> | undefined;
/** The dataset (once per file): 300 samples of 1–12 kB of seeded random bytes, and each one's checksum. */
function prepare() {
  prepared ??= (async () => {
    const address = testCassandra("cassette_faults")!;
    const store = await CassandraStore.open(address);
    try {
      await store.createDataset({ version: 1, name: DATASET, columns: [], groupBy: [], label: { kind: "int" } });
      const r = rng(19);
      const samples = Array.from({ length: SAMPLES }, (_, i) => {
        const data = randomBytes(r, 1024 + Math.floor(r() * 11 * 1024));
        return { key: `k${i}`, label: i % 10, data };
      });
      await store.put(DATASET, samples);
      const ids: string[] = [];
      for await (const page of store.scanNat(DATASET)) ids.push(...page.map((row) => row.id));
      // The checksums of what the store holds, read back directly (not through the proxy).
      const sums = new Map((await store.get(DATASET, ids)).map((s) => [s.id, sha1(s.data)]));
      return { address, ids, sums };
    } finally {
      await store.close();
    }
  })();
  return prepared;
}

interface Outcome {
  delivered: number;
  distinct: number;
  mismatched: number;
  retries: number;
  /** Connections the proxy accepted during the epoch, beyond those open at its start. */
  reconnects: number;
  hit: number;
}

/**
 * One epoch through a proxy with `spec` injected after `atBatch` batches, healed `holdMs`
 * later (a reset needs no heal).
 */
async function epochWith(spec: FaultSpec, atBatch = 4, holdMs = HOLD_MS): Promise<Outcome> {
  const { address, ids, sums } = await prepare();
  const a = parseStoreAddress(address);
  if (a.kind !== "cassandra") throw new Error("not a Cassandra address");
  // A little delay, so that answers are in the proxy (mid-response) when the fault lands.
  const route = await startCassandraProxies({ nodes: a.hosts.map((host) => ({ host, port: a.port })), profile: uniform(2) });
  const [proxy] = route.proxies;
  const auth = a.username ? `${encodeURIComponent(a.username)}:${encodeURIComponent(a.password ?? "")}@` : "";
  const store = await CassandraStore.open(`cassandra://${auth}${proxy.host}:${proxy.port}/${a.keyspace}?dc=${a.dc}`, {
    driver: {
      policies: {
        addressResolution: route.translator,
        reconnection: new cassandra.policies.reconnection.ConstantReconnectionPolicy(200),
      },
      socketOptions: { readTimeout: READ_TIMEOUT_MS },
    },
  });
  const loader = new Loader({ store, dataset: DATASET, ids, batchSize: 10, prefetch: 4, retries: 12, seed: 3 });
  let heal: ReturnType<typeof setTimeout> | undefined;
  let fault: ReturnType<typeof proxy.fault> | undefined;
  let mismatched = 0, batches = 0, acceptedAtFault = 0;
  const seen: string[] = [];
  try {
    for await (const b of loader.epoch(0)) {
      b.ids.forEach((id, i) => {
        if (sha1(b.data.subarray(b.offsets[i], b.offsets[i + 1])) !== sums.get(id)) mismatched++;
      });
      seen.push(...b.ids);
      if (++batches === atBatch) {
        acceptedAtFault = proxy.stats().accepted;
        const f = proxy.fault(spec);
        fault = f;
        if (!f.healed) heal = setTimeout(() => f.heal(), holdMs);
      }
    }
    assert.ok(fault, `the epoch reached batch ${atBatch}`);
    return {
      delivered: seen.length,
      distinct: new Set(seen).size,
      mismatched,
      retries: loader.stats().retries,
      reconnects: proxy.stats().accepted - acceptedAtFault,
      hit: fault!.connections.length,
    };
  } finally {
    clearTimeout(heal);
    fault?.heal();
    await loader.close();
    await store.close();
    await route.close();
  }
}

function assertExactlyOnce(o: Outcome): void {
  assert.is(o.delivered, SAMPLES, `delivered ${o.delivered} of ${SAMPLES}`);
  assert.is(o.distinct, SAMPLES, `${o.delivered - o.distinct} duplicated`);
  assert.is(o.mismatched, 0, `${o.mismatched} samples' bytes differ from the stored ones`);
  assert.ok(o.hit > 0, "the fault hit a connection");
}

test("every connection reset mid-response: the epoch completes, each sample once and intact, the driver reconnects", async () => {
  const o = await epochWith({ kind: "reset" });
  assertExactlyOnce(o);
  assert.ok(o.reconnects > 0, `the driver opened new connections after the reset: ${JSON.stringify(o)}`);
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });

test(`a stall of every connection (${HOLD_MS} ms, the read timeout ${READ_TIMEOUT_MS} ms): the epoch completes, each sample once and intact, after retries`, async () => {
  const o = await epochWith({ kind: "stall" });
  assertExactlyOnce(o);
  assert.ok(o.retries > 0, `requests timed out and were retried: ${JSON.stringify(o)}`);
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });

test(`a one-way partition, requests cut (${HOLD_MS} ms): the epoch completes, each sample once and intact, after retries`, async () => {
  const o = await epochWith({ kind: "partition", direction: "up" });
  assertExactlyOnce(o);
  assert.ok(o.retries > 0, `requests timed out and were retried: ${JSON.stringify(o)}`);
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });

test(`a one-way partition, answers cut (${HOLD_MS} ms): the late answers, released on heal, are not delivered twice`, async () => {
  const o = await epochWith({ kind: "partition", direction: "down" });
  assertExactlyOnce(o);
  assert.ok(o.retries > 0, `requests timed out and were retried: ${JSON.stringify(o)}`);
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });

test("one connection stalled while the others flow: the epoch completes, each sample once and intact", async () => {
  // The driver's pool spreads requests over its connections; the stalled one's time out.
  const o = await epochWith({ kind: "stall", connection: 1 });
  assertExactlyOnce(o);
  assert.ok(o.retries > 0, `the stalled connection's requests timed out and were retried: ${JSON.stringify(o)}`);
}, { skip: NO_CASSANDRA, timeoutMs: 60_000 });

