import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { delayed, flaky, padded, recording, twice, withVirtualTime } from "../_support/sources.ts";
import { Loader } from "../../src/loader.ts";
import { openSource, openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { epochPlan } from "../../src/plan/epoch.ts";
import type { Store } from "../../src/dataset/store.ts";
import type { Source } from "../../src/source/source.ts";
import { CassetteError } from "../../src/errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-loader-"));
let store: Store;
let ids: string[] = [];
const bytesById = new Map<string, number>();
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function setup(): Promise<Source> {
  if (!store) {
    store = await openStore(`sqlite:${join(dir, "fm.sqlite")}`);
    await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 150 });
    for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
    for (const s of await store.get("fm", ids)) bytesById.set(s.id, s.data.length);
  }
  return openSource(store, "fm");
}

test("ready order under uneven delays: every id exactly once per epoch, over 3 epochs; batches are full but the last", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const slow = new Set<string>();
  const src = await setup();
  for (const id of ids) if (r() < 0.25) slow.add(id); // one sample in four is 20× slower
  const loader = new Loader({ store: delayed(src, (id) => (slow.has(id) ? 40 : r() * 2)), ids, batchSize: 32, prefetch: 4, seed });
  for (let e = 0; e < 3; e++) {
    const seen: string[] = [];
    const sizes: number[] = [];
    for await (const b of loader.epoch(e)) {
      seen.push(...b.ids);
      sizes.push(b.ids.length);
      assert.is(b.offsets.length, b.ids.length + 1);
      assert.is(b.data.length, b.offsets[b.ids.length]);
      b.ids.forEach((id, i) => assert.is(b.offsets[i + 1] - b.offsets[i], bytesById.get(id)));
    }
    assert.is(seen.length, ids.length, `epoch ${e} (seed ${seed})`);
    assert.is(new Set(seen).size, ids.length, `no duplicates in epoch ${e} (seed ${seed})`);
    assert.ok(sizes.slice(0, -1).every((n) => n === 32), `full batches: ${sizes}`);
  }
  assert.is(loader.stats().samples, 3 * ids.length);
  await loader.close();
});

test("ready order lets slow samples join later batches; strict order follows the plan exactly", async () => {
  const src = await setup();
  const slow = new Set(epochPlan(ids, { seed: 1, epoch: 0, batchSize: 30 }).slice(0, 10)); // the first batch's head is slow
  const ready = new Loader({ store: delayed(src, (id) => (slow.has(id) ? 150 : 0)), ids, batchSize: 30, prefetch: 4, seed: 1 });
  const first = (await ready.epoch(0).next()).value!;
  assert.ok(first.ids.filter((id) => slow.has(id)).length < 10, "the first ready batch does not wait for all slow samples");
  await ready.close();

  const strict = new Loader({ store: delayed(await setup(), (id) => (slow.has(id) ? 30 : Math.random() * 3)), ids, batchSize: 30, prefetch: 4, seed: 1, order: "strict" });
  const plan = epochPlan(ids, { seed: 1, epoch: 0, batchSize: 30 });
  let k = 0;
  for await (const b of strict.epoch(0)) {
    assert.equal(b.ids, plan.slice(k * 30, (k + 1) * 30), `strict batch ${k} is plan positions ${k * 30}…`);
    k++;
  }
  assert.is(k, Math.ceil(ids.length / 30));
  await strict.close();
});

