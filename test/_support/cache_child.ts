/**
 * A reader that keeps a cache, for test/source/cache.test.ts to kill with SIGKILL mid-epoch:
 * reads DATASET from the SQLite store STORE through a cache at CACHE, prints "batch N" after
 * each batch and waits a little, as a training step would, so that the kill finds it reading.
 *
 *   cache_child.ts STORE DATASET CACHE
 */
import process from "node:process";
import { openStore, openSource } from "../../src/source/open.ts";
import { CacheSource } from "../../src/source/cache/cache_source.ts";
import { Loader } from "../../src/loader.ts";

const [storePath, dataset, cachePath] = process.argv.slice(2);
const store = await openStore(`sqlite:${storePath}`);
const ids: string[] = [];
for await (const page of store.scanNat(dataset)) ids.push(...page.map((r) => r.id));
const cache = new CacheSource(await openSource(store, dataset), { path: cachePath, bytes: 1 << 30 });
const loader = new Loader({ store: cache, ids, batchSize: 8, seed: 3, prefetch: 2 });
let n = 0;
for await (const _ of loader.epoch(0)) {
  console.log(`batch ${++n}`);
  await new Promise((r) => setTimeout(r, 100));
}
console.log("done");
await loader.close();
await store.close();
