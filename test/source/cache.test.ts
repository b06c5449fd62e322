/**
 * The local cache (src/source/cache/): Belady's policy is optimal where that can be checked by
 * brute force, the live cache over a real store reaches the bound computed from the plan and
 * serves every sample as stored, a torn entry is refetched and never served, and a cache whose
 * writer was killed with SIGKILL reopens with only whole entries.
 */
import * as assert from "uvu/assert";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { assertEpochAsStored, expectError } from "../_support/expect.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { BeladyPolicy, LruPolicy, simulateCache } from "../../src/source/cache/policy.ts";
import { CacheSource } from "../../src/source/cache/cache_source.ts";
import { openSource } from "../../src/source/open.ts";
import { epochPlan } from "../../src/plan/epoch.ts";
import { Loader } from "../../src/loader.ts";
import { crc32 } from "../../src/util/crc32.ts";
import { cassette } from "../_support/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-cache-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DATASET = "fm-cache";
const data = fashionMnistStore(join(dir, "store.sqlite"), DATASET, 120); // 240 samples
afterAll(async () => (await data).store.close());

/** The most hits any cache of `slots` equal-sized entries can make over `seq` (with bypass): tried exhaustively. */
function optimalHits(seq: readonly string[], slots: number): number {
  const memo = new Map<string, number>();
  const best = (i: number, held: readonly string[]): number => {
    if (i === seq.length) return 0;
    const key = `${i}|${[...held].sort().join()}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    const id = seq[i];
    let r: number;
    if (held.includes(id)) r = 1 + best(i + 1, held);
    else {
      r = best(i + 1, held); // not kept
      if (held.length < slots) r = Math.max(r, best(i + 1, [...held, id]));
      else for (const v of held) r = Math.max(r, best(i + 1, [...held.filter((x) => x !== v), id]));
    }
    memo.set(key, r);
    return r;
  };
  return best(0, []);
}

test("Belady's policy with bypass makes the most hits there are (brute force, equal sizes, fresh sequences)", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let k = 0; k < 300; k++) {
    const alphabet = randomInt(next, 2, 6), slots = randomInt(next, 1, 3), n = randomInt(next, 1, 12);
    const seq = Array.from({ length: n }, () => `s${randomInt(next, 1, alphabet)}`);
    const [hits] = simulateCache(new BeladyPolicy(), [seq], () => 1, slots).hits;
    assert.is(hits, optimalHits(seq, slots), `seed ${seed}: ${seq.join(" ")} with ${slots} slots`);
  }
});

test("over two shuffled epochs a cache of half the samples: Belady hits every sample it holds, LRU fewer", () => {
  const seed = freshSeed();
  const ids = Array.from({ length: 1000 }, (_, i) => `id${i}`);
  const epochs = [0, 1].map((epoch) => epochPlan(ids, { seed, epoch, batchSize: 16 }));
  const [coldB, warmB] = simulateCache(new BeladyPolicy(), epochs, () => 10, 5000).hits;
  const [coldL, warmL] = simulateCache(new LruPolicy(), epochs, () => 10, 5000).hits;
  assert.is(coldB + coldL, 0, "the first epoch is cold");
  assert.is(warmB, 500, `seed ${seed}: the 500 samples it keeps are the second epoch's first 500`);
  assert.ok(warmL < warmB, `seed ${seed}: LRU ${warmL} < Belady ${warmB}`);
});

test("an id asked for again in the same epoch (a hedge) or never announced does not break the policy", () => {
  const p = new BeladyPolicy();
  p.plan(0, ["a", "b", "c"]);
  p.added("a"), p.added("b");
  p.touch("a"), p.touch("a"); // a re-ask consumes a's next use: it now looks needed never
  assert.is(p.victim(), "a");
  assert.is(p.nextUse("zz"), Infinity);
  assert.not.ok(p.admit("zz", "b"), "a sample no epoch asks for again does not push out one that is");
});

/**
 * A Loader over `source` (shuffled with `seed`), its epochs read and checked as stored; with
 * `oneByOne`, one request at a time (batches of one, a window of one).
 */
async function readEpochs(source: CacheSource, seed: number, epochs: number[], oneByOne = false) {
  const { ids, want } = await data;
  const batchSize = oneByOne ? 1 : 16;
  const loader = new Loader({ store: source, ids, batchSize, seed, prefetch: oneByOne ? 1 : 2, rampStart: 1, order: "strict", readAhead: false });
  for (const e of epochs) await assertEpochAsStored(loader, e, ids, want);
  await loader.close();
}

async function sqliteSource() {
  const { store } = await data;
  return openSource(store, DATASET);
}