test("the ramp: 2 batches at first, then one more for every 4 consumed, never more than prefetch", () => withVirtualTime(async (delayed) => {
  // 2 ms: a near link, where the ramp is the gentle one whatever the answers show (on the
  // source's own clock: a loaded machine's late timers would make it look far).
  const rec = recording(delayed(await setup(), () => 2));
  const loader = new Loader({ store: rec, ids, batchSize: 10, prefetch: 5, rampStart: 2, seed: 3 });
  const it = loader.epoch(0);
  const first = await it.next();
  assert.ok(!first.done);
  // Before the first batch was consumed, at most 2 batches had been requested.
  assert.ok(rec.requests.length <= 2 * 10 + 10, `requested ${rec.requests.length} after one batch`);
  let consumed = 1;
  let worst = 0;
  for (let r = await it.next(); !r.done; r = await it.next()) {
    consumed++;
    const outstanding = rec.requests.length - consumed * 10;
    worst = Math.max(worst, outstanding);
    assert.ok(outstanding <= Math.min(5, 2 + Math.floor(consumed / 4)) * 10, `outstanding ${outstanding} after ${consumed} batches`);
  }
  assert.ok(worst <= 50 && rec.maxInFlight <= 50, `window of 5 batches holds: max in flight ${rec.maxInFlight}`);
  assert.ok(loader.stats().maxOutstanding <= 50);
  // The next epoch of the same loader starts at the depth already reached: no second ramp.
  const before = rec.requests.length;
  const it1 = loader.epoch(1);
  await it1.next();
  assert.ok(rec.requests.length - before > 2 * 10 + 10, `epoch 1 starts at full depth: ${rec.requests.length - before} requested by its first batch`);
  assert.ok(rec.requests.length - before <= 5 * 10 + 10);
  await it1.return!();
  await loader.close();
}));

test("the ramp on a far link: triples per round trip while answers show no queue, and grows by one batch per 4 once they slow down", () => withVirtualTime(async (delayed) => {
  // How far above the gentle ramp (2 + consumed / 4 batches) the window went, at most, in batches.
  const beyondGentle = async (delayMs: (inFlight: number) => number) => {
    const rec: ReturnType<typeof recording> = recording(delayed(await setup(), () => delayMs(rec.current())));
    const loader = new Loader({ store: rec, ids, batchSize: 10, prefetch: 16, rampStart: 2, seed: 3 });
    let consumed = 0, most = -Infinity, beyondDoubling = false;
    for await (const _ of loader.epoch(0)) {
      consumed++;
      const outstanding = (rec.requests.length - consumed * 10) / 10;
      most = Math.max(most, outstanding - (2 + Math.floor(consumed / 4)));
      beyondDoubling ||= outstanding > 2 + consumed + 1;
      assert.ok(outstanding <= 2 + 2 * consumed + 1, `never more than two batches more per batch taken: ${outstanding} batches outstanding after ${consumed}`);
    }
    await loader.close();
    return { most, beyondDoubling };
  };
  // 20 ms whatever is in flight: distance, no queue.
  const { most: far, beyondDoubling } = await beyondGentle(() => 20);
  assert.ok(far >= 2, `with no queue the window outgrows the gentle ramp: by ${far} batches`);
  assert.ok(beyondDoubling, "with no queue the window grows faster than doubling per round trip (BBR's startup gain)");
  // 20 ms plus 1 ms per request in flight: a queue that grows with the window. (Its first answers,
  // 20 in flight, come in 40 ms, under the 50 ms that widens a far link's first window: the next
  // test.)
  const queued = (await beyondGentle((n) => 20 + n)).most;
  console.log(`  beyond the gentle ramp: ${far} batches with no queue, ${queued} with one`);
  // A queue shows once answers are 25 % slower than the fastest: a batch or two of growth before that.
  assert.ok(queued <= 4 && far >= queued + 4, `with a queue the ramp stays near the gentle one: ${queued} batches beyond it (${far} without a queue)`);
}));

