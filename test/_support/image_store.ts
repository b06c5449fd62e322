/**
 * A fresh SQLite store of image files, for tests that read images through a Loader: each file
 * under its own key (`.jpg` or `.png` by its first byte), ingested as the CLI would.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ingest } from "../../src/dataset/ingest.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { openStore } from "../../src/source/open.ts";

/** The files in a fresh store `name` under `dir`, dataset `dataset`: its address, the ids in file order. */
export async function imageStore(dir: string, name: string, dataset: string, files: readonly { bytes: Uint8Array }[]): Promise<{ address: string; ids: string[] }> {
  const root = join(dir, name);
  mkdirSync(join(root, "a"), { recursive: true });
  const keys = files.map((f, i) => `a/img${i}.${f.bytes[0] === 0xff ? "jpg" : "png"}`);
  files.forEach((f, i) => writeFileSync(join(root, keys[i]), f.bytes));
  const store = await openStore(`sqlite:${join(dir, `${name}.sqlite`)}`);
  const sum = await ingest(store, root, { dataset });
  const address = store.address;
  await store.close();
  if (sum.written !== files.length) throw new Error(`imageStore: ${sum.written} of ${files.length} files stored`);
  return { address, ids: keys.map((k) => sampleId(dataset, k)) };
}
