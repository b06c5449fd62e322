import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { delayed } from "../_support/sources.ts";
import { Loader, type LoaderState, mergeStates } from "../../src/loader.ts";
import { openSource, openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { epochPlan } from "../../src/plan/epoch.ts";
import type { Store } from "../../src/dataset/store.ts";
import type { Source } from "../../src/source/source.ts";
import { CassetteError } from "../../src/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-resume-"));
const db = join(dir, "fm.sqlite");
let store: Store;
const ids: string[] = [];
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function setup(): Promise<Source> {
  if (!store) {
    store = await openStore(`sqlite:${db}`);
    await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 157 });
    for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
  }
  return openSource(store, "fm");
}

/**
 * Reads `k` batches of `epoch` (a "killed" run), keeps the state as a checkpoint would (through
 * JSON), then a new loader resumes: returns what each run handed over.
 */
async function interrupted(make: (resume?: LoaderState) => Loader, epoch: number, k: number) {
  const first = make();
  const before: string[] = [];
  let n = 0;
  for await (const b of first.epoch(epoch)) {
    before.push(...b.ids);
    if (++n === k) break;
  }
  const state = JSON.parse(JSON.stringify(first.state())) as LoaderState;
  await first.close();
  const second = make(state);
  const after: string[] = [];
  for await (const b of second.epoch(state.epoch)) after.push(...b.ids);
  return { before, after, state, second };
}

const exactlyOnce = (got: string[], plan: string[], what: string) => {
  assert.is(got.length, plan.length, `${what}: ${got.length} samples handed over, the plan has ${plan.length}`);
  assert.equal([...got].sort(), [...plan].sort(), `${what}: every planned sample exactly once`);
};

test("ready order, out of order: a loader resumed from state() hands over exactly the samples the first did not", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const src = await setup();
  const slow = new Set(ids.filter(() => r() < 0.2)); // arrive late: batches leave out of plan order
  const make = (resume?: LoaderState) =>
    new Loader({ store: delayed(src, (id) => (slow.has(id) ? 25 : 1)), ids, batchSize: 10, prefetch: 4, seed, resume });
  const k = randomInt(r, 1, 14);
  const { before, after, state, second } = await interrupted(make, 1, k);
  const plan = epochPlan(ids, { seed, epoch: 1, batchSize: 10 });
  assert.is(state.epoch, 1);
  assert.is(state.handed, before.length, `seed ${seed}`);
  // Out-of-order deliveries: what was handed over is not the plan's prefix, where that prefix
  // holds a late sample (with k = 1 its 10 samples may all be fast: seed 2247727186).
  if (plan.slice(0, before.length).some((id) => slow.has(id))) assert.not.equal(new Set(before), new Set(plan.slice(0, before.length)), `seed ${seed}: ready order moved samples`);
  exactlyOnce([...before, ...after], plan, `seed ${seed}, k ${k}`);
  // The bitmap is a bit a sample, not the ids.
  assert.ok(state.bitmap.length <= Math.ceil(Math.ceil(ids.length / 8) / 3) * 4, `bitmap of ${state.bitmap.length} chars`);
  // The resumed epoch done, the next is whole.
  assert.is(second.state().epoch, 2);
  assert.is(second.state().handed, 0);
  const next: string[] = [];
  for await (const b of second.epoch(2)) next.push(...b.ids);
  exactlyOnce(next, epochPlan(ids, { seed, epoch: 2, batchSize: 10 }), "the epoch after");
  await second.close();
});

test("strict order: the resumed epoch's batches are the uninterrupted run's from the cut on", async () => {
  const seed = freshSeed();
  const src = await setup();
  const make = (resume?: LoaderState) => new Loader({ store: src, ids, batchSize: 16, prefetch: 3, seed, order: "strict", resume });
  const whole: string[][] = [];
  const l = make();
  for await (const b of l.epoch(0)) whole.push(b.ids);
  await l.close();
  const k = randomInt(rng(seed), 1, whole.length - 1);
  const first = make();
  let n = 0;
  for await (const _ of first.epoch(0)) if (++n === k) break;
  const second = make(first.state());
  await first.close();
  const rest: string[][] = [];
  for await (const b of second.epoch(0)) rest.push(b.ids);
  assert.equal(rest, whole.slice(k), `seed ${seed}, cut after batch ${k}`);
  await second.close();
});