test("a far link's first window widens to 8 MiB of samples once the first answers show their size: many small ones, few large; not on a cold start's slow first answers, and a stall that fools it is undone by the first fast answer", () => withVirtualTime(async (delayed) => {
  // The most batches outstanding over the first 6 taken, with samples of `bytes` (0: as stored,
  // ~1 kB) on a 60 ms link with no queue, batches of 2; and the depth at the epoch's end. On
  // the sources' clock: under load, late real timers made the 60 ms answers look queued, and
  // the window did not widen (issue 36, two busy loops: '5 batches outstanding').
  const early = async (bytes: number, delayMs: (sinceStartMs: number) => number = () => 60, stepMs = 0) => {
    const t0 = runtime.now();
    const rec = recording(delayed(bytes ? padded(await setup(), bytes) : await setup(), () => delayMs(runtime.now() - t0)));
    const loader = new Loader({ store: rec, ids, batchSize: 2, prefetch: "auto", maxPrefetch: 40, rampStart: 2, seed: 3 });
    let consumed = 0, most = 0;
    for await (const _ of loader.epoch(0)) {
      consumed++;
      if (consumed <= 6) most = Math.max(most, (rec.requests.length - consumed * 2) / 2);
      if (stepMs) await new Promise((r) => setTimeout(r, stepMs));
    }
    const end = loader.stats().prefetch;
    await loader.close();
    return { most, end };
  };
  const small = await early(0), large = await early(2 ** 20);
  // A near link (1 ms) whose requests of the first 200 ms a stall held up for 60 ms (over three
  // round trips: it widens), read by a consumer that spends 5 ms a batch: it never waits once
  // the stall is over, so nothing else deepens the window.
  const cold = await early(0, (t) => (t < 200 ? 60 : 1), 5);
  // A near link whose first round trip alone a cold start held up for 60 ms.
  const coldFirst = await early(0, (t) => (t < 10 ? 60 : 1), 5);
  console.log(`  most batches outstanding in the first 6: ${small.most} of ~1 kB samples, ${large.most} of 1 MiB; depth at the end ${small.end}, ${large.end}, ${cold.end} after a stall; ${coldFirst.most} outstanding after a cold start`);
  // ~1 kB: 8 MiB is thousands of samples, so the window goes to maxPrefetch (40) at once; the ramp
  // alone reaches at most 2 + 2 × 6 + 1 batches by the 6th batch taken.
  assert.ok(small.most >= 30, `small samples widen the first window toward maxPrefetch: ${small.most} batches outstanding`);
  // 1 MiB: 8 samples, 4 batches of 2, and the ramp's growth on top.
  assert.ok(large.most <= 4 + 2 * 6 + 1, `large samples keep the first window to its bytes: ${large.most} batches outstanding`);
  assert.ok(coldFirst.most <= 2 + 2 * 6 + 1, `a cold start's first answers do not widen the window: ${coldFirst.most} batches outstanding in the first 6`);
  // The stall widened the window (its answers looked far); the first fast one undid it.
  assert.ok(cold.end <= 8, `a near link's depth is not set by a stall: ${cold.end} batches at the end (auto starts at 8; a far link's: ${small.end})`);
  // (A near link never widens: the gentle ramp's test above would see it.)
}));

test("ranks partition the epoch: 3 ranks together read every id exactly once", async () => {
  const seen: string[] = [];
  for (let rank = 0; rank < 3; rank++) {
    const loader = new Loader({ store: await setup(), ids, batchSize: 16, seed: 5, rank, worldSize: 3 });
    for await (const b of loader.epoch(2)) seen.push(...b.ids);
    await loader.close();
  }
  assert.is(seen.length, ids.length);
  assert.is(new Set(seen).size, ids.length);
  const equal = epochPlan(ids, { seed: 5, epoch: 2, rank: 0, worldSize: 3, batchSize: 16, dropLast: true });
  assert.is(equal.length % 16, 0, "dropLast gives whole batches");
  assert.is(equal.length, epochPlan(ids, { seed: 5, epoch: 2, rank: 2, worldSize: 3, batchSize: 16, dropLast: true }).length, "…the same number on every rank");
});

