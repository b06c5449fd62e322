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