test("ranks and read workers: each rank resumes its own stride; with workers the same", async () => {
  const seed = freshSeed();
  await setup();
  for (const workers of [0, 1]) {
    const all: string[] = [];
    for (const rank of [0, 1]) {
      const make = (resume?: LoaderState) =>
        new Loader({ store: `sqlite:${db}`, dataset: "fm", ids, batchSize: 8, prefetch: 2, seed, rank, worldSize: 2, workers, resume });
      const { before, after } = await interrupted(make, 0, 3 + rank);
      const plan = epochPlan(ids, { seed, epoch: 0, batchSize: 8, rank, worldSize: 2 });
      exactlyOnce([...before, ...after], plan, `rank ${rank}, ${workers} workers (seed ${seed})`);
      all.push(...before, ...after);
    }
    exactlyOnce(all, ids, `both ranks, ${workers} workers`);
  }
});

test("read-ahead: a state taken at an epoch's end names the next epoch, whole, whatever was read ahead", async () => {
  const seed = freshSeed();
  const src = await setup();
  const l = new Loader({ store: src, ids, batchSize: 10, prefetch: 4, seed, readAhead: true });
  for await (const _ of l.epoch(0));
  const state = l.state();
  await l.close();
  assert.is(state.epoch, 1);
  assert.is(state.handed, 0);
  const r = new Loader({ store: src, ids, batchSize: 10, prefetch: 4, seed, resume: state });
  const got: string[] = [];
  for await (const b of r.epoch(1)) got.push(...b.ids);
  exactlyOnce(got, epochPlan(ids, { seed, epoch: 1, batchSize: 10 }), "epoch 1");
  await r.close();
});

test("a state that does not fit the loader is refused by name", async () => {
  const seed = freshSeed();
  const src = await setup();
  const l = new Loader({ store: src, ids, batchSize: 10, seed });
  let n = 0;
  for await (const _ of l.epoch(0)) if (++n === 2) break;
  const state = l.state();
  await l.close();
  const refused = (f: () => unknown, re: RegExp) => {
    try {
      f();
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
      assert.match((e as Error).message, re);
      return;
    }
    assert.unreachable(`no error for ${re}`);
  };
  refused(() => new Loader({ store: src, ids, batchSize: 10, seed: seed + 1, resume: state }), new RegExp(`seed ${seed}: this loader has seed ${seed + 1}`));
  refused(() => new Loader({ store: src, ids, batchSize: 12, seed, resume: state }), /batchSize 10: this loader has batchSize 12/);
  refused(() => new Loader({ store: src, ids, batchSize: 10, seed, resume: { ...state, format: "x" } as unknown as LoaderState }), /not a cassette-loader-state/);
  // Other ids: the plan's digest differs, found when the epoch is planned.
  const other = new Loader({ store: src, ids: ids.slice(1), batchSize: 10, seed, resume: state });
  let message = "";
  try {
    for await (const _ of other.epoch(0));
  } catch (e) {
    message = (e as Error).message;
  }
  assert.match(message, new RegExp(`plan differs: the state.s has ${ids.length} samples`));
  await other.close();
});

const bitmap = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

/**
 * Elastic resume through real loaders: N ranks each hand over a random number of batches (some
 * none, some their whole epoch), their states (kept through JSON) are merged, and M ranks read
 * the rest of the epoch from the merged state, then the next epoch. Returns what each phase
 * handed over, with pad's repeats apart.
 */
async function elastic(N: number, M: number, o: { order: "ready" | "strict"; pad?: boolean; workers?: number }, seed: number) {
  const r = rng(seed);
  const src = await setup();
  const slow = new Set(ids.filter(() => r() < 0.2));
  const store = o.workers ? `sqlite:${db}` : delayed(src, (id) => (slow.has(id) ? 15 : 1));
  const make = (rank: number, worldSize: number, resume?: LoaderState) =>
    new Loader({ store, dataset: "fm", ids, batchSize: 6, prefetch: 3, seed, rank, worldSize, order: o.order, pad: o.pad, workers: o.workers ?? 0, resume });
  const first: string[] = [], states: LoaderState[] = [];
  for (let rank = 0; rank < N; rank++) {
    const l = make(rank, N);
    const k = randomInt(r, 0, Math.ceil(ids.length / N / 6) + 1);
    let n = 0;
    if (k > 0) {
      for await (const b of l.epoch(0)) {
        first.push(...b.ids);
        if (++n === k) break;
      }
    }
    states.push(JSON.parse(JSON.stringify(l.state())));
    await l.close();
  }
  const merged = mergeStates(states);
  const rest: string[][] = [], repeats: string[] = [], next: string[][] = [];
  for (let rank = 0; rank < M; rank++) {
    const l = make(rank, M, merged);
    const mine: string[] = [];
    for await (const b of l.epoch(0)) b.ids.forEach((id, i) => (b.padded?.[i] ? repeats : mine).push(id));
    rest.push(mine);
    const later: string[] = [];
    for await (const b of l.epoch(1)) later.push(...b.ids);
    next.push(later);
    await l.close();
  }
  return { first, rest, repeats, next, merged };
}

