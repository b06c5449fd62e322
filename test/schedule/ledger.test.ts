/**
 * The exactly-once ledger on its own (src/schedule/ledger.ts): random sequences of requests,
 * arrivals (duplicates among them) and give-ups against a plain model of what each plan
 * position went through; and the misuses it refuses.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { assertUnique, Ledger } from "../../src/schedule/ledger.ts";

test("random requests, arrivals, duplicates and give-ups: each position is delivered or skipped once, the counts are the model's", () => {
  for (let round = 0; round < 20; round++) {
    const seed = freshSeed();
    const next = rng(seed);
    const n = randomInt(next, 1, 300);
    const ledger = new Ledger(n);
    const model: ("planned" | "requested" | "delivered" | "skipped")[] = new Array(n).fill("planned");
    let duplicates = 0, at = 0;
    const pick = (state: string) => {
      const some = model.flatMap((s, i) => (s === state ? [i] : []));
      return some.length ? some[randomInt(next, 0, some.length - 1)] : -1;
    };
    for (let step = 0; step < 4 * n; step++) {
      const what = next();
      if (what < 0.3 && at < n) {
        // A range asked at once (a packet read), or one position.
        const to = next() < 0.5 ? Math.min(n, at + randomInt(next, 1, 16)) : at + 1;
        if (to - at === 1) ledger.requested(at);
        else ledger.requestRange(at, to);
        for (let p = at; p < to; p++) model[p] = "requested";
        at = to;
      } else if (what < 0.65) {
        const p = pick("requested");
        if (p < 0) continue;
        assert.ok(ledger.isPending(p), `position ${p} pending before it arrives (seed ${seed})`);
        assert.is(ledger.deliver(p), true, `the first arrival of ${p} counts (seed ${seed})`);
        model[p] = "delivered";
      } else if (what < 0.8) {
        // A second answer (hedge, retry): dropped, counted.
        const p = pick("delivered");
        if (p < 0) continue;
        assert.is(ledger.deliver(p), false, `a duplicate of ${p} does not count (seed ${seed})`);
        duplicates++;
      } else {
        // Given up on: in flight, or arrived and then failed its transform.
        const p = next() < 0.5 ? pick("requested") : pick("delivered");
        if (p < 0) continue;
        assert.is(ledger.skip(p), true);
        model[p] = "skipped";
        assert.ok(ledger.isSkipped(p) && !ledger.isPending(p));
        assert.is(ledger.skip(p), false, "skipping twice counts once");
      }
      const count = (s: string) => model.filter((x) => x === s).length;
      assert.is(ledger.delivered, count("delivered"), `delivered (seed ${seed})`);
      assert.is(ledger.skipped, count("skipped"), `skipped (seed ${seed})`);
      assert.is(ledger.duplicates, duplicates);
      assert.is(ledger.complete(), count("delivered") + count("skipped") === n, `complete (seed ${seed})`);
    }
    assert.is(ledger.size, n);
  }
});

test("misuses are refused: a position requested twice, one that arrives unrequested; ids named twice", () => {
  const ledger = new Ledger(10);
  ledger.requestRange(0, 4);
  assert.throws(() => ledger.requested(2), /position 2 requested twice/);
  assert.throws(() => ledger.requestRange(3, 6), /position 3 requested twice/);
  assert.not.ok(ledger.isPending(5), "a refused range requests none of it");
  assert.throws(() => ledger.deliver(7), /position 7 arrived but was never requested/);
  assert.throws(() => ledger.deliver(12), /position 12 arrived but was never requested/);
  assert.is(ledger.skip(8), false, "a position never requested is not skipped");
  assertUnique(["a", "b", "c"], "Cannot start");
  assert.throws(() => assertUnique(["a", "b", "a"], "Cannot start"), /Cannot start as sample a is in 'ids' twice/);
});
