import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { epochPlan } from "../../src/plan/epoch.ts";

test("epochPlan keeps every id by default (the last batch may be short); dropLast gives every rank the same whole batches", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const n = randomInt(next, 50, 300), B = randomInt(next, 3, 17), world = randomInt(next, 1, 4);
  const ids = Array.from({ length: n }, (_, i) => `id${i}`);
  const plans = Array.from({ length: world }, (_, rank) => epochPlan(ids, { seed, epoch: 1, rank, worldSize: world, batchSize: B }));
  assert.equal(plans.flat().sort(), ids.slice().sort(), `the ranks' plans cover every id once (seed ${seed})`);
  const whole = Array.from({ length: world }, (_, rank) => epochPlan(ids, { seed, epoch: 1, rank, worldSize: world, batchSize: B, dropLast: true }));
  for (const p of whole) assert.is(p.length, Math.floor(Math.floor(n / world) / B) * B, `seed ${seed}`);
  whole.forEach((p, rank) => assert.equal(p, plans[rank].slice(0, p.length), "dropLast cuts the tail of the same order"));
});

/** The chi-square statistic's upper quantile for `k` degrees of freedom at `z` standard deviations (Wilson–Hilferty). */
function chiSquareQuantile(k: number, z: number): number {
  const a = 2 / (9 * k);
  return k * (1 - a + z * Math.sqrt(a)) ** 3;
}

test("epochPlan's order is uniform: each id lands at each position equally often over many seeded epochs (chi-square), and consecutive epochs differ", () => {
  const seed = freshSeed();
  const n = 16, epochs = 3200; // 200 expected per (id, position) cell
  const ids = Array.from({ length: n }, (_, i) => `id${i}`);
  const counts = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  let previous: string[] | undefined, fixedPoints = 0;
  for (let e = 0; e < epochs; e++) {
    const plan = epochPlan(ids, { seed, epoch: e, batchSize: 4 });
    plan.forEach((id, pos) => counts[+id.slice(2)][pos]++);
    if (previous) fixedPoints += plan.filter((id, i) => previous![i] === id).length;
    previous = plan;
  }
  const expected = epochs / n;
  let chi2 = 0;
  for (const row of counts) for (const c of row) chi2 += (c - expected) ** 2 / expected;
  // Rows and columns each sum to a constant: (n − 1)² degrees of freedom. z = 5: a false alarm
  // about once in 3.5 million runs.
  const limit = chiSquareQuantile((n - 1) ** 2, 5);
  assert.ok(chi2 < limit, `positions are not uniform: chi-square ${chi2.toFixed(1)} ≥ ${limit.toFixed(1)} for ${(n - 1) ** 2} degrees of freedom (seed ${seed})`);
  // Two independent shuffles share 1 fixed point on average (variance 1): over 3 199 pairs the
  // mean is 1 ± 0.018 per standard deviation; an epoch that repeated its predecessor gives 16.
  const mean = fixedPoints / (epochs - 1);
  assert.ok(Math.abs(mean - 1) < 5 / Math.sqrt(epochs - 1), `consecutive epochs share ${mean.toFixed(3)} positions on average, not about 1 (seed ${seed})`);
});

test("epochPlan's ranks get a uniform share: each id goes to each of 3 ranks equally often over many epochs (chi-square)", () => {
  const seed = freshSeed();
  const n = 12, world = 3, epochs = 1500; // 500 expected per (id, rank) cell
  const ids = Array.from({ length: n }, (_, i) => `id${i}`);
  const counts = Array.from({ length: n }, () => new Array<number>(world).fill(0));
  for (let e = 0; e < epochs; e++) {
    for (let rank = 0; rank < world; rank++) {
      for (const id of epochPlan(ids, { seed, epoch: e, rank, worldSize: world, batchSize: 2 })) counts[+id.slice(2)][rank]++;
    }
  }
  const expected = epochs / world;
  let chi2 = 0;
  for (const row of counts) for (const c of row) chi2 += (c - expected) ** 2 / expected;
  const limit = chiSquareQuantile((n - 1) * (world - 1), 5);
  assert.ok(chi2 < limit, `ranks' shares are not uniform: chi-square ${chi2.toFixed(1)} ≥ ${limit.toFixed(1)} (seed ${seed})`);
});

test("rankShards: each rank plans its own run of the shuffled shards, the runs within one sample of each other, together every id once; they rotate with the epoch; pad and dropLast even them out", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const n = randomInt(next, 40, 200), world = randomInt(next, 2, 5), B = randomInt(next, 1, 6);
  const ids = Array.from({ length: n }, (_, i) => `id${i}`);
  const groups: string[][] = [];
  for (let i = 0; i < n;) {
    const len = randomInt(next, 3, 9);
    groups.push(ids.slice(i, i + len));
    i += len;
  }
  const shardOf = new Map(groups.flatMap((g, s) => g.map((id) => [id, s] as const)));
  const what = `seed ${seed}, ${n} ids in ${groups.length} shards, ${world} ranks`;
  const owned = (epoch: number) => {
    const plans = Array.from({ length: world }, (_, rank) => epochPlan(ids, { seed, epoch, rank, worldSize: world, batchSize: B, groups, rankShards: true }));
    assert.equal(plans.flat().sort(), [...ids].sort(), `${what}: every id once`);
    const lens = plans.map((p) => p.length);
    assert.ok(Math.max(...lens) - Math.min(...lens) <= 1, `${what}: ${lens}`);
    const sets = plans.map((p) => new Set(p.map((id) => shardOf.get(id)!)));
    // A run shares at most its two end shards with its neighbours.
    assert.ok(sets.reduce((a, s) => a + s.size, 0) <= groups.length + world - 1, `${what}: ${sets.map((s) => [...s])}`);
    return sets.map((s) => [...s].sort().join());
  };
  const first = owned(0);
  assert.ok([1, 2, 3, 4].some((e) => owned(e).join("|") !== first.join("|")), `${what}: the shards rotate over the epochs`);
  for (const mode of [{ pad: true }, { dropLast: true }]) {
    const plans = Array.from({ length: world }, (_, rank) => epochPlan(ids, { seed, epoch: 0, rank, worldSize: world, batchSize: B, groups, rankShards: true, ...mode }));
    const want = mode.pad ? Math.ceil(n / world) : Math.floor(Math.floor(n / world) / B) * B;
    for (const p of plans) assert.is(p.length, want, `${what}, ${JSON.stringify(mode)}`);
    for (const p of plans) assert.is(new Set(p).size, p.length, `${what}: a rank's plan holds an id once`);
  }
});
