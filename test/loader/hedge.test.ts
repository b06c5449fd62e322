/**
 * Hedged requests through a real network path: an export served by nginx behind the project's
 * TCP proxy, one pooled connection in four very slow (+400 ms round trip). The same epoch is
 * read with and without `hedge`, in ready and strict order: hedging cuts the worst batch time,
 * every id is still delivered exactly once, and the budget (5 % of requests) holds.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_NGINX, startNginx } from "../_support/nginx.ts";
import { startProxy, unevenEvery } from "../../tools/proxy/proxy.ts";
import { openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { exportDataset } from "../../src/source/export/export.ts";
import { Loader } from "../../src/loader.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-hedge-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const store = await openStore(`sqlite:${join(tmp, "fm.sqlite")}`);
await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 150 });
const ids: string[] = [];
for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
const out = join(tmp, "export");
await exportDataset(store, "fm", out);
await store.close();
const web = NO_NGINX ? undefined : await startNginx({ root: out });
afterAll(() => web?.close());

/** One epoch through a fresh proxy (so the pool's 4th connection is the slow one). */
async function epoch(order: "ready" | "strict", hedge: boolean) {
  const proxy = await startProxy({
    target: { host: "127.0.0.1", port: web!.port },
    profile: unevenEvery(4, { delayMs: 200 }, { delayMs: 0 }),
  });
  const loader = new Loader({
    store: `http://127.0.0.1:${proxy.port}/data?connections=4&pipelining=1`,
    ids, batchSize: 16, prefetch: 4, seed: 3, order, hedge, workers: 0, // one pool of connections, the 4th slow
  });
  const seen: string[] = [];
  try {
    for await (const b of loader.epoch(0)) seen.push(...b.ids);
  } finally {
    await loader.close();
    await proxy.close();
  }
  const s = loader.stats();
  assert.is(seen.length, ids.length, `${order}, hedge ${hedge}: nothing lost`);
  assert.is(new Set(seen).size, ids.length, `${order}, hedge ${hedge}: nothing twice`);
  assert.is(s.duplicates, 0);
  return s;
}

test("one connection in four +400 ms: hedging cuts the worst batch time, exactly once, within its budget", async () => {
  const rows: string[] = [];
  for (const order of ["ready", "strict"] as const) {
    const plain = await epoch(order, false);
    const hedged = await epoch(order, true);
    rows.push(`${order}: worst batch ${plain.batchMs.max.toFixed(0)} → ${hedged.batchMs.max.toFixed(0)} ms, epoch ${(plain.seconds * 1000).toFixed(0)} → ${(hedged.seconds * 1000).toFixed(0)} ms, hedged ${hedged.hedged} (won ${hedged.hedgeWins}) of ${ids.length}`);
    // The slow connection's first answer takes ≥ 800 ms (its handshake and its request, 400 ms
    // each), and without hedging the epoch cannot end before it.
    assert.ok(plain.seconds >= 0.75, `without hedging the slow connection is felt: ${rows.at(-1)}`);
    // By how much is a figure of the machine's load (halved on a quiet one, 807 → 417 ms seen
    // on a loaded one); that it is cut, with a hedge won, is the behaviour.
    assert.ok(hedged.batchMs.max < plain.batchMs.max, `hedging cuts the worst batch time: ${rows.at(-1)}`);
    assert.ok(hedged.seconds < plain.seconds, `…and the epoch is shorter: ${rows.at(-1)}`);
    assert.ok(hedged.hedgeWins >= 1, rows.at(-1));
    assert.ok(hedged.hedged <= 0.05 * ids.length, `the budget holds: ${rows.at(-1)}`);
    assert.is(plain.hedged, 0);
  }
  console.log(`  ${rows.join("\n  ")}`);
}, { skip: NO_NGINX, timeoutMs: 60_000 });
