/**
 * Elastic resume's re-partition, without a loader: N ranks' plans, each with a random subset
 * handed over (ready order hands over any subset), their states merged (mergeStates), and the
 * rest planned over M ranks (epochPlan's `before`). Every sample of the epoch is handed over once
 * across both runs; pad and dropLast apply to the rest.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { epochPlan, epochSequence, paddedFrom } from "../../src/plan/epoch.ts";
import { HandedOver, type LoaderState, mergeStates, planDigest, type PlanIdentity } from "../../src/schedule/resume.ts";
import { CassetteError } from "../../src/errors.ts";

const bits = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

interface Job {
  n: number;
  batchSize: number;
  pad?: boolean;
  dropLast?: boolean;
  groups?: string[][];
}

/** Rank `rank` of `world`'s state of `epoch` after handing over `share` of its plan (a random subset); its plan and what it handed over. */
function rankState(ids: string[], j: Job, seed: number, epoch: number, rank: number, world: number, share: number, next: () => number, before?: Uint8Array) {
  const identity: PlanIdentity = { seed, rank, worldSize: world, shuffle: true, batchSize: j.batchSize, dropLast: j.dropLast ?? false, pad: j.pad ?? false };
  const o = { ...identity, epoch, groups: j.groups, before };
  const plan = epochPlan(ids, o);
  const h = new HandedOver(epoch, plan, { samples: ids.length, digest: () => planDigest(epochSequence(ids, o)), before });
  const given = plan.filter(() => next() < share);
  h.mark(given);
  return { plan, given, state: JSON.parse(JSON.stringify(h.state(identity))) as LoaderState };
}

/** N ranks hand over random subsets, M ranks plan the rest from the merged state: checks exactly once. */
function repartition(j: Job, N: number, M: number, seed: number) {
  const next = rng(seed);
  const ids = Array.from({ length: j.n }, (_, i) => `id${i}`);
  const first = Array.from({ length: N }, (_, r) => rankState(ids, j, seed, 2, r, N, next(), next));
  const merged = mergeStates(first.map((f) => f.state));
  const what = `${N} → ${M}, ${JSON.stringify({ ...j, groups: !!j.groups })}, seed ${seed}`;
  assert.is(merged.epoch, 2, what);
  assert.is(merged.worldSize, 1, what);
  const before = bits(merged.before!);
  const handed = new Set(first.flatMap((f) => f.given));
  const plans = Array.from({ length: M }, (_, r) => epochPlan(ids, { seed, epoch: 2, rank: r, worldSize: M, batchSize: j.batchSize, pad: j.pad, dropLast: j.dropLast, groups: j.groups, before }));
  const rest = j.n - handed.size;
  // The repeats of pad are each plan's tail past paddedFrom; the rest holds no sample handed over.
  const fresh = plans.flatMap((p, r) => p.slice(0, j.pad ? paddedFrom(j.n, { rank: r, worldSize: M, before }) : p.length));
  for (const id of fresh) assert.not.ok(handed.has(id), `${what}: ${id} was handed over already`);
  assert.is(new Set(fresh).size, fresh.length, `${what}: a sample planned twice`);
  if (j.dropLast) {
    const len = Math.floor(Math.floor(rest / M) / j.batchSize) * j.batchSize;
    for (const p of plans) assert.is(p.length, len, `${what}: dropLast gives every rank ${len}`);
  } else if (j.pad) {
    for (const p of plans) assert.is(p.length, Math.ceil(rest / M), `${what}: pad gives every rank ⌈${rest}/${M}⌉`);
    assert.equal([...handed, ...fresh].sort(), [...ids].sort(), `${what}: every sample once`);
  } else {
    assert.equal([...handed, ...fresh].sort(), [...ids].sort(), `${what}: every sample once`);
  }
  return { ids, merged, plans, before };
}

test("4 → 3, 2 → 5, 3 → 1, 1 → 4, 5 → 2: the samples no rank handed over are planned over the new ranks once, with pad and dropLast applied to them", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (const [N, M] of [[4, 3], [2, 5], [3, 1], [1, 4], [5, 2], [3, 3]]) {
    for (const mode of [{}, { pad: true }, { dropLast: true }]) {
      const j: Job = { n: randomInt(next, 30, 200), batchSize: randomInt(next, 1, 9), ...mode };
      repartition(j, N, M, randomInt(next, 0, 2 ** 31));
    }
  }
});

test("shard-aware plans: the same re-partition over the shard order", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const n = randomInt(next, 60, 150);
  const ids = Array.from({ length: n }, (_, i) => `id${i}`);
  const groups: string[][] = [];
  for (let i = 0; i < n; i += 7) groups.push(ids.slice(i, i + 7));
  repartition({ n, batchSize: 4, groups }, 4, 3, seed);
  repartition({ n, batchSize: 4, groups, pad: true }, 2, 5, seed + 1);
});

