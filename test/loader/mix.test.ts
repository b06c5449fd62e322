/**
 * One Loader over two datasets mixed by weight (LoaderOptions.mix, MixSource): every epoch is
 * read once across ranks, each rank's batches hold the parts in proportion, a part rotates
 * through its samples across epochs, labels are mapped onto one class list, and a mixed epoch
 * resumes exactly once from a state.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed } from "../_support/random.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { Loader } from "../../src/loader.ts";
import { openSource } from "../../src/source/open.ts";
import { MixSource } from "../../src/source/mix/mix_source.ts";
import { mixCounts, mixOrder } from "../../src/plan/mix.ts";
import { CassetteError } from "../../src/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-mix-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// Two datasets of one store: the same images under other names are other samples (other ids).
const a = await fashionMnistStore(join(dir, "a.sqlite"), "fm-a", 100); // 200 samples
const b = await fashionMnistStore(join(dir, "b.sqlite"), "fm-b", 30); // 60 samples
afterAll(async () => {
  await a.store.close();
  await b.store.close();
});
const parts = [{ name: "fm-a", ids: a.ids, weight: 1 }, { name: "fm-b", ids: b.ids, weight: 1 }];
const ids = [...a.ids, ...b.ids];
const which = (id: string) => (a.want.has(id) ? 0 : 1);

async function mixSource() {
  return new MixSource([
    { name: "fm-a", source: await openSource(a.store, "fm-a"), ids: a.ids },
    { name: "fm-b", source: await openSource(b.store, "fm-b"), ids: b.ids, labels: Array.from({ length: 10 }, (_, c) => c + 10) },
  ]);
}

test("two ranks over an even mix: each epoch once across them, batches in proportion, labels mapped, part a rotating", async () => {
  const seed = freshSeed();
  const counts = mixCounts(parts, seed);
  assert.equal(counts, [60, 60], "the longest epoch that repeats nothing of fm-b: all 60 of it, as many of fm-a");
  const seenA: string[][] = [];
  for (const epoch of [0, 1, 2]) {
    const got: string[] = [];
    for (const rank of [0, 1]) {
      // Strict order: batches in plan order hold the parts as the plan mixed them (ready order
      // takes what arrived first, so a faster part fills more of the early batches).
      const loader = new Loader({ store: await mixSource(), ids, batchSize: 12, seed, rank, worldSize: 2, mix: { parts }, order: "strict" });
      for await (const batch of loader.epoch(epoch)) {
        batch.ids.forEach((id, i) => {
          const k = which(id), stored = (k === 0 ? a : b).want.get(id)!;
          assert.is(batch.labels[i], stored.label + (k === 1 ? 10 : 0), `seed ${seed}: ${id}'s label, mapped for fm-b`);
          assert.equal(Array.from(batch.data.subarray(batch.offsets[i], batch.offsets[i + 1])), Array.from(stored.data), `seed ${seed}: ${id}'s bytes`);
        });
        const fromB = batch.ids.filter((id) => which(id) === 1).length;
        if (batch.ids.length === 12) assert.ok(fromB >= 4 && fromB <= 8, `seed ${seed}: a batch of 12 holds ${fromB} of fm-b where 6 are expected`);
        got.push(...batch.ids);
      }
      await loader.close();
    }
    assert.is(got.length, 120, `seed ${seed}: epoch ${epoch} read once across the ranks`);
    assert.equal([...got].sort(), [...mixOrder(parts, { seed, epoch, ranks: 2 })].sort(), `seed ${seed}: epoch ${epoch} is the mix's`);
    seenA.push(got.filter((id) => which(id) === 0));
  }
  // fm-a gives 60 of its 200 an epoch: a cycle is 3 epochs (20 left out), none twice in it.
  assert.is(new Set(seenA.flat()).size, 180, `seed ${seed}: fm-a's samples over a cycle of three epochs, none twice`);
});

test("a mixed epoch stopped midway resumes from its state: every sample once", async () => {
  const seed = freshSeed();
  const first = new Loader({ store: await mixSource(), ids, batchSize: 10, seed, mix: { parts }, order: "strict" });
  const got: string[] = [];
  let n = 0;
  for await (const batch of first.epoch(3)) {
    got.push(...batch.ids);
    if (++n === 7) break;
  }
  const state = first.state();
  await first.close();
  const again = new Loader({ store: await mixSource(), ids, batchSize: 10, seed, mix: { parts }, resume: state });
  for await (const batch of again.epoch(3)) got.push(...batch.ids);
  await again.close();
  assert.is(got.length, 120, `seed ${seed}`);
  assert.equal([...got].sort(), [...mixOrder(parts, { seed, epoch: 3 })].sort(), `seed ${seed}: the epoch once`);
});

test("a mixed epoch does not resume on another number of ranks: its order is cut in runs of the world size", async () => {
  const first = new Loader({ store: await mixSource(), ids, batchSize: 10, mix: { parts }, rank: 0, worldSize: 2 });
  const state = first.state();
  await first.close();
  try {
    new Loader({ store: await mixSource(), ids, batchSize: 10, mix: { parts }, resume: state });
    assert.unreachable("should refuse");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.is((e as CassetteError).code, "ERR_UNSUPPORTED");
    assert.match((e as Error).message, /a plan with 'mix' resumes only on its own number of ranks/);
  }
});

test("a bad mix is named when the Loader is made", async () => {
  const refused = (o: object, re: RegExp) => {
    try {
      new Loader({ store: "sqlite:" + join(dir, "a.sqlite"), dataset: "fm-a", ids, batchSize: 8, ...o });
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.match((e as Error).message, re);
      return;
    }
    assert.unreachable(`should refuse ${re}`);
  };
  refused({ mix: { parts: [{ ids: ["x"], weight: 1 }] } }, /sample x of part 0 is not among the loader's 'ids'/);
  refused({ mix: { parts }, shuffle: false }, /'mix' draws its own order of every part: not with 'shuffle: false'/);
  refused({ mix: { parts, samples: 1000 } }, /fm-a would give 500 samples an epoch of its 200 .*at most 120/);
});