test("pad: every rank gets ⌈n / ranks⌉ samples, the repeats marked in their batches; without them the ranks read every id once; read workers alike", async () => {
  await setup();
  const n = ids.length; // 300: 7 ranks leave 6 to pad, 4 ranks none but a padded plan is still the same
  for (const [world, order, workers] of [[7, "ready", 0], [7, "strict", 0], [4, "ready", 0], [7, "ready", 2]] as const) {
    const real: string[] = [];
    let repeats = 0;
    const counts: number[] = [];
    for (let rank = 0; rank < world; rank++) {
      const store = workers ? `sqlite:${join(dir, "fm.sqlite")}` : await setup();
      const loader = new Loader({ store, dataset: "fm", ids, batchSize: 16, seed: 5, rank, worldSize: world, pad: true, order, workers });
      let mine = 0;
      for await (const b of loader.epoch(1)) {
        assert.ok(b.padded && b.padded.length === b.ids.length, "every batch says which samples repeat");
        b.ids.forEach((id, i) => (b.padded![i] ? repeats++ : real.push(id)));
        mine += b.ids.length;
      }
      counts.push(mine);
      await loader.close();
    }
    const what = `${world} ranks, ${order}${workers ? `, ${workers} read workers` : ""}`;
    assert.equal(counts, counts.map(() => Math.ceil(n / world)), `${what}: the same count on every rank`);
    assert.is(repeats, world * Math.ceil(n / world) - n, `${what}: the padding`);
    assert.is(real.length, n, `${what}: every id once apart from the repeats`);
    assert.is(new Set(real).size, n, `${what}: none twice`);
  }
  // Opposite asks, and a state taken without pad, are refused.
  assert.throws(() => new Loader({ store: `sqlite:${join(dir, "fm.sqlite")}`, dataset: "fm", ids, batchSize: 16, pad: true, dropLast: true }), /'pad' and 'dropLast' ask for opposite things/);
  const plain = new Loader({ store: await setup(), ids, batchSize: 16, worldSize: 7, rank: 1 });
  const st = plain.state();
  await plain.close();
  assert.throws(() => new Loader({ store: `sqlite:${join(dir, "fm.sqlite")}`, dataset: "fm", ids, batchSize: 16, worldSize: 7, rank: 1, pad: true, resume: st }), /taken with pad false: this loader has pad true/);
  const { pad: _, ...older } = st as typeof st & { pad?: boolean }; // a state from before pad existed
  const resumed = new Loader({ store: await setup(), ids, batchSize: 16, worldSize: 7, rank: 1, resume: older as typeof st });
  await resumed.close();
});

test("failures are retried and counted; after the retries, skip counts and goes on, throw names the id", async () => {
  const bad = new Set(ids.slice(0, 5));
  const recovering = flaky(await setup(), bad, 2);
  const loader = new Loader({ store: recovering, ids, batchSize: 32, retries: 3, seed: 1 });
  let n = 0;
  for await (const b of loader.epoch(0)) n += b.ids.length;
  assert.is(n, ids.length, "transient failures cost nothing");
  assert.is(loader.stats().retries, 10);
  assert.is(loader.stats().errors, 0);
  await loader.close();

  const broken = new Set(ids.slice(10, 13));
  const skipping = new Loader({ store: flaky(await setup(), broken, Infinity), ids, batchSize: 32, retries: 1, onError: "skip", seed: 1 });
  const got: string[] = [];
  for await (const b of skipping.epoch(0)) got.push(...b.ids);
  assert.is(got.length, ids.length - 3);
  assert.ok(!got.some((id) => broken.has(id)));
  assert.is(skipping.stats().errors, 3);
  await skipping.close();

  const throwing = new Loader({ store: flaky(await setup(), broken, Infinity), ids, batchSize: 32, retries: 1, seed: 1 });
  try {
    for await (const _ of throwing.epoch(0)) { /* read */ }
    assert.unreachable("should throw");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.match((e as Error).message, new RegExp(`(${[...broken].join("|")}).*injected failure 2`));
  }
  await throwing.close();

  // Strict order with skips: batch k is plan positions k·B … (k+1)·B − 1 less the broken ones;
  // a batch of nothing but broken samples is not handed over at all.
  const plan = epochPlan(ids, { seed: 4, epoch: 0, batchSize: 8 });
  const gone = new Set([...plan.slice(0, 8), plan[9], plan[17], plan[plan.length - 1]]);
  const strict = new Loader({ store: flaky(await setup(), gone, Infinity), ids, batchSize: 8, retries: 0, onError: "skip", order: "strict", seed: 4 });
  const batches: string[][] = [];
  for await (const b of strict.epoch(0)) batches.push(b.ids);
  const want: string[][] = [];
  for (let k = 0; k * 8 < plan.length; k++) {
    const part = plan.slice(k * 8, k * 8 + 8).filter((id) => !gone.has(id));
    if (part.length) want.push(part);
  }
  assert.equal(batches, want, "strict batches are the plan's, less the skipped samples");
  assert.is(strict.stats().errors, gone.size);
  assert.is(strict.stats().maxOutstanding <= 8 * 8, true, "skipped samples free their window slots");
  await strict.close();
});

