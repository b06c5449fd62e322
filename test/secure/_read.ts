/** Shared by test/secure/*.test.ts: one epoch read through a Loader, every id exactly once. */
import * as assert from "uvu/assert";
import type { Store } from "../../src/dataset/store.ts";
import { Loader } from "../../src/loader.ts";

/** Reads one epoch of `dataset`'s `ids` through a Loader on `store`; each id must come exactly once. */
export async function readEachOnce(store: string | Store, dataset: string, ids: string[], seed: number): Promise<void> {
  const loader = new Loader({ store, dataset, ids, batchSize: 8, seed });
  const seen = new Map<string, number>();
  try {
    for await (const b of loader.epoch(0)) for (const id of b.ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  } finally {
    await loader.close();
  }
  assert.is(seen.size, ids.length, "every sample read");
  assert.ok([...seen.values()].every((n) => n === 1), "each sample once");
}