// With requests in flight, answers come in another order than asked and a size-aware keep
// depends on that order (src/source/cache/policy.ts CacheBook.keep): one request at a time,
// the live cache must make exactly the bound's decisions.
test("the live cache over a store, one request at a time: every sample as stored, and the hits equal the bound computed from the plan", async () => {
  const { ids, want } = await data;
  const seed = freshSeed();
  const total = [...want.values()].reduce((n, s) => n + s.data.byteLength, 0);
  const budget = Math.floor(total / 2);
  const path = join(dir, `half-${seed}.sqlite`);
  const cache = new CacheSource(await sqliteSource(), { path, bytes: budget });
  await readEpochs(cache, seed, [0, 1], true);
  const stats = cache.stats();
  // The Loader announced epoch 2 at epoch 1's start: the bound knows it too (its hits not counted).
  const plans = [0, 1, 2].map((epoch) => epochPlan(ids, { seed, epoch, batchSize: 1 }));
  // Epochs 0 and 1 read, epoch 2 announced (as the Loader does at epoch 1's start).
  const bound = simulateCache(new BeladyPolicy(), plans, (id) => want.get(id)!.data.byteLength, budget, 2);
  assert.is(stats.hits, bound.hits[0] + bound.hits[1], `seed ${seed}: hits ${stats.hits} vs the bound ${bound.hits}`);
  // What it holds shows that the plan reached it: a cache that never heard it holds others.
  const db = runtime.openSqlite(path);
  const held = db.prepare("SELECT id FROM cassette_cache").all().map((r) => String(r.id)).sort();
  db.close();
  assert.equal(held, bound.held.sort(), `seed ${seed}: it holds what Belady's policy holds`);
  assert.ok(stats.hits > ids.length / 3, `seed ${seed}: ${stats.hits} hits of ${ids.length}`);
  assert.ok(stats.bytes <= budget, "within its budget");
  assert.is(stats.torn, 0);
});

test("a torn entry is fetched again, never served; the cache is reused by a later run", async () => {
  const { ids, want } = await data;
  const seed = freshSeed();
  const path = join(dir, `torn-${seed}.sqlite`);
  const first = new CacheSource(await sqliteSource(), { path, bytes: 1 << 30 });
  await readEpochs(first, seed, [0]);
  assert.is(first.stats().misses, ids.length);
  // Damage three entries behind the cache's back, as a torn write or a bad block would.
  const db = runtime.openSqlite(path);
  const damaged = ids.slice(0, 3);
  for (const id of damaged) db.prepare("UPDATE cassette_cache SET data = zeroblob(length(data)) WHERE id = ?").run(id);
  db.close();
  const again = new CacheSource(await sqliteSource(), { path, bytes: 1 << 30 });
  await readEpochs(again, seed, [1]); // every sample as stored: the zeroed bytes were not served
  const s = again.stats();
  assert.is(s.torn, 3, "the three damaged entries were caught");
  assert.is(s.misses, 3, "and fetched again");
  assert.is(s.hits, ids.length - 3, "everything else came from the cache");
  const check = runtime.openSqlite(path);
  const row = check.prepare("SELECT data FROM cassette_cache WHERE id = ?").get(damaged[0])!;
  check.close();
  assert.equal(Array.from(row.data as Uint8Array), Array.from(want.get(damaged[0])!.data), "the refetched sample was kept again, whole");
});