test("a transform that throws (a sample that does not decode): skip leaves it out in both orders, throw names it and the epoch", async () => {
  await setup();
  const plan = epochPlan(ids, { seed: 6, epoch: 0, batchSize: 8 });
  const broken = new Set([plan[0], plan[3], plan[8], plan[plan.length - 1]]);
  // Half of them throw at once, half reject later: both paths of the loader's transform.
  const transform = (s: { id: string; data: Uint8Array }) => {
    if (!broken.has(s.id)) return s.data.length;
    if (s.id === plan[0] || s.id === plan[8]) throw new Error(`cannot decode ${s.id}`);
    return Promise.reject(new Error(`cannot decode ${s.id}`));
  };
  for (const order of ["ready", "strict"] as const) {
    const loader = new Loader({ store: await setup(), ids, batchSize: 8, seed: 6, order, onError: "skip", transform });
    for (let e = 0; e < 2; e++) {
      const batches: string[][] = [];
      for await (const b of loader.epoch(e)) batches.push(b.ids);
      const got = batches.flat();
      assert.is(got.length, ids.length - broken.size, `${order}: every other sample once`);
      assert.is(new Set(got).size, got.length);
      assert.ok(!got.some((id) => broken.has(id)), `${order}: none of the broken ones`);
      assert.is(loader.skipped(e), broken.size, `${order}: epoch ${e} counts its own`);
      const named = loader.skippedSamples(e);
      assert.equal(named.map((x) => x.id).sort(), [...broken].sort(), `${order}: epoch ${e} names the samples it left out`);
      for (const x of named) assert.is(x.reason, `cannot decode ${x.id}`, "with the error's message");
      if (order === "strict") {
        const pe = epochPlan(ids, { seed: 6, epoch: e, batchSize: 8 });
        const want = [];
        for (let k = 0; k * 8 < pe.length; k++) want.push(pe.slice(k * 8, k * 8 + 8).filter((id) => !broken.has(id)));
        assert.equal(batches, want.filter((b) => b.length), "strict batches are the plan's, less the skipped samples");
      }
    }
    assert.ok(loader.stats().errors >= 2 * broken.size, `${order}: each counted (and any read ahead)`);
    await loader.close();
  }
  const throwing = new Loader({ store: await setup(), ids, batchSize: 8, seed: 6, order: "strict", transform });
  try {
    for await (const _ of throwing.epoch(0)) { /* read */ }
    assert.unreachable("should throw");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.match((e as Error).message, new RegExp(`Cannot transform sample (${[...broken].join("|")}) of epoch 0: cannot decode`));
  } finally {
    await throwing.close();
  }
}, { timeoutMs: 60_000 });

test("a source that answers twice: the second answer is dropped and counted, in both orders", async () => {
  const doubled = new Set(ids.filter((_, i) => i % 3 === 0));
  for (const order of ["ready", "strict"] as const) {
    const loader = new Loader({ store: twice(await setup(), doubled), ids, batchSize: 16, seed: 2, order, readAhead: false });
    for (let e = 0; e < 2; e++) {
      const seen: string[] = [];
      for await (const b of loader.epoch(e)) seen.push(...b.ids);
      assert.is(seen.length, ids.length, `${order} epoch ${e}: every id`);
      assert.is(new Set(seen).size, ids.length, `${order} epoch ${e}: nothing twice`);
    }
    assert.is(loader.stats().duplicates, 2 * doubled.size, `${order}: each second answer counted`);
    await loader.close();
  }
});