test("resumed twice: the states of the ranks that resumed merge again (4 → 3 → 2)", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const j: Job = { n: randomInt(next, 80, 200), batchSize: 5 };
  const { ids, merged } = repartition(j, 4, 3, seed);
  const before = bits(merged.before!);
  const second = Array.from({ length: 3 }, (_, r) => rankState(ids, j, seed, 2, r, 3, next(), next, before));
  for (const s of second) assert.is(s.state.before, merged.before, "the ranks that resumed carry what was handed over before them");
  const again = mergeStates(second.map((s) => s.state));
  const handed = new Set(second.flatMap((s) => s.given));
  const order = epochSequence(ids, { seed, epoch: 2, batchSize: 5 });
  const was = bits(merged.before!), now = bits(again.before!);
  order.forEach((id, i) => {
    const b = (x: Uint8Array) => (x[i >> 3] >> (i & 7)) & 1;
    assert.is(b(now), b(was) | (handed.has(id) ? 1 : 0), `seed ${seed}: position ${i}`);
  });
  const plans = Array.from({ length: 2 }, (_, r) => epochPlan(ids, { seed, epoch: 2, rank: r, worldSize: 2, batchSize: 5, before: now }));
  const left = order.filter((_, i) => !((now[i >> 3] >> (i & 7)) & 1));
  assert.equal(plans.flat().sort(), left.sort(), `seed ${seed}: the rest once`);
});

test("a rank that ended the epoch (its state names the next, nothing handed over) counts as having handed over its whole plan", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const j: Job = { n: 97, batchSize: 4 };
  const ids = Array.from({ length: j.n }, (_, i) => `id${i}`);
  const ranks = [0, 1, 2].map((r) => rankState(ids, j, seed, 2, r, 3, 0.5, next));
  const done = rankState(ids, j, seed, 3, 1, 3, 0, next); // rank 1 ended epoch 2
  const merged = mergeStates([ranks[0].state, done.state, ranks[2].state]);
  const left = new Set(epochPlan(ids, { seed, epoch: 2, batchSize: 4, before: bits(merged.before!) }));
  for (const id of ranks[1].plan) assert.not.ok(left.has(id), `seed ${seed}: rank 1's ${id} is not read again`);
  assert.equal([...left, ...ranks[0].given, ...ranks[2].given, ...ranks[1].plan].sort(), [...ids].sort());
  // Every rank past the epoch: the next epoch, whole.
  const all = [0, 1, 2].map((r) => rankState(ids, j, seed, 3, r, 3, 0, next).state);
  const fresh = mergeStates(all);
  assert.is(fresh.epoch, 3);
  assert.is(fresh.planned, j.n);
});

test("merging refuses by name: a rank missing (ERR_PARTIAL_STATE), given twice, another job's, epochs apart, a state from before elastic resume, rankShards plans", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const j: Job = { n: 50, batchSize: 4 };
  const ids = Array.from({ length: j.n }, (_, i) => `id${i}`);
  const s = [0, 1, 2, 3].map((r) => rankState(ids, j, seed, 1, r, 4, 0.3, next).state);
  const refused = (f: () => unknown, code: string, re: RegExp) => {
    try {
      f();
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.is((e as CassetteError).code, code);
      assert.match((e as Error).message, re);
      return;
    }
    assert.unreachable(`no error for ${re}`);
  };
  refused(() => mergeStates([s[0], s[2], s[3]]), "ERR_PARTIAL_STATE", /the states of rank 1 of 4 are missing/);
  refused(() => mergeStates([s[0], s[1], s[1], s[3]]), "ERR_INVALID_OPTION", /rank 1 of 4 is given twice/);
  refused(() => mergeStates([s[0], s[1], s[2], { ...s[3], seed: seed + 1 }]), "ERR_INVALID_OPTION", /rank 3's has seed/);
  refused(() => mergeStates([s[0], s[1], s[2], { ...s[3], order: "0000000000000000" }]), "ERR_INVALID_OPTION", /rank 3's plan of epoch 1 differs/);
  refused(() => mergeStates([s[0], s[1], s[2], { ...s[3], epoch: 3 }]), "ERR_INVALID_OPTION", /different epochs: rank 3 in epoch 3/);
  const old = { ...s[3] };
  delete old.samples, delete old.order;
  refused(() => mergeStates([s[0], s[1], s[2], old]), "ERR_INVALID_OPTION", /rank 3's state was taken before elastic resume/);
  refused(() => mergeStates([]), "ERR_INVALID_OPTION", /none were given/);
  refused(() => mergeStates([s[0], s[1], s[2], { ...s[3], rankShards: true }]), "ERR_UNSUPPORTED", /rank 3's plan has 'rankShards', which resumes only on its own number of ranks/);
});
