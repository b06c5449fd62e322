/**
 * One epoch of a store's dataset with the consumer paused early, in a process of its own (so that no
 * earlier allocation hides or inflates the growth): prints {"growthMB", "samples"} as JSON.
 * Used by test/loader/memory_rss.test.ts.
 *
 *   rss_read.ts STORE DATASET MAX_PREFETCH_BYTES|none [decode]
 *
 * `decode`: read and decode in two read workers (the pixels count against the bound).
 */
import process from "node:process";
import { readFileSync } from "node:fs";

/**
 * Resident bytes the process owns: RSS without its file-backed pages (Linux's RssFile). SQLite
 * maps the store's file (mmap_size, NOTE [ Reading by rowid ] in src/source/sqlite/sqlite.ts):
 * those pages are the OS's page cache, shared and reclaimable, not the loader's memory.
 */
function owned(): number {
  const rss = process.memoryUsage().rss;
  try {
    const m = /RssFile:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    return m ? rss - Number(m[1]) * 1024 : rss;
  } catch {
    return rss;
  }
}
import { openStore } from "../../../src/source/open.ts";
import { Loader } from "../../../src/loader.ts";

const [address, dataset, bound, decode] = process.argv.slice(2);
const store = await openStore(address);
const ids: string[] = [];
for await (const page of store.scanNat(dataset)) ids.push(...page.map((r) => r.id));
const base = owned();
// The window starts at 16 batches (64 samples, 128 MB of 2 MB samples) when nothing bounds it;
// decoding, at 32 (128 samples, ~300 MB of pixels): at 16 the unbounded growth under Bun came
// within the allowed overhead now and then (203 MB of 224), and the test could not tell.
const depth = decode === "decode" ? 32 : 16;
const loader = new Loader({
  ...(decode === "decode" ? { store: address, workers: 2, decode: true } : { store }),
  dataset, ids, batchSize: 4, prefetch: depth, rampStart: depth, seed: 3, maxPrefetchBytes: bound === "none" ? undefined : Number(bound),
});
let samples = 0, batches = 0, held = 0;
for await (const b of loader.epoch(0)) {
  samples += b.ids.length;
  // After two batches the consumer stops for a while, as a long training step does: the window
  // fills to what bounds it, and little garbage is made meanwhile. The growth is read then.
  if (++batches === 2) {
    await new Promise((r) => setTimeout(r, 2000));
    held = owned() - base;
  }
}
await loader.close();
await store.close();
console.log(JSON.stringify({ growthMB: held / (1 << 20), samples }));
process.exit(0);
