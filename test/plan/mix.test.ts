/**
 * Mixing parts by weight or count (src/plan/mix.ts, NOTE [ Mixing ]): the counts follow the
 * weights exactly, every batch holds the parts in proportion (chi-square), a part's samples do
 * not repeat within a cycle, and bad mixes are named.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { partIndex, mixCounts, mixOrder, partShare } from "../../src/plan/mix.ts";
import { CassetteError } from "../../src/errors.ts";

const part = (name: string, n: number, extra: { weight?: number; count?: number } = {}) => ({ name, ids: Array.from({ length: n }, (_, i) => `${name}-${i}`), ...extra });
const partOf = (id: string) => id.slice(0, id.indexOf("-"));

/** Pearson's chi-square of `observed` against `expected` counts. */
function chiSquare(observed: number[], expected: number[]): number {
  return observed.reduce((s, o, i) => s + (expected[i] > 0 ? (o - expected[i]) ** 2 / expected[i] : 0), 0);
}
/** χ² critical values at p = 0.001 for 1…5 degrees of freedom. */
const CRITICAL = [10.83, 13.82, 16.27, 18.47, 20.52];

test("the counts: weights share the epoch exactly, fixed counts stay, the default epoch repeats no sample", () => {
  assert.equal(mixCounts([part("a", 100, { weight: 1 }), part("b", 1000, { weight: 3 })], 0), [100, 300]);
  assert.equal(mixCounts([part("a", 100, { weight: 1 }), part("b", 1000, { weight: 3 })], 0, 200), [50, 150]);
  assert.equal(mixCounts([part("a", 100, { count: 10 }), part("b", 1000), part("c", 50)], 0, 110), [10, 50, 50]);
  const odd = mixCounts([part("a", 100), part("b", 100), part("c", 100)], 7, 100);
  assert.is(odd.reduce((a, b) => a + b, 0), 100, "largest remainder gives the whole epoch");
  assert.ok(odd.every((c) => c === 33 || c === 34), `${odd}`);
});

test("every batch holds the parts in proportion (chi-square at p = 0.001), every epoch exactly; fresh parts and weights", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 20; round++) {
    const k = randomInt(next, 2, 5);
    const parts = Array.from({ length: k }, (_, i) => part(`p${i}`, randomInt(next, 50, 3000), { weight: 0.2 + next() * 5 }));
    const epoch = randomInt(next, 0, 30);
    const order = mixOrder(parts, { seed, epoch });
    const counts = mixCounts(parts, seed);
    const total = counts.reduce((a, b) => a + b, 0);
    assert.is(order.length, total);
    assert.is(new Set(order).size, total, `seed ${seed}: no id twice in an epoch`);
    const names = parts.map((p) => p.name);
    const tally = (ids: string[]) => names.map((n) => ids.filter((id) => partOf(id) === n).length);
    assert.equal(tally(order), counts, `seed ${seed}: the epoch holds each part's count`);
    const batch = randomInt(next, 32, 256);
    for (let b = 0; b + batch <= order.length; b += batch) {
      const got = tally(order.slice(b, b + batch));
      const expected = counts.map((c) => (c / total) * batch);
      const x2 = chiSquare(got, expected);
      assert.ok(x2 < CRITICAL[k - 2], `seed ${seed}, round ${round}: batch at ${b} holds ${got} where ${expected.map((e) => e.toFixed(1))} are expected (χ² ${x2.toFixed(2)})`);
    }
  }
});

test("with ranks, each rank's stride holds the parts in proportion too: every batch of every rank within 2 of each part's share", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 20; round++) {
    const ranks = randomInt(next, 2, 8), k = randomInt(next, 2, 4);
    const parts = Array.from({ length: k }, (_, i) => part(`p${i}`, randomInt(next, 100, 2000), { weight: 0.5 + next() * 3 }));
    const order = mixOrder(parts, { seed, epoch: round, ranks });
    const counts = mixCounts(parts, seed), total = order.length;
    const names = parts.map((p) => p.name);
    for (let rank = 0; rank < ranks; rank++) {
      const mine = order.filter((_, i) => i % ranks === rank);
      const batch = 32;
      for (let b = 0; b + batch <= mine.length - k * ranks; b += batch) { // the epoch's last runs are the parts' remainders
        const got = names.map((n) => mine.slice(b, b + batch).filter((id) => partOf(id) === n).length);
        const expected = counts.map((c) => (c / total) * batch);
        // Stratified, a part's count in a batch is within 2 of its share; drawn at random (a
        // stride over samples interleaved one by one) it strays further (sd ≈ 2.8 at 50 %).
        const off = Math.max(...got.map((g, i) => Math.abs(g - expected[i])));
        assert.ok(off <= 2.5, `seed ${seed}, round ${round}: rank ${rank} of ${ranks}, batch at ${b}: ${got} where ${expected.map((e) => e.toFixed(1))}`);
      }
    }
  }
});

test("a part's samples do not repeat within a cycle, and every cycle is another permutation", () => {
  const seed = freshSeed();
  const p = part("a", 103);
  const count = 20; // ⌊103 / 20⌋ = 5 epochs a cycle, 3 samples left out of each
  const cycle = (c: number) => Array.from({ length: 5 }, (_, e) => partShare(p, 0, count, seed, c * 5 + e)).flat();
  for (const c of [0, 1, 2]) assert.is(new Set(cycle(c)).size, 100, `seed ${seed}: cycle ${c} repeats nothing`);
  assert.not.equal(cycle(0), cycle(1), "each cycle draws its own permutation");
  assert.equal(mixOrder([p, part("b", 40)], { seed, epoch: 3 }), mixOrder([p, part("b", 40)], { seed, epoch: 3 }), "a pure value");
  assert.not.equal(mixOrder([p, part("b", 40)], { seed, epoch: 3 }), mixOrder([p, part("b", 40)], { seed, epoch: 4 }));
});

test("bad mixes are named", () => {
  const refuse = (f: () => unknown, re: RegExp) => {
    try {
      f();
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.match((e as Error).message, re);
      return;
    }
    assert.unreachable(`should refuse: ${re}`);
  };
  refuse(() => mixCounts([], 0), /'mix' must list at least one part/);
  refuse(() => mixCounts([part("a", 10, { count: 11 })], 0), /a's 'count' must be a whole number from 0 to its 10 samples: current value is 11/);
  refuse(() => mixCounts([part("a", 10, { count: 1, weight: 2 })], 0), /a gives both 'count' and 'weight'/);
  refuse(() => mixCounts([part("a", 10, { weight: -1 })], 0), /a's 'weight' must be a positive number: current value is -1/);
  refuse(() => mixCounts([part("a", 10), part("b", 100)], 0, 100), /a would give 50 samples an epoch of its 10 .*at most 20/);
  refuse(() => partIndex([part("a", 3), { name: "b", ids: ["x", "a-1"] }]), /sample a-1 is in a and in b/);
});
