/**
 * HedgeSource around a real SQLite source, with chosen first attempts made slow: a request
 * past its deadline is asked again, the first answer wins, the late one is dropped, each
 * fetch is answered exactly once; the budget caps hedges; the deadline follows the observed
 * latencies; a failed attempt waits for the other; bad options are named.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { openSource, openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { HedgeSource } from "../../src/read/hedge.ts";
import type { Fetched, Source } from "../../src/source/source.ts";
import type { Store } from "../../src/dataset/store.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-hedge-"));
const store: Store = await openStore(`sqlite:${join(dir, "fm.sqlite")}`);
await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 100 });
const ids: string[] = [];
for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The real source, with the n-th attempt at each id delayed by `delay(id, n)` ms (n from 1). */
function attempts(inner: Source, delay: (id: string, n: number) => number, fail?: (id: string, n: number) => boolean): Source & { count: Map<string, number> } {
  const count = new Map<string, number>();
  return {
    name: inner.name,
    count,
    fetch(id, done) {
      const n = (count.get(id) ?? 0) + 1;
      count.set(id, n);
      return inner.fetch(id, (e, s) =>
        setTimeout(() => done(fail?.(id, n) ? Object.assign(new Error(`injected failure ${n} of ${id}`), { code: "ECONNRESET" }) : e, s), delay(id, n)));
    },
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => Promise.resolve(),
  };
}

/** Fetches `list` at once; resolves `settle` ms after the last answer, so late ones land first. */
function fetchAll(src: Source, list: string[], settle = 100): Promise<{ answers: Map<string, number>; samples: Fetched[]; at: Map<string, number> }> {
  const answers = new Map<string, number>();
  const at = new Map<string, number>();
  const samples: Fetched[] = [];
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    let left = list.length;
    for (const id of list) {
      src.fetch(id, (e, s) => {
        answers.set(id, (answers.get(id) ?? 0) + 1);
        at.set(id, performance.now() - t0);
        if (e) return reject(e);
        samples.push(s!);
        if (--left === 0) setTimeout(() => resolve({ answers, samples, at }), settle);
      });
    }
  });
}

test("a slow first attempt is hedged; the hedge wins, the late answer is dropped, every fetch answered once", async () => {
  const slow = new Set(ids.slice(0, 3));
  const inner = attempts(await openSource(store, "fm"), (id, n) => (slow.has(id) && n === 1 ? 600 : 1));
  const src = new HedgeSource(inner, { warmup: 20, minDelayMs: 20 });
  const { answers, samples } = await fetchAll(src, ids, 650);
  assert.is(samples.length, ids.length);
  assert.ok([...answers.values()].every((n) => n === 1), "each fetch answered exactly once");
  assert.is(new Set(samples.map((s) => s.id)).size, ids.length);
  assert.is(src.hedged, 3, "the three slow ones, nothing else");
  // The hedges' answers came first: none waited out its 600 ms (when it came is a timer's accuracy, not asserted).
  assert.is(src.hedgeWins, 3);
  for (const id of slow) assert.is(inner.count.get(id), 2);
  assert.ok(src.hedged <= 0.05 * src.requests);
  await src.close();
});

test("the budget: with everything late, at most 5 % of requests are hedged", async () => {
  const inner = attempts(await openSource(store, "fm"), () => 30);
  const src = new HedgeSource(inner, { delayMs: 0 });
  const { samples } = await fetchAll(src, ids);
  assert.is(samples.length, ids.length);
  assert.is(src.requests, ids.length);
  assert.ok(src.hedged > 0, "some were hedged");
  assert.ok(src.hedged <= 0.05 * ids.length, `hedged ${src.hedged} of ${ids.length}`);
  const custom = new HedgeSource(attempts(await openSource(store, "fm"), () => 30), { delayMs: 0, budget: 0 });
  await fetchAll(custom, ids.slice(0, 50));
  assert.is(custom.hedged, 0, "budget 0: never");
  await src.close();
  await custom.close();
});

