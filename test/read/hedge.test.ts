/**
 * HedgeSource around a real SQLite source, with chosen first attempts made slow: a request
 * past its deadline is asked again, the first answer wins, the late one is dropped, each
 * fetch is answered exactly once; the budget caps hedges; the deadline follows the observed
 * latencies; a failed attempt waits for the other; bad options are named. The delays and the
 * hedger's timers run on a ManualClock (test/_support/clock.ts): when each request is asked
 * again and answered is asserted to the millisecond, and no test sleeps through a delay.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { openSource, openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { HedgeSource } from "../../src/read/hedge.ts";
import { ManualClock } from "../_support/clock.ts";
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

/**
 * The real source, with the n-th attempt at each id answered `delay(id, n)` ms after it was
 * asked (n from 1) on `clock`: the clock stands still while the store answers (`settle` waits
 * for that), so the delays are exact however loaded the machine.
 */
function attempts(inner: Source, clock: ManualClock, delay: (id: string, n: number) => number, fail?: (id: string, n: number) => boolean): Source & { count: Map<string, number>; settle: () => Promise<void> } {
  const count = new Map<string, number>();
  let reading = 0; // asked of the store, not yet answered by it
  return {
    name: inner.name,
    count,
    fetch(id, done) {
      const n = (count.get(id) ?? 0) + 1;
      count.set(id, n);
      reading++;
      return inner.fetch(id, (e, s) => {
        reading--;
        clock.setTimeout(() => done(fail?.(id, n) ? Object.assign(new Error(`injected failure ${n} of ${id}`), { code: "ECONNRESET" }) : e, s), delay(id, n));
      });
    },
    async settle() {
      while (reading > 0) await new Promise((r) => setTimeout(r, 1));
    },
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => Promise.resolve(),
  };
}

/** Moves `clock` on by `ms`, timer by timer, letting the store answer what each asked before the next. */
async function advance(clock: ManualClock, inner: { settle: () => Promise<void> }, ms: number): Promise<void> {
  const end = clock.now() + ms;
  for (let steps = 0; ; steps++) {
    if (steps > 10_000) throw new Error(`over 10 000 timers at ${clock.now()} ms: a timer loop`);
    await inner.settle();
    const next = clock.next();
    if (next === undefined || next > end) break;
    clock.advanceTo(next);
  }
  clock.advanceTo(end);
}

/** Fetches `list` at once; the answers, the samples and when (on the clock) each id was answered. */
function fetchAll(src: Source, clock: ManualClock, list: string[]): { answers: Map<string, number>; samples: Fetched[]; at: Map<string, number>; errors: Error[] } {
  const answers = new Map<string, number>(), at = new Map<string, number>();
  const samples: Fetched[] = [], errors: Error[] = [];
  for (const id of list) {
    src.fetch(id, (e, s) => {
      answers.set(id, (answers.get(id) ?? 0) + 1);
      at.set(id, clock.now());
      if (e) errors.push(e);
      else samples.push(s!);
    });
  }
  return { answers, samples, at, errors };
}

test("a slow first attempt is hedged at the deadline; the hedge wins, the late answer is dropped, every fetch answered once", async () => {
  const clock = new ManualClock();
  const slow = new Set(ids.slice(0, 3));
  const inner = attempts(await openSource(store, "fm"), clock, (id, n) => (slow.has(id) && n === 1 ? 600 : 1));
  const src = new HedgeSource(inner, { warmup: 20, minDelayMs: 20, clock });
  const { answers, samples, at, errors } = fetchAll(src, clock, ids);
  await advance(clock, inner, 700); // past the slow first answers: they come, and are dropped
  assert.is(errors.length, 0);
  assert.is(samples.length, ids.length);
  assert.ok([...answers.values()].every((n) => n === 1), "each fetch answered exactly once");
  assert.is(new Set(samples.map((s) => s.id)).size, ids.length);
  // 1 ms answers: the deadline is the floor, 20 ms; each hedge is asked at 20 and answers at 21.
  assert.is(src.deadline(), 20);
  assert.is(src.hedged, 3, "the three slow ones, nothing else");
  assert.is(src.hedgeWins, 3);
  for (const id of slow) {
    assert.is(inner.count.get(id), 2);
    assert.is(at.get(id), 21, `${id}: answered by its hedge, asked at the deadline (20 ms) and 1 ms away, not after its first attempt's 600 ms`);
  }
  for (const id of ids) if (!slow.has(id)) assert.is(at.get(id), 1);
  await src.close();
  assert.is(clock.pending, 0, "closed: no timer left");
});

test("the budget: with everything late, exactly 5 % of requests are hedged; budget 0, none", async () => {
  const clock = new ManualClock();
  const inner = attempts(await openSource(store, "fm"), clock, () => 30);
  const src = new HedgeSource(inner, { delayMs: 0, clock });
  const { samples } = fetchAll(src, clock, ids);
  await advance(clock, inner, 100);
  assert.is(samples.length, ids.length);
  assert.is(src.requests, ids.length);
  assert.is(src.hedged, 0.05 * ids.length, "every request is past a 0 ms deadline: the budget, and no more");
  const none = attempts(await openSource(store, "fm"), clock, () => 30);
  const custom = new HedgeSource(none, { delayMs: 0, budget: 0, clock });
  fetchAll(custom, clock, ids.slice(0, 50));
  await advance(clock, none, 100);
  assert.is(custom.hedged, 0, "budget 0: never");
  await src.close();
  await custom.close();
});

