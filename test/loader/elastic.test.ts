/**
 * Elastic resume with real rank processes: four ranks (test/loader/_child/rank_read.ts), each a
 * process reading its share of an epoch from a SQLite store and saving its state at every
 * batch it hands over, are killed with SIGKILL mid-epoch, their reads in flight. Their last
 * states merged (mergeStates), three new rank processes, with other read-worker counts, finish
 * the epoch: what the seven handed over is every sample of the split once.
 */
import * as assert from "uvu/assert";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { openStore } from "../../src/source/open.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { type LoaderState, mergeStates } from "../../src/loader.ts";
import { epochPlan } from "../../src/plan/epoch.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-elastic-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a rank; resolves once it says `until` ("paused" or "done"), with a kill for it. */
function rank(args: string[], until: string): Promise<{ kill: () => Promise<string | null> }> {
  const [cmd, ...rest] = runtime.scriptCommand("test/loader/_child/rank_read.ts", args);
  const child = spawn(cmd, rest, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "", stderr = "";
  child.stdout!.setEncoding("utf8");
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (c: string) => (stderr += c));
  const closed = new Promise<[number | null, string | null]>((r) => child.once("close", (code, signal) => r([code, signal])));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (c: string) => {
      stdout += c;
      if (stdout.includes(until)) {
        resolve({
          kill: async () => {
            child.kill("SIGKILL");
            return (await closed)[1];
          },
        });
      }
    });
    closed.then(([code, signal]) => {
      if (!stdout.includes(until)) reject(new Error(`rank ${args.join(" ")} exited ${code} (${signal}) before '${until}':\n${stderr.slice(-2000)}`));
    });
  });
}

const saved = (file: string) => JSON.parse(readFileSync(file, "utf8")) as { ids: string[]; state: LoaderState };

test("4 rank processes killed (SIGKILL) mid-epoch, resumed as 3 with other worker counts: the union of what they handed over is the split, no sample twice", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const address = `sqlite:${join(dir, "fm.sqlite")}`;
  const store = await openStore(address);
  await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 150 });
  const ids: string[] = [];
  for await (const page of store.scanNat("fm")) ids.push(...page.map((x) => x.id));
  await store.close();
  const idsFile = join(dir, "ids.json");
  writeFileSync(idsFile, JSON.stringify(ids));
  // 300 samples (150 of train, 150 of t10k): four ranks of 75, 13 batches of 6 each; each stops
  // after 1 to 5 of them, some reading in read workers, some in their own thread.
  const killed = await Promise.all([0, 1, 2, 3].map((k) =>
    rank([address, idsFile, String(k), "4", String(seed), String(k % 2), String(randomInt(r, 1, 5)), join(dir, `first-${k}.json`)], "paused")
  ));
  for (const k of killed) assert.is(await k.kill(), "SIGKILL");
  const first = [0, 1, 2, 3].map((k) => saved(join(dir, `first-${k}.json`)));
  first.forEach((f, k) => assert.is(f.state.handed, f.ids.length, `rank ${k}: the state saved with its batch`));
  const merged = mergeStates(first.map((f) => f.state));
  const resumeFile = join(dir, "merged.json");
  writeFileSync(resumeFile, JSON.stringify(merged));
  const resumed = await Promise.all([0, 1, 2].map((k) =>
    rank([address, idsFile, String(k), "3", String(seed), String(k), "-1", join(dir, `second-${k}.json`), resumeFile], "done")
  ));
  await Promise.all(resumed.map((x) => x.kill())); // exited already
  const second = [0, 1, 2].map((k) => saved(join(dir, `second-${k}.json`)));
  const all = [...first, ...second].flatMap((s) => s.ids);
  assert.is(all.length, ids.length, `seed ${seed}: ${all.length} handed over in all, the split has ${ids.length}`);
  assert.equal([...all].sort(), [...ids].sort(), `seed ${seed}: every sample once`);
  // The resumed ranks end the epoch: their states name epoch 1, planned for 3 ranks.
  second.forEach((s, k) => {
    assert.is(s.state.epoch, 1);
    assert.is(s.state.planned, epochPlan(ids, { seed, epoch: 1, batchSize: 6, rank: k, worldSize: 3 }).length);
  });
}, { timeoutMs: 180_000 });
