/**
 * MINATOLoader's claim on this loader (MinatoLoader (arXiv:2509.10712), §4): a CPU-bound
 * heavy tail in a transform module does not hold batches. The transform (test/fixtures/
 * transforms/spin.ts) spins the CPU: one sample in ten for 50–150 ms, the rest 2 ms, in the
 * decode pool, on this machine's cores; the consumer's step (80 ms a batch of 8) stands in for
 * training. Sized near the pool's capacity on 2 cores, where head-of-line blocking shows.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { Loader, type LoaderStats } from "../../src/loader.ts";
import { openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { epochPlan } from "../../src/plan/epoch.ts";
import { spinMs, type SpinOptions } from "../fixtures/transforms/spin.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-slow-lane-"));
const address = `sqlite:${join(dir, "fm.sqlite")}`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SPIN = new URL("../fixtures/transforms/spin.ts", import.meta.url).href;
const TAIL: SpinOptions = { fastMs: 2, slowMs: [50, 150], slowShare: 0.1 };
const B = 8, STEP_MS = 80, SEED = 3;

let ids: string[] = [];
async function setup(): Promise<string[]> {
  if (ids.length) return ids;
  const store = await openStore(address);
  await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 480 });
  for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
  await store.close();
  return ids;
}

/** Two epochs with a consumer step; each batch's ids, and the loader's figures. */
async function run1(o: { order?: "strict"; decodeWorkers?: number; workers?: number; slowLane?: boolean }): Promise<{ batches: string[][][]; stats: LoaderStats }> {
  const loader = new Loader({
    store: address, dataset: "fm", ids: await setup(), batchSize: B, prefetch: 2, readAhead: true, seed: SEED,
    transform: { module: SPIN, options: TAIL }, ...o,
  });
  const batches: string[][][] = [[], []];
  try {
    for (let e = 0; e < 2; e++) {
      for await (const b of loader.epoch(e)) {
        batches[e].push(b.ids);
        await new Promise((r) => setTimeout(r, STEP_MS));
      }
    }
    return { batches, stats: loader.stats() };
  } finally {
    await loader.close();
  }
}

// Each configuration runs once for both tests (a run is ~10 s of consumer steps).
const runs = new Map<string, ReturnType<typeof run1>>();
function run(o: Parameters<typeof run1>[0]): ReturnType<typeof run1> {
  const key = JSON.stringify(o);
  if (!runs.has(key)) runs.set(key, run1(o));
  return runs.get(key)!;
}

function everyIdOnce(batches: string[][], what: string): void {
  const got = batches.flat();
  assert.is(got.length, ids.length, `${what}: as many samples as ids`);
  assert.is(new Set(got).size, ids.length, `${what}: each id once`);
}

test("a CPU-bound heavy tail: slow samples take the slow lane and the jobs queued behind them go to the other worker; every id once in either order", async () => {
  const strict = await run({ order: "strict", decodeWorkers: 2, slowLane: false });
  // Ready order and the slow lane (the defaults), on the same two workers: the scaler's own test
  // is test/decode/lanes.test.ts.
  const lanes = await run({ decodeWorkers: 2 });
  const show = (s: LoaderStats) =>
    `batch p50 ${s.batchMs.p50.toFixed(0)} p99 ${s.batchMs.p99.toFixed(0)} ms, slow lane ${s.prepare?.slowLane}, taken back ${s.prepare?.stolen}, workers ${JSON.stringify(s.prepare?.history)}`;
  const msg = `strict: ${show(strict.stats)}; lanes: ${show(lanes.stats)}`;
  for (const r of [strict, lanes]) r.batches.forEach((b, e) => everyIdOnce(b, `epoch ${e}`));
  // What the lane does, however loaded the machine. How much less the consumer waits than in
  // strict order is the benchmark's to say (bench/minato.bench.ts, side by side: 6-10× on this VM);
  // asserting it here failed under load (issue 36: 23.6 % vs 15.4 % beside other test jobs).
  assert.ok((lanes.stats.prepare?.slowLane ?? 0) > 0, `samples took the slow lane (${msg})`);
  assert.ok((lanes.stats.prepare?.stolen ?? 0) > 0, `jobs queued behind a slow sample went to the other worker (${msg})`);
  assert.is(strict.stats.prepare?.slowLane ?? 0, 0, "no lane where it is off");
  assert.ok(lanes.stats.prepare!.history.every(([, n]) => n >= 1 && n <= lanes.stats.prepare!.periods.length + 8), "worker counts recorded");
}, { timeoutMs: 180_000 });