for (const order of ["ready", "strict"] as const) {
  test(`elastic resume, ${order} order: N ranks' states merged resume on M ranks (4 → 3, 2 → 5, 3 → 1), every sample of the epoch once; the next epoch is M ranks' plan`, async () => {
    const seed = freshSeed();
    for (const [N, M] of [[4, 3], [2, 5], [3, 1]]) {
      const what = `${N} → ${M}, seed ${seed}`;
      const { first, rest, next, merged } = await elastic(N, M, { order }, seed + N);
      exactlyOnce([...first, ...rest.flat()], ids, what);
      if (order === "strict") {
        // In plan order: each rank's rest is its stride of what no rank handed over.
        const before = bitmap(merged.before!);
        rest.forEach((got, rank) => assert.equal(got, epochPlan(ids, { seed: seed + N, epoch: 0, batchSize: 6, rank, worldSize: M, before }), `${what}: rank ${rank}`));
      }
      next.forEach((got, rank) => exactlyOnce(got, epochPlan(ids, { seed: seed + N, epoch: 1, batchSize: 6, rank, worldSize: M }), `${what}: epoch 1, rank ${rank}`));
    }
  }, { timeoutMs: 120_000 });
}

test("elastic resume with pad: the rest is padded over the new ranks (each the same count), repeats marked; with read workers the same", async () => {
  const seed = freshSeed();
  for (const [N, M, workers] of [[4, 3, 0], [2, 5, 1]]) {
    const what = `${N} → ${M}, ${workers} workers, seed ${seed}`;
    const { first, rest, repeats } = await elastic(N, M, { order: "ready", pad: true, workers }, seed + N);
    const handed = new Set(first);
    const left = ids.filter((id) => !handed.has(id));
    for (const mine of rest) {
      const padded = Math.ceil(left.length / M);
      assert.ok(mine.length === padded || mine.length === padded - 1, `${what}: ${mine.length} fresh of ${padded}`);
    }
    assert.is(rest.flat().length + repeats.length, Math.ceil(left.length / M) * M, `${what}: every rank ⌈${left.length}/${M}⌉`);
    assert.equal([...rest.flat()].sort(), left.sort(), `${what}: what no rank handed over, once`);
  }
}, { timeoutMs: 120_000 });

test("one rank's state alone on another world size is refused, naming what it needs (ERR_PARTIAL_STATE); on its own world size it resumes as before", async () => {
  const src = await setup();
  const l = new Loader({ store: src, ids, batchSize: 8, seed: 5, rank: 1, worldSize: 4 });
  for await (const _ of l.epoch(0)) break;
  const state = l.state();
  await l.close();
  try {
    new Loader({ store: src, ids, batchSize: 8, seed: 5, rank: 0, worldSize: 3, resume: state });
    assert.unreachable("a rank's state alone resumed on another world size");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.is((e as CassetteError).code, "ERR_PARTIAL_STATE");
    assert.match((e as Error).message, /on 3 ranks from rank 1's state alone, taken on 4 ranks: .*Merge the states of all 4 ranks with mergeStates/);
  }
  // A merged state is refused where each rank streams its own shards: those plans do not re-partition.
  const merged = mergeStates([0, 1, 2, 3].map((rank) => new Loader({ store: src, ids, batchSize: 8, seed: 5, rank, worldSize: 4 }).state()));
  assert.throws(() => new Loader({ store: src, ids, batchSize: 8, seed: 5, rank: 0, worldSize: 3, rankShards: true, resume: merged }), (e: Error) =>
    (e as CassetteError).code === "ERR_UNSUPPORTED" && /'rankShards' resumes only on its own number of ranks/.test(e.message));
  // A state of the format before elastic resume (no samples, order, before) still resumes on its world size.
  const old: Partial<LoaderState> = { ...state };
  delete old.samples, delete old.order, delete old.before;
  const again = new Loader({ store: src, ids, batchSize: 8, seed: 5, rank: 1, worldSize: 4, resume: old as LoaderState });
  const got: string[] = [];
  for await (const b of again.epoch(0)) got.push(...b.ids);
  await again.close();
  assert.is(got.length + state.handed, state.planned);
});
