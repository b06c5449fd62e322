/**
 * One data-parallel rank in a process of its own, for test/loader/elastic.test.ts: reads epoch 0
 * of a split with a Loader, and after each batch writes what it has handed over so far and its
 * `state()` to OUT in one file (written whole, then renamed), as a training job checkpoints at
 * a step: a kill at any instant leaves the last batch's pair. After STOP batches it says
 * "paused" on stdout and waits to be killed, its reads in flight (a long step); STOP -1 reads to
 * the epoch's end, says "done" and exits.
 *
 *   rank_read.ts STORE IDS_JSON RANK WORLD SEED WORKERS STOP OUT [RESUME_JSON]
 */
import process from "node:process";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { Loader, type LoaderState } from "../../../src/loader.ts";

const [store, idsFile, rank, world, seed, workers, stop, out, resumeFile] = process.argv.slice(2);
const ids = JSON.parse(readFileSync(idsFile, "utf8")) as string[];
const resume = resumeFile ? JSON.parse(readFileSync(resumeFile, "utf8")) as LoaderState : undefined;
const loader = new Loader({
  store, dataset: "fm", ids, batchSize: 6, prefetch: 4, seed: Number(seed), rank: Number(rank), worldSize: Number(world),
  workers: Number(workers), order: "ready", resume,
});
const handed: string[] = [];
let batches = 0;
const save = () => {
  writeFileSync(`${out}.tmp`, JSON.stringify({ ids: handed, state: loader.state() }));
  renameSync(`${out}.tmp`, out);
};
save();
for await (const b of loader.epoch(resume?.epoch ?? 0)) {
  handed.push(...b.ids);
  save();
  if (++batches === Number(stop)) {
    console.log("paused");
    setInterval(() => {}, 1000); // a step that never ends: the parent kills this process
    await new Promise(() => {});
  }
}
save();
await loader.close();
console.log("done");