/** Fast and slow samples handed over in a later batch than the plan's, over both epochs. */
function lateness(batches: string[][][]): { slow: number; slowLate: number; fast: number; fastLate: number } {
  const late = { slow: 0, slowLate: 0, fast: 0, fastLate: 0 };
  batches.forEach((handed, e) => {
    const plan = epochPlan(ids, { seed: SEED, epoch: e, batchSize: B });
    const batchOf = new Map<string, number>();
    handed.forEach((b, k) => b.forEach((id) => batchOf.set(id, k)));
    plan.forEach((id, pos) => {
      const later = batchOf.get(id)! > Math.floor(pos / B);
      if (spinMs({ id, label: 0 }, TAIL) >= 50) late.slow++, late.slowLate += +later;
      else late.fast++, late.fastLate += +later;
    });
  });
  return late;
}

test("ready order: batches are not held behind slow samples (they join later batches than planned, the batches stay whole); strict order keeps the plan", async () => {
  const { batches } = await run({ decodeWorkers: 2 });
  const late = lateness(batches);
  assert.ok(late.slow > 40, `slow samples in two epochs: ${late.slow}`);
  // What ready order does: a batch went without a slow sample its plan holds, and was whole.
  // How much more often slow samples are late than fast ones (~10× here) is a matter of
  // timing, the benchmark's to print (bench/minato.bench.ts's "late" columns).
  assert.ok(late.slowLate > 0, `later than planned: ${late.slowLate} of ${late.slow} slow samples, ${late.fastLate} of ${late.fast} fast ones`);
  for (const handed of batches) assert.ok(handed.slice(0, -1).every((b) => b.length === B), "every batch but the last whole");
  const strict = await run({ order: "strict", decodeWorkers: 2, slowLane: false });
  strict.batches.forEach((handed, e) => assert.equal(handed.flat(), epochPlan(ids, { seed: SEED, epoch: e, batchSize: B }), "strict order is the plan"));
}, { timeoutMs: 180_000 });

test("read workers (workers: 2 with a transform module): slow samples take their slow lane and the samples queued behind them go to the other worker; every id once, strict order the plan's batches", async () => {
  const ready = await run({ workers: 2 });
  const strict = await run({ workers: 2, order: "strict" });
  const show = (s: LoaderStats, b: string[][][]) =>
    `batch p50 ${s.batchMs.p50.toFixed(0)} p99 ${s.batchMs.p99.toFixed(0)} ms, slow lane ${s.prepare?.slowLane}, taken back ${s.prepare?.stolen}, deadline ${s.prepare?.thresholdMs} ms, late ${JSON.stringify(lateness(b))}`;
  const msg = `ready: ${show(ready.stats, ready.batches)}; strict: ${show(strict.stats, strict.batches)}`;
  for (const r of [ready, strict]) r.batches.forEach((b, e) => everyIdOnce(b, `epoch ${e}`));
  for (const r of [ready, strict]) {
    assert.ok(r.stats.prepare!.slowLane > 0 && r.stats.prepare!.stolen > 0, `samples took the slow lane and others were taken back (${msg})`);
    assert.ok(Number.isFinite(r.stats.prepare!.thresholdMs) && r.stats.prepare!.jobs > 0, `the workers learned a deadline (${msg})`);
  }
  strict.batches.forEach((handed, e) => {
    assert.ok(handed.every((b) => b.length === B), "strict batches are whole");
    assert.equal(handed.flat(), epochPlan(ids, { seed: SEED, epoch: e, batchSize: B }), "strict order is the plan");
  });
}, { timeoutMs: 180_000 });
