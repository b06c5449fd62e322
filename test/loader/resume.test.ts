import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { delayed } from "../_support/sources.ts";
import { Loader, type LoaderState } from "../../src/loader.ts";
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
