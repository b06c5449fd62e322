/**
 * The tf.data peer of bench/peers/ still runs: it reads the 50 Fashion-MNIST samples that
 * _peers.ts ingests into the test Cassandra and hands over [B, 1, 28, 28] training tensors
 * (and [B, 3, 224, 224] ImageNet-style ones: tf.io.decode_jpeg makes the grey JPEGs RGB).
 *
 * Its virtualenv (tensorflow-cpu, 1.6 GB) is built only by `bash bench/peers/env.sh tf`, never
 * by the test command; without it this file skips, saying so. Checked once, under Bun.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { checkFmRange, checkFmReport as check, DATASET, peerSkip, peersStore, readNpyF32, ROOT, runPeer, SAMPLES } from "./_peers.ts";

const { skip, python } = peerSkip("tf");
const SCRIPT = "bench/peers/tf_cassandra.py";

/** Runs the tf.data peer with `args` on the test store. */
async function peer(...args: string[]) {
  return runPeer(python!, SCRIPT, ["--store", await peersStore(), "--dataset", DATASET, "--json", ...args]);
}

/** A scratch folder for dumps and id files, removed after `fn`. */
async function inTmp<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "cassette-peers-tf-"));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("the tf.data peer (parallel map, AUTOTUNE) reads the 50 samples as [B, 1, 28, 28] tensors", async () => {
  const r = await peer("--batch", "16");
  check(r, 16);
  assert.is(r.peer, "tfdata");
  assert.is(r.parallel, "autotune");
  assert.is(r.deterministic, true, "tf.data's default");
  assert.match(String(r.tensorflow), /^2\./);
}, { skip, timeoutMs: 300_000 });

test("the tf.data peer's tensor is Fashion-MNIST's as cassette trains on it, and a deterministic interleave keeps the map's order", async () => {
  await inTmp(async (dir) => {
    const map = await peer("--batch", "16", "--dump", join(dir, "map.npy"));
    const { shape, values } = readNpyF32(join(dir, "map.npy"));
    assert.equal(shape, [16, 1, 28, 28]);
    assert.is(map.dump!.ids.length, 16, "the first batch's ids");
    assert.is(map.dump!.labels.length, 16, "the first batch's labels");
    checkFmRange(values);
    // Two shards taken one sample each in turn give back the ids' order: same first batch.
    const inter = await peer("--batch", "16", "--interleave", "2", "--dump", join(dir, "inter.npy"));
    assert.equal(inter.dump!.ids, map.dump!.ids, "the same first 16 ids, in the same order");
    assert.equal(inter.dump!.labels, map.dump!.labels);
    assert.equal(Array.from(readNpyF32(join(dir, "inter.npy")).values), Array.from(values), "the same tensor");
  });
}, { skip, timeoutMs: 300_000 });

test("the tf.data peer's --series gives each batch's hand-over time, rising", async () => {
  const r = await peer("--batch", "8", "--series");
  const at = r.batchAtMs!;
  assert.is(at.length, Math.ceil(SAMPLES / 8), "one time per batch");
  for (let i = 1; i < at.length; i++) assert.ok(at[i] >= at[i - 1], `batch ${i} at ${at[i]} ms, before batch ${i - 1} at ${at[i - 1]} ms`);
  assert.ok(Math.abs(at[at.length - 1] - (r.seconds as number) * 1000) < 1000, `the last batch (${at[at.length - 1]} ms) ends the clock (${r.seconds} s)`);
}, { skip, timeoutMs: 300_000 });

test("the tf.data peer with a parallel interleave of 2 shards, not deterministic, reads the 50 samples", async () => {
  const r = await peer("--batch", "16", "--interleave", "2", "--no-deterministic");
  check(r, 16);
  assert.is(r.interleave, 2);
  assert.is(r.deterministic, false);
  assert.ok((r.maxInFlight as number) >= 1 && (r.maxInFlight as number) <= 2, `one fetch in flight per shard at most: ${r.maxInFlight}`);
}, { skip, timeoutMs: 300_000 });

test("the tf.data peer with --parallel 4 on a private pool of 4 threads reads the 50 samples, at most 4 fetches at once", async () => {
  const r = await peer("--batch", "10", "--parallel", "4", "--threadpool", "4");
  check(r, 10);
  assert.ok((r.maxInFlight as number) >= 1 && (r.maxInFlight as number) <= 4, `fetches in flight: ${r.maxInFlight}`);
}, { skip, timeoutMs: 300_000 });

test("the tf.data peer's --tensor imagenet makes [B, 3, 224, 224] tensors normalized with ImageNet's mean and std", async () => {
  await inTmp(async (dir) => {
    const r = await peer("--batch", "25", "--tensor", "imagenet", "--dump", join(dir, "in.npy"));
    assert.is(r.samples, SAMPLES, "every sample once");
    assert.equal(r.shape, [25, 3, 224, 224]);
    const { shape, values } = readNpyF32(join(dir, "in.npy"));
    assert.equal(shape, [25, 3, 224, 224]);
    const mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225];
    const plane = 224 * 224;
    for (let c = 0; c < 3; c++) {
      let lo = Infinity, hi = -Infinity;
      for (let n = 0; n < 25; n++) {
        const at = (n * 3 + c) * plane;
        for (let i = at; i < at + plane; i++) lo = Math.min(lo, values[i]), hi = Math.max(hi, values[i]);
      }
      // Black and white, after the channel's normalization; bilinear resizing stays within them.
      assert.ok(lo >= (0 - mean[c]) / std[c] - 1e-4 && hi <= (1 - mean[c]) / std[c] + 1e-4, `channel ${c}: ${lo}..${hi}`);
      assert.ok(hi > lo, `channel ${c} is not flat`);
    }
  });
}, { skip, timeoutMs: 300_000 });

test("the tf.data peer stops on an id the store has no row for, with a named error naming it", async () => {
  await inTmp(async (dir) => {
    const missing = "00000000-0000-4000-8000-000000000001";
    writeFileSync(join(dir, "ids.txt"), missing + "\n");
    const r = spawnSync(python!, [join(ROOT, SCRIPT), "--store", await peersStore(), "--dataset", DATASET, "--json", "--ids", join(dir, "ids.txt")], {
      encoding: "utf8",
      timeout: 240_000,
    });
    assert.is(r.status, 1, `exit status ${r.status}`);
    assert.match(r.stderr, new RegExp(`MissingSample: Cannot read sample ${missing} as the store has no row for it`));
  });
}, { skip, timeoutMs: 300_000 });
