/**
 * One question: over a far store, what does a local cache of half the dataset give the second
 * epoch, and does the cache that knows the next epoch's order (Belady's policy) reach the bound
 * computed from the plan, beside LRU in the same run?
 *
 * Fashion-MNIST JPEGs are exported (kept in .tmp/bench-cache and reused), served by nginx
 * through the project's TCP latency proxy (its own process) at --rtt ms, and read by the Loader
 * in this thread (the cache reads in this thread; the contender without one does too):
 *
 *   no cache   the second epoch over the far link, every sample fetched again
 *   LRU        a cache of --fraction of the dataset's bytes, least recently used given up
 *   Belady     the same cache given the plan: the sample needed furthest away given up
 *
 * Each repetition fills a fresh cache with epoch 0 (not timed) and times epoch 1. After the
 * table: each cache's hit ratio in epoch 1, and Belady's bound for the same plan, sizes and
 * budget (simulateCache, src/source/cache/policy.ts).
 *
 *   bun bench/cache.bench.ts [--samples N] [--rtt MS] [--fraction F] [--batch B] [--rounds R] [--quick]
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { runtime } from "../runtime-adapters/index.ts";
import { exportDataset } from "../src/source/export/export.ts";
import { Loader } from "../src/loader.ts";
import { epochPlan } from "../src/plan/epoch.ts";
import { BeladyPolicy, LruPolicy, simulateCache } from "../src/source/cache/policy.ts";
import { startNginx } from "../test/_support/nginx.ts";
import { startProxyProcess } from "../tools/proxy/process.ts";
import { compare, type Contender } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";
import { FASHION_MNIST, fashionMnistStore } from "./_lib/fashion_store.ts";

const args = benchArgs({
  program: "bench/cache.bench.ts",
  usage: "usage: bun bench/cache.bench.ts [--samples N] [--rtt MS] [--fraction F] [--batch B] [--rounds R] [--quick]",
  valued: ["samples", "rtt", "fraction", "batch", "rounds"],
  flags: ["quick"],
});
const quick = args.has("quick");
const perSplit = Math.ceil(args.int("samples", quick ? 1000 : 4000) / 2);
const rtt = args.num("rtt", 150);
const fraction = args.num("fraction", 0.5);
const batchSize = args.int("batch", 64);
const rounds = args.int("rounds", quick ? 2 : 3);
const SEED = 11;

const root = join(runtime.cwd(), ".tmp", "bench-cache");
const { store, ids } = await fashionMnistStore(root, perSplit);
const sizes = new Map((await store.get(FASHION_MNIST, ids)).map((s) => [s.id, s.data.byteLength]));
await exportDataset(store, FASHION_MNIST, join(root, "export"));
await store.close();
const total = [...sizes.values()].reduce((a, b) => a + b, 0);
const budget = Math.floor(total * fraction);
const web = await startNginx({ root: join(root, "export") });
const proxy = await startProxyProcess(`127.0.0.1:${web.port}`, 0, ["--delay-ms", String(rtt / 2)]);
const url = `http://127.0.0.1:${proxy.port}/data`;
console.log(
  `${runtime.name} ${runtime.version}: ${ids.length} Fashion-MNIST JPEGs (${(total / 1e6).toFixed(2)} MB) from nginx through the proxy at RTT ${rtt} ms; ` +
    `cache ${(fraction * 100).toFixed(0)} % (${(budget / 1e6).toFixed(2)} MB); batch ${batchSize}; ${rounds} rounds, each: epoch 0 fills a fresh cache (untimed), epoch 1 timed`,
);

const caches = join(root, "caches");
rmSync(caches, { recursive: true, force: true });
mkdirSync(caches, { recursive: true });
const hitRatios: Record<string, number[]> = {};
let made = 0;

function contender(name: string, policy?: "belady" | "lru", baseline = false): Contender {
  let loader: Loader | undefined;
  let before = 0;
  return {
    name, work: ids.length, baseline,
    before: async () => {
      await loader?.close();
      const cache = policy && { path: join(caches, `${policy}-${made++}.sqlite`), bytes: budget, policy };
      loader = new Loader({ store: url, ids, batchSize, seed: SEED, workers: 0, readAhead: false, ...(cache ? { cache } : {}) });
      if (!cache) return;
      for await (const _ of loader.epoch(0)) { /* fill */ }
      before = loader.stats().cache!.hits;
    },
    run: async () => {
      for await (const _ of loader!.epoch(1)) { /* the tight loop */ }
      const c = loader!.stats().cache;
      if (c) (hitRatios[name] ??= []).push((c.hits - before) / ids.length);
    },
  };
}

try {
  await compare(`the second epoch at RTT ${rtt} ms (samples/s)`, { unit: "samples/s", rounds, warmup: 0 }, [
    contender("no cache", undefined, true),
    contender("LRU", "lru"),
    contender("Belady", "belady"),
  ]);
  const plans = [0, 1, 2].map((epoch) => epochPlan(ids, { seed: SEED, epoch, batchSize }));
  const size = (id: string) => sizes.get(id)!;
  const bound = (p: BeladyPolicy | LruPolicy) => simulateCache(p, plans, size, budget, 2).hits[1] / ids.length;
  for (const [name, r] of Object.entries(hitRatios)) console.log(`  ${name}: epoch 1 hit ratio ${r.map((x) => x.toFixed(4)).join(", ")}`);
  console.log(`  bound from the plan (Belady, one request at a time): ${bound(new BeladyPolicy()).toFixed(4)}; LRU simulated the same way: ${bound(new LruPolicy()).toFixed(4)}`);
} finally {
  await proxy.close();
  await web.close();
}
runtime.exit(0);
