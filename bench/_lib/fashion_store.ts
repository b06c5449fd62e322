/** The benches' Fashion-MNIST store: the first `perSplit` images of train and of t10k, ingested once into a SQLite file. */
import { join } from "node:path";
import { ingest } from "../../src/dataset/ingest.ts";
import { openStore } from "../../src/source/open.ts";
import type { Store } from "../../src/dataset/store.ts";

export const FASHION_MNIST = "fashion-mnist";

/** Opens (and fills, the first time) `root/fm.sqlite`; `ids` are those with idx < perSplit, in scan order. */
export async function fashionMnistStore(root: string, perSplit: number): Promise<{ store: Store; ids: string[] }> {
  const store = await openStore(`sqlite:${join(root, "fm.sqlite")}`);
  await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: FASHION_MNIST, limit: perSplit });
  const ids: string[] = [];
  for await (const page of store.scanNat(FASHION_MNIST)) for (const r of page) if ((r.meta.idx as number) < perSplit) ids.push(r.id);
  return { store, ids };
}