test("a missing id is an error that names it; resume skips what was handed over; abort stops", async () => {
  const missing = "00000000-0000-5000-8000-000000000000";
  const loader = new Loader({ store: await setup(), ids: [...ids.slice(0, 20), missing], batchSize: 8 });
  try {
    for await (const _ of loader.epoch(0)) { /* read */ }
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, new RegExp(`Cannot find sample ${missing}`));
  }
  await loader.close();

  const full = new Loader({ store: await setup(), ids, batchSize: 25, seed: 9 });
  const it = full.epoch(0);
  const done: string[] = [];
  for (let i = 0; i < 3; i++) done.push(...(await it.next()).value!.ids);
  await it.return!();
  const rest: string[] = [];
  for await (const b of full.epoch(0, { skip: done })) rest.push(...b.ids);
  assert.is(done.length + rest.length, ids.length);
  assert.is(new Set([...done, ...rest]).size, ids.length, "resumed epoch reads the rest, once");
  await full.close();

  const ac = new AbortController();
  const aborting = new Loader({ store: delayed(await setup(), () => 5), ids, batchSize: 10, signal: ac.signal });
  let batches = 0;
  try {
    for await (const _ of aborting.epoch(0)) if (++batches === 2) ac.abort();
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /aborted/);
  }
  assert.is(batches, 2);
  await aborting.close();
});