test("the tail trigger: while urged, a request far slower than the median is asked again once, outside the budget; never when not urged", async () => {
  const stuck = new Set(ids.slice(-4));
  const delay = (id: string, n: number) => (stuck.has(id) && n === 1 ? 900 : 2);
  // Not urged (and no quantile hedging: budget 0): the stuck ones wait out their 900 ms.
  const calm = new HedgeSource(attempts(await openSource(store, "fm"), delay), { budget: 0 });
  const t0 = performance.now();
  await fetchAll(calm, ids, 0);
  assert.ok(performance.now() - t0 >= 880, "answered before the stuck requests did");
  assert.is(calm.reasked + calm.hedged, 0);
  await calm.close();
  // Urged once the rest is in: asked again after ~3 × the median (2 ms) + 100 ms.
  const inner = attempts(await openSource(store, "fm"), delay);
  const src = new HedgeSource(inner, { budget: 0 });
  const done = fetchAll(src, ids, 950);
  setTimeout(() => src.urge(true), 50);
  const { answers, samples } = await done;
  assert.is(samples.length, ids.length);
  assert.ok([...answers.values()].every((n) => n === 1), "each fetch answered exactly once (the late first answers dropped)");
  assert.is(src.reasked, 4, "the four stuck ones, nothing else");
  assert.is(src.reaskWins, 4, "the re-asks' answers came first: none waited out its 900 ms");
  assert.is(src.hedged, 0, "the tail trigger is not the budgeted one");
  for (const id of stuck) {
    assert.is(inner.count.get(id), 2, `${id} asked exactly twice`);
  }
  assert.ok(src.tailDeadline() >= 100, `the tail deadline keeps 100 ms over the median: ${src.tailDeadline()}`);
  src.urge(false);
  await src.close();
});

test("the deadline is the p95 of observed latencies × factor, with a floor; before the warm-up, none", async () => {
  let clock = 0;
  let i = 0;
  // Each answer "takes" i ms on the injected clock: the clock moves when the store answers.
  const inner = attempts(await openSource(store, "fm"), () => ((clock += i), 1));
  // budget 0: a hedge would move the clock again; only the deadline is under test here.
  const src = new HedgeSource(inner, { now: () => clock, warmup: 10, factor: 2, minDelayMs: 5, budget: 0 });
  assert.is(src.deadline(), undefined);
  for (i = 1; i <= 74; i++) {
    await new Promise<void>((r) => src.fetch(ids[i], () => r()));
    if (i === 9) assert.is(src.deadline(), undefined, "9 latencies: still warming up");
    if (i === 10) assert.is(src.deadline(), 20, "from 1…10 ms: p95 10 × 2");
  }
  // Recomputed every 64 answers: from 1…74 ms, p95 is the sorted [floor(0.95 × 74)] = 71, × 2.
  assert.is(src.deadline(), 142);
  const floor = new HedgeSource(inner, { now: () => 0, warmup: 1, minDelayMs: 15 });
  await new Promise<void>((r) => floor.fetch(ids[0], () => r()));
  assert.is(floor.deadline(), 15, "an instant store still waits for the floor");
});

test("a failed attempt waits for the other; both failing gives one error", async () => {
  const id = ids[5];
  const inner = attempts(await openSource(store, "fm"), (_, n) => (n === 1 ? 200 : 5), (_, n) => n === 1);
  const src = new HedgeSource(inner, { delayMs: 20, budget: 1 });
  const got = await new Promise<[Error | null, Fetched | undefined]>((r) => src.fetch(id, (e, s) => r([e, s])));
  assert.is(got[0], null);
  assert.is(got[1]!.id, id);
  const both = new HedgeSource(attempts(await openSource(store, "fm"), (_, n) => (n === 1 ? 60 : 5), () => true), { delayMs: 20, budget: 1 });
  let calls = 0;
  const err = await new Promise<Error | null>((r) => both.fetch(id, (e) => (calls++, r(e))));
  await new Promise((r) => setTimeout(r, 100));
  assert.match(err!.message, /injected failure/);
  assert.is(calls, 1);
  await src.close();
  await both.close();
});

test("bad options are named", async () => {
  const inner = await openSource(store, "fm");
  assert.throws(() => new HedgeSource(inner, { budget: 2 }), /Cannot hedge requests to .* as 'budget' must be in \[0, 1\]: current value is 2/);
  assert.throws(() => new HedgeSource(inner, { quantile: 0 }), /'quantile' must be in \(0, 1\]: current value is 0/);
  assert.throws(() => new HedgeSource(inner, { history: 0 }), /'history' must be a positive integer/);
});