test("the tail trigger: while urged, a request far slower than the median is asked again once, at 3 × the median + 100 ms, outside the budget; never when not urged", async () => {
  const stuck = new Set(ids.slice(-4));
  const delay = (id: string, n: number) => (stuck.has(id) && n === 1 ? 900 : 2);
  // Not urged (and no quantile hedging: budget 0): the stuck ones wait out their 900 ms.
  const clock = new ManualClock();
  const calmInner = attempts(await openSource(store, "fm"), clock, delay);
  const calm = new HedgeSource(calmInner, { budget: 0, clock });
  const waited = fetchAll(calm, clock, ids);
  await advance(clock, calmInner, 1000);
  assert.is(waited.samples.length, ids.length);
  for (const id of stuck) assert.is(waited.at.get(id), 900, `${id}: not urged, answered by its only attempt`);
  assert.is(calm.reasked + calm.hedged, 0);
  await calm.close();
  // Urged at 50 ms, once the rest is in: asked again at 3 × the median (2 ms) + 100 ms = 102 ms.
  const t0 = clock.now();
  const inner = attempts(await openSource(store, "fm"), clock, delay);
  const src = new HedgeSource(inner, { budget: 0, clock });
  const { answers, samples, at } = fetchAll(src, clock, ids);
  await advance(clock, inner, 50);
  assert.is(samples.length, ids.length - stuck.size, "all but the stuck ones answered");
  src.urge(true);
  await advance(clock, inner, 950);
  assert.is(samples.length, ids.length);
  assert.ok([...answers.values()].every((n) => n === 1), "each fetch answered exactly once (the late first answers dropped)");
  assert.is(src.reasked, 4, "the four stuck ones, nothing else");
  assert.is(src.reaskWins, 4);
  for (const id of stuck) {
    assert.is(inner.count.get(id), 2, `${id} asked exactly twice`);
    assert.is(at.get(id)! - t0, 104, `${id}: re-asked at 102 ms, answered 2 ms later, not at its first attempt's 900 ms`);
  }
  assert.is(src.hedged, 0, "the tail trigger is not the budgeted one");
  assert.is(src.tailDeadline(), 102, "the tail deadline keeps 100 ms over the median");
  src.urge(false);
  await src.close();
  assert.is(clock.pending, 0);
});

test("the deadline is the p95 of observed latencies × factor, with a floor; before the warm-up, none", async () => {
  const clock = new ManualClock();
  let i = 0;
  const inner = attempts(await openSource(store, "fm"), clock, () => i);
  // budget 0: only the deadline is under test here.
  const src = new HedgeSource(inner, { clock, warmup: 10, factor: 2, minDelayMs: 5, budget: 0 });
  assert.is(src.deadline(), undefined);
  for (i = 1; i <= 74; i++) {
    let answered = false;
    src.fetch(ids[i], () => (answered = true));
    await advance(clock, inner, i); // the i-th answer takes i ms
    assert.ok(answered);
    if (i === 9) assert.is(src.deadline(), undefined, "9 latencies: still warming up");
    if (i === 10) assert.is(src.deadline(), 20, "from 1…10 ms: p95 10 × 2");
  }
  // Recomputed every 64 answers: from 1…74 ms, p95 is the sorted [floor(0.95 × 74)] = 71, × 2.
  assert.is(src.deadline(), 142);
  i = 0;
  const floor = new HedgeSource(inner, { clock, warmup: 1, minDelayMs: 15 });
  floor.fetch(ids[0], () => {});
  await advance(clock, inner, 0);
  assert.is(floor.deadline(), 15, "an instant store still waits for the floor");
  await src.close();
  await floor.close();
});

test("a failed attempt waits for the other; both failing gives one error, when the last one fails", async () => {
  const clock = new ManualClock();
  const id = ids[5];
  const inner = attempts(await openSource(store, "fm"), clock, (_, n) => (n === 1 ? 200 : 5), (_, n) => n === 1);
  const src = new HedgeSource(inner, { delayMs: 20, budget: 1, clock });
  const one = fetchAll(src, clock, [id]);
  await advance(clock, inner, 300);
  assert.is(one.errors.length, 0, "the hedge (asked at 20 ms) answered at 25, before the first attempt failed at 200");
  assert.is(one.samples[0].id, id);
  assert.is(one.at.get(id), 25);
  const t0 = clock.now();
  const bothInner = attempts(await openSource(store, "fm"), clock, (_, n) => (n === 1 ? 60 : 5), () => true);
  const both = new HedgeSource(bothInner, { delayMs: 20, budget: 1, clock });
  const two = fetchAll(both, clock, [id]);
  await advance(clock, bothInner, 100);
  assert.is(two.answers.get(id), 1, "one answer");
  assert.match(two.errors[0].message, /injected failure 1 of/, "the error of the attempt that failed last");
  assert.is(two.at.get(id)! - t0, 60, "the hedge failed at 25 ms; the first attempt still had its chance, until 60");
  await src.close();
  await both.close();
});

test("bad options are named", async () => {
  const inner = await openSource(store, "fm");
  assert.throws(() => new HedgeSource(inner, { budget: 2 }), /Cannot hedge requests to .* as 'budget' must be in \[0, 1\]: current value is 2/);
  assert.throws(() => new HedgeSource(inner, { quantile: 0 }), /'quantile' must be in \(0, 1\]: current value is 0/);
  assert.throws(() => new HedgeSource(inner, { history: 0 }), /'history' must be a positive integer/);
});