test("bad options say what is wrong", () => {
  assert.throws(() => new Loader({ store: "sqlite:x", dataset: "d", ids: [], batchSize: 0 }), /'batchSize' must be a positive integer: current value is 0/);
  assert.throws(() => new Loader({ store: "sqlite:x", dataset: "d", ids: [], batchSize: 1, order: "random" as "ready" }), /'order'/);
  assert.throws(() => new Loader({ store: "sqlite:x", ids: [], batchSize: 1 }), /'dataset' is needed/);
  assert.throws(() => new Loader({ store: "ftp://x", ids: [], batchSize: 1 }), /Cannot use store address 'ftp:\/\/x' as its scheme is none of/);
  assert.throws(() => new Loader({ store: "ftp://x", dataset: "d", ids: [], batchSize: 1 }), /Cannot use store address 'ftp:\/\/x' as its scheme is none of/);
  assert.throws(() => new Loader({ store: "file:x", ids: [], batchSize: 1, hedge: { budget: 1.5 } }), /Cannot hedge a Loader's requests as 'budget' must be in \[0, 1\]: current value is 1\.5/);
  assert.throws(() => new Loader({ store: "file:x", ids: ["a", "b", "a"], batchSize: 1 }), /Cannot create a Loader as sample a is in 'ids' twice/);
  // Decoder options are checked here, not reported as every sample's decode error.
  assert.throws(() => new Loader({ store: "file:x", ids: [], batchSize: 1, decode: "yes" as never }), /'decode' must be true, false, "hybrid", "gpu" or the decoder's options: current value is yes/);
  assert.throws(() => new Loader({ store: "file:x", ids: [], batchSize: 1, decode: { grey: "yes" as never } }), /'grey' must be true or false/);
  assert.throws(() => new Loader({ store: "file:x", ids: [], batchSize: 1, decode: { scale: 3 as never } }), /'scale' must be 1, 0\.5, 0\.25 or 0\.125: current value is 3/);
  assert.throws(() => epochPlan(["a"], { seed: 0, epoch: 0, batchSize: 1, rank: 3, worldSize: 2 }), /'rank' must be in 0..1/);
});

test("prefetch auto deepens the window when the consumer starves, within maxPrefetch", () => withVirtualTime(async (delayed) => {
  // A 30 ms link (on the sources' clock: however late real timers fire): 2 batches of 10 are far too shallow.
  const rec = recording(delayed(await setup(), () => 30));
  const loader = new Loader({ store: rec, ids, batchSize: 5, prefetch: "auto", maxPrefetch: 12, rampStart: 2, seed: 4 });
  for (let e = 0; e < 2; e++) {
    let n = 0;
    for await (const b of loader.epoch(e)) n += b.ids.length;
    assert.is(n, ids.length);
  }
  const s = loader.stats();
  assert.ok(s.prefetch > 8 && s.prefetch <= 12, `window grew from 8 toward 12: ${s.prefetch}`);
  assert.ok(rec.maxInFlight <= 12 * 5, `never more than maxPrefetch batches in flight: ${rec.maxInFlight}`);
  await loader.close();
}));

test("readAhead: the next epoch is requested during this one's tail, within one window, and delivered exactly once", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const rec = recording(delayed(await setup(), () => 1 + r() * 4));
  const B = 10, prefetch = 4;
  const loader = new Loader({ store: rec, ids, batchSize: B, prefetch, seed, readAhead: true, order: seed % 2 ? "strict" : "ready" });
  for (let e = 0; e < 3; e++) {
    const seen: string[] = [];
    const plan = epochPlan(ids, { seed, epoch: e, batchSize: B });
    let k = 0;
    for await (const b of loader.epoch(e)) {
      seen.push(...b.ids);
      if (loader.options.order === "strict") assert.equal(b.ids, plan.slice(k * B, (k + 1) * B), `strict batch ${k} of epoch ${e} (seed ${seed})`);
      k++;
    }
    assert.is(seen.length, ids.length, `epoch ${e} (seed ${seed})`);
    assert.is(new Set(seen).size, ids.length, `no duplicates in epoch ${e} (seed ${seed})`);
    // The epoch has ended and nothing of the next was asked for by the caller yet: the next
    // epoch's first samples are already requested.
    assert.ok(rec.requests.length > (e + 1) * ids.length, `epoch ${e + 1} read ahead: ${rec.requests.length - (e + 1) * ids.length} requested`);
  }
  assert.ok(rec.maxInFlight <= prefetch * B, `one window bounds both epochs: ${rec.maxInFlight} in flight`);
  const s = loader.stats();
  assert.ok(s.maxOutstanding <= prefetch * B, `outstanding ${s.maxOutstanding}`);
  assert.ok(s.readAhead > 0 && s.readAheadDropped === 0, JSON.stringify(s));
  await loader.close();
  assert.is(loader.stats().readAheadDropped, 0, "close() drops the last read-ahead without counting it as used");
});

test("readAhead: default 'auto' starts after two epochs in sequence; a different epoch or a resume drops it", async () => {
  const rec = recording(await setup());
  const loader = new Loader({ store: rec, ids, batchSize: 16, prefetch: 3, seed: 9 });
  const drain = async (e: number, skip?: string[]) => {
    const seen: string[] = [];
    for await (const b of loader.epoch(e, { skip })) seen.push(...b.ids);
    return seen;
  };
  assert.is((await drain(0)).length, ids.length);
  assert.is(rec.requests.length, ids.length, "the first epoch does not read ahead");
  assert.is((await drain(1)).length, ids.length);
  assert.ok(rec.requests.length > 2 * ids.length, "epoch 1 follows epoch 0: it reads epoch 2 ahead");
  // A resume of epoch 2 (some ids already handed over) does not use what was read ahead.
  const done = epochPlan(ids, { seed: 9, epoch: 2, batchSize: 16 }).slice(0, 20);
  const resumed = await drain(2, done);
  assert.is(resumed.length, ids.length - 20);
  assert.ok(resumed.every((id) => !done.includes(id)), "skipped ids are not read again");
  assert.is(new Set(resumed).size, resumed.length);
  assert.ok(loader.stats().readAheadDropped > 0, "the read-ahead was dropped");
  // Jumping to another epoch also drops it, and delivers that epoch exactly once.
  const jumped = await drain(7);
  assert.is(new Set(jumped).size, ids.length);
  const off = new Loader({ store: recording(await setup()), ids, batchSize: 16, readAhead: false });
  for (const e of [0, 1, 2]) for await (const _ of off.epoch(e));
  assert.is(off.stats().readAhead + off.stats().readAheadDropped, 0, "readAhead: false never reads ahead");
  await off.close();
  await loader.close();
});

test("prefetch auto does not deepen for a consumer that starves for CPU, not data: one probe of 25 %, which does not pay, then none", () => withVirtualTime(async (_, spend) => {
  // Answers come at once, but the consumer holds the thread 20 ms per batch: when it asks again
  // the answers are still unprocessed, so it finds nothing ready with the window full. A deeper
  // window cannot help. On the virtual clock its step is 20 ms exactly (real time also passes:
  // the spin is what keeps the answers unprocessed), so the rate taken is a batch per 20 ms
  // with any depth, and the first probe (8 → 10 batches) is judged not to pay. On the real
  // clock, a machine busy with other tests made probes pass on noise, up to 60 batches.
  const loader = new Loader({ store: await setup(), ids, batchSize: 5, prefetch: "auto", maxPrefetch: 60, seed: 2 });
  for (let e = 0; e < 6; e++) {
    for await (const _ of loader.epoch(e)) {
      const until = performance.now() + 20;
      while (performance.now() < until);
      spend(20);
    }
  }
  assert.is(loader.stats().prefetch, 10, "8 batches, one probe of a quarter more, and no more");
  await loader.close();
}));

/**
 * One epoch (batches of 10, a window of 4) from a source whose first answer for each id in
 * `stuck` takes `stuckMs` (2 ms otherwise), with the epoch tail's re-asks on: how many stuck
 * first attempts had answered when the epoch ended (none, if the re-asks carried it: the order
 * of events, not a duration), the loader's stats, and how often each id was asked for.
 */
async function readPastStuck(order: "ready" | "strict", seed: number, stuck: Set<string>, stuckMs: number) {
  const attempts = new Map<string, number>();
  let stuckAnswered = 0;
  const src = delayed(await setup(), (id) => {
    const n = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, n);
    if (!(stuck.has(id) && n === 1)) return 2;
    setTimeout(() => stuckAnswered++, stuckMs); // due with the answer (just before delayed delivers it)
    return stuckMs;
  });
  const loader = new Loader({ store: src, ids, batchSize: 10, prefetch: 4, seed, order, reaskTail: true });
  const seen: string[] = [];
  for await (const b of loader.epoch(0)) seen.push(...b.ids);
  const stuckAnsweredAtEnd = stuckAnswered;
  assert.is(seen.length, ids.length, `${order} (seed ${seed})`);
  assert.is(new Set(seen).size, ids.length, `${order}: no duplicates (seed ${seed})`);
  const stats = loader.stats();
  await loader.close();
  return { stuckAnsweredAtEnd, stats, attempts };
}

