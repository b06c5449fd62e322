/** A small real dataset in a store, for tests that read it back another way and compare. */
import { ingest } from "../../src/dataset/ingest.ts";
import type { Store, StoredSample } from "../../src/dataset/store.ts";
import { openStore } from "../../src/source/open.ts";

/**
 * The first `limit` images of each Fashion-MNIST split (Debian's dataset-fashion-mnist)
 * ingested into a SQLite store at `path` as `dataset`: the store, still open (the caller closes
 * it), its ids in store order, and each sample by id, as the store holds it.
 */
export async function fashionMnistStore(path: string, dataset: string, limit: number): Promise<{ store: Store; ids: string[]; want: Map<string, StoredSample> }> {
  const store = await openStore(`sqlite:${path}`);
  await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset, limit });
  const ids: string[] = [];
  for await (const page of store.scanNat(dataset)) ids.push(...page.map((r) => r.id));
  const want = new Map((await store.get(dataset, ids)).map((s) => [s.id, s]));
  return { store, ids, want };
}