test("a cache killed with SIGKILL while writing reopens with whole entries only", async () => {
  const { ids, want } = await data;
  const path = join(dir, "killed.sqlite");
  const [cmd, ...args] = runtime.scriptCommand(join(runtime.cwd(), "test/_support/cache_child.ts"), [join(dir, "store.sqlite"), DATASET, path]);
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  child.stdout!.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
  const exited = new Promise<string | null>((r) => child.once("close", (_code, signal) => r(signal)));
  for (let i = 0; i < 6000 && !out.includes("batch 4") && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
  child.kill("SIGKILL");
  assert.is(await exited, "SIGKILL", `killed mid-epoch (it wrote: ${out.trim().split("\n").pop()}; ${err.slice(-500)})`);
  const db = runtime.openSqlite(path);
  const rows = db.prepare("SELECT id, data, crc FROM cassette_cache").all();
  db.close();
  assert.ok(rows.length >= 4 * 8, `the entries of the batches before the kill were committed: ${rows.length}`);
  for (const r of rows) {
    const stored = want.get(String(r.id))!;
    assert.is(Number(r.crc), crc32(r.data as Uint8Array), `entry ${r.id} whole`);
    assert.equal(Array.from(r.data as Uint8Array), Array.from(stored.data), `entry ${r.id} as stored`);
  }
  const reopened = new CacheSource(await sqliteSource(), { path, bytes: 1 << 30 });
  await readEpochs(reopened, 7, [0]);
  assert.is(reopened.stats().hits, rows.length, "what it kept is served");
  assert.is(reopened.stats().misses, ids.length - rows.length, "the rest is fetched");
});

test("a cache made for another dataset, and bad options, are refused by name", async () => {
  const path = join(dir, "other.sqlite");
  const db = runtime.openSqlite(path);
  db.exec("CREATE TABLE cassette_cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO cassette_cache_meta VALUES ('dataset', 'imagenet')");
  db.close();
  const source = await sqliteSource();
  await expectError((async () => new CacheSource(source, { path, bytes: 1000 }))(), "ERR_INVALID_OPTION", /holds samples of 'imagenet'/);
  await expectError((async () => new CacheSource(source, { path: join(dir, "x.sqlite"), bytes: 0 }))(), "ERR_INVALID_OPTION", /'bytes' must be a positive number of bytes: current value is 0/);
  await expectError((async () => new CacheSource(source, { path: join(dir, "x.sqlite"), bytes: 10, policy: "fifo" as "lru" }))(), "ERR_INVALID_OPTION", /'policy' must be "belady" or "lru": current value is fifo/);
  await source.close();
});

test("the Loader's `cache` option: a second epoch from the cache, its figures in stats(), read workers refused beside it", async () => {
  const { ids, want } = await data;
  const path = join(dir, "loader-option.sqlite");
  const address = `sqlite:${join(dir, "store.sqlite")}`;
  const loader = new Loader({ store: address, dataset: DATASET, ids, batchSize: 32, readAhead: false, cache: { path, bytes: 1 << 30 } });
  for (const e of [0, 1]) await assertEpochAsStored(loader, e, ids, want);
  const { cache } = loader.stats();
  await loader.close();
  assert.ok(cache, "stats() has the cache's figures");
  assert.is(cache!.misses, ids.length, "the first epoch fetched every sample once");
  assert.is(cache!.hits, ids.length, "the second came from the cache");
  assert.throws(() => new Loader({ store: address, dataset: DATASET, ids, batchSize: 32, workers: 2, cache: { path, bytes: 1000 } }), /'cache' and 'workers' cannot both be set/);
  assert.throws(() => new Loader({ store: address, dataset: DATASET, ids, batchSize: 32, cache: { path, bytes: -1 } }), /Cannot open a cache as 'bytes' must be a positive number of bytes: current value is -1/);
});

test("cassette read --cache: the second epoch from the cache in its JSON, the budget's flags checked by name", async () => {
  const { ids } = await data;
  const path = join(dir, "cli.sqlite");
  const store = `sqlite:${join(dir, "store.sqlite")}`;
  const r = cassette("read", "--store", store, "--dataset", DATASET, "--epochs", "2", "--cache", path, "--cache-bytes", "50MB", "--json");
  assert.is(r.code, 0, r.err);
  const report = JSON.parse(r.out.trim().split("\n").pop()!);
  assert.is(report.samples, 2 * ids.length);
  // The second epoch's first samples are asked for while the first one's last are in flight
  // (read ahead): those few are fetched twice; the rest of the second epoch is hits.
  const c = report.cache;
  assert.ok(c.misses >= ids.length && c.misses <= ids.length + report.readAhead, `the first epoch fetched each sample once: ${JSON.stringify(c)}, read ahead ${report.readAhead}`);
  assert.ok(c.hits >= ids.length - report.readAhead, `the second came from the cache: ${JSON.stringify(c)}`);
  assert.is(report.cache.budget, 50e6);
  const refused = [
    [["--cache", path], /--cache needs --cache-bytes SIZE/],
    [["--cache-bytes", "1GB"], /--cache-bytes needs --cache PATH/],
    [["--cache", path, "--cache-bytes", "lots"], /--cache-bytes must be a size such as 2GiB, 500MB or 1000000: current value is lots/],
    [["--cache", path, "--cache-bytes", "1GB", "--cache-policy", "fifo"], /--cache-policy must be belady or lru: current value is fifo/],
    [["--cache", path, "--cache-bytes", "1GB", "--workers", "2"], /--cache reads in the loader's thread/],
  ] as const;
  for (const [flags, message] of refused) {
    const bad = cassette("read", "--store", store, "--dataset", DATASET, ...flags);
    assert.is(bad.code, 2, `${flags.join(" ")}: ${bad.err}`);
    assert.match(bad.err, message);
  }
});