test("mid-epoch: a window full of samples stuck far longer than usual (congestion that moved onto their connection) is asked again while the consumer waits, exactly once each", async () => {
  const seed = freshSeed();
  await setup(); // the ids
  for (const order of ["ready", "strict"] as const) {
    const plan = epochPlan(ids, { seed, epoch: 0, batchSize: 10 });
    const stuck = new Set(plan.slice(20, 60)); // the window's whole depth, right after the first 2 batches
    assert.is(stuck.size, 40);
    const { stuckAnsweredAtEnd, stats, attempts } = await readPastStuck(order, seed, stuck, 4000);
    assert.is(stuckAnsweredAtEnd, 0, `${order}: the epoch ended before any stuck first request answered`);
    assert.ok(stats.reasked >= stuck.size / 2, `${order}: the stuck samples were asked again: ${stats.reasked}`);
    assert.ok([...stuck].every((id) => (attempts.get(id) ?? 0) <= 2), `${order}: none asked more than twice`);
  }
});

test("epoch tail: a sample stuck far longer than usual is asked again once the rest is in; the first answer wins, exactly once", async () => {
  const seed = freshSeed();
  await setup(); // the ids
  for (const order of ["ready", "strict"] as const) {
    const plan = epochPlan(ids, { seed, epoch: 0, batchSize: 10 });
    const stuck = new Set(plan.slice(-3)); // among the last requested: nothing else to wait for
    const { stuckAnsweredAtEnd, stats, attempts } = await readPastStuck(order, seed, stuck, 4000);
    assert.ok(stats.reasked >= 3 && stats.reasked <= 6, `${order}: the 3 stuck samples were asked again: ${stats.reasked}`);
    assert.is(stuckAnsweredAtEnd, 0, `${order}: the epoch ended before any stuck first request answered`);
    assert.ok([...stuck].every((id) => attempts.get(id) === 2), `${order}: each stuck sample asked exactly twice`);
  }
});
