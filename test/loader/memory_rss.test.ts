/**
 * maxPrefetchBytes bounds memory, not only a count: samples of 2 MB, a window set to start at
 * 16 batches (128 MB), and a consumer that stops after two batches (a long step: the window
 * fills to what bounds it). The reading process (a child of its own, so that nothing earlier
 * hides its growth; its resident memory without file-backed pages, which SQLite's mapping of
 * the store's file adds as page cache) grows by at most the bound plus a stated overhead (measured 24 MB on Bun,
 * 62 MB on Deno and Node for a 24 MB bound); without the bound, by the whole window (~155 MB).
 * The same with JPEGs decoded in two read workers, the bound counting pixels: 65 MB (Bun) to
 * 156 MB (Node) with the bound, two worker runtimes included; 300–430 MB without.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { openStore } from "../../src/source/open.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const MB = 1 << 20;
const SAMPLE = 2 * MB;
const COUNT = 160; // 320 MB stored
const BOUND = 24 * MB;
/** What the process may add beyond the bound: the batches handed over, the source's and the runtime's buffers, garbage not yet collected. */
const OVERHEAD = 64 * MB;
/** With two read workers: two more runtimes (a heap and a wasm decoder each) started after the baseline. */
const OVERHEAD_WORKERS = 200 * MB;

/** How much a reading child process grew (MB) with the consumer paused (test/loader/_child/rss_read.ts); it must read all `samples`. */
function childGrowth(store: string, dataset: string, samples: number, maxPrefetchBytes?: number, decode = false): number {
  const [cmd, ...args] = runtime.scriptCommand("test/loader/_child/rss_read.ts", [store, dataset, String(maxPrefetchBytes ?? "none"), ...(decode ? ["decode"] : [])]);
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 100_000 });
  assert.is(r.status, 0, `the reader failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { growthMB: number; samples: number };
  assert.is(out.samples, samples, "every sample read");
  return out.growthMB;
}

test("maxPrefetchBytes: resident memory grows by at most the bound plus a stated overhead with 2 MB samples; without it, far more", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-rss-"));
  const store = await openStore(`sqlite:${join(dir, "big.sqlite")}`);
  try {
    const next = rng(freshSeed());
    await store.createDataset({ version: 1, name: "big", columns: [], groupBy: [], label: { kind: "int" } });
    for (let i = 0; i < COUNT; i += 16) {
      await store.put("big", Array.from({ length: 16 }, (_, k) => ({ key: `k${i + k}`, label: 0, data: randomBytes(next, SAMPLE) })));
    }
    const ids: string[] = [];
    for await (const page of store.scanNat("big")) ids.push(...page.map((r) => r.id));
    const growth = (maxPrefetchBytes?: number) => childGrowth(`sqlite:${join(dir, "big.sqlite")}`, "big", ids.length, maxPrefetchBytes);
    await store.close();
    const bounded = growth(BOUND);
    const free = growth();
    console.log(`  RSS growth: ${bounded.toFixed(0)} MB with maxPrefetchBytes ${BOUND / MB} MB, ${free.toFixed(0)} MB without`);
    assert.ok(bounded <= (BOUND + OVERHEAD) / MB, `bounded: +${bounded.toFixed(0)} MB ≤ ${(BOUND + OVERHEAD) / MB} MB`);
    assert.ok(free > (BOUND + OVERHEAD) / MB, `without the bound: +${free.toFixed(0)} MB (the test would not see a missing bound otherwise)`);
  } finally {
    await store.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}, { timeoutMs: 120_000 });

test("maxPrefetchBytes counts decoded pixels: JPEGs of 1024×768 decoded in two read workers stay within the bound plus the overhead; without it, far more", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-rss-px-"));
  const address = `sqlite:${join(dir, "jpeg.sqlite")}`;
  const store = await openStore(address);
  try {
    const next = rng(freshSeed());
    await store.createDataset({ version: 1, name: "px", columns: [], groupBy: [], label: { kind: "int" } });
    // Eight smooth images (small files, ~2.4 MB of pixels each), each stored under 25 keys.
    const [w, h] = [1024, 768];
    const files = Array.from({ length: 8 }, () => {
      const px = new Uint8Array(w * h * 3);
      const [a, b, c] = [randomInt(next, 1, 7), randomInt(next, 1, 7), randomInt(next, 0, 255)];
      for (let i = 0; i < w * h; i++) {
        const x = i % w, y = (i / w) | 0;
        px[3 * i] = (x * a) & 255;
        px[3 * i + 1] = (y * b) & 255;
        px[3 * i + 2] = (c + x + y) & 255;
      }
      return cjpeg(px, w, h, 3);
    });
    await store.put("px", Array.from({ length: 200 }, (_, i) => ({ key: `p${i}`, label: 0, data: files[i % 8] })));
    await store.close();
    const growth = (maxPrefetchBytes?: number) => childGrowth(address, "px", 200, maxPrefetchBytes, true);
    const bounded = growth(BOUND);
    const free = growth();
    console.log(`  RSS growth, decoding in 2 workers: ${bounded.toFixed(0)} MB with maxPrefetchBytes ${BOUND / MB} MB, ${free.toFixed(0)} MB without`);
    assert.ok(bounded <= (BOUND + OVERHEAD_WORKERS) / MB, `bounded: +${bounded.toFixed(0)} MB ≤ ${(BOUND + OVERHEAD_WORKERS) / MB} MB`);
    assert.ok(free > (BOUND + OVERHEAD_WORKERS) / MB, `without the bound: +${free.toFixed(0)} MB (the test would not see a missing bound otherwise)`);
  } finally {
    await store.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}, { timeoutMs: 180_000 });
