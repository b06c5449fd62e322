/**
 * The Python peers of bench/peers/ still run: each reads 50 Fashion-MNIST samples that this
 * test ingests into the test Cassandra, and hands over [B, 1, 28, 28] training tensors.
 *
 * The peers are benchmarks, not tests: their virtualenv (PyTorch, a few GB) is built only by
 * `bash bench/peers/env.sh`, never by the test command. Without it this file skips, saying so.
 * The peers do not depend on the runtime that starts them: checked once, under Bun.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { checkFmRange, checkFmReport as check, DATASET, peerSkip, peersStore, readNpyF32, runPeer } from "./_peers.ts";

const { skip, python } = peerSkip("torch");

/** Runs the PyTorch peer with `args` on the test store. */
async function peer(...args: string[]) {
  return runPeer(python!, "bench/peers/torch_cassandra.py", ["--store", await peersStore(), "--dataset", DATASET, "--json", ...args]);
}

test("the PyTorch peer (two workers, one query at a time) reads the 50 samples as [B, 1, 28, 28] tensors", async () => {
  check(await peer("--workers", "2", "--batch", "16"), 16);
}, { skip, timeoutMs: 300_000 });

test("the PyTorch peer's tensor is Fashion-MNIST's as cassette trains on it: (x/255 − 0.2860) / 0.3530", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-peers-"));
  try {
    const r = await peer("--workers", "2", "--batch", "16", "--dump", join(dir, "first.npy"));
    const { shape, values } = readNpyF32(join(dir, "first.npy"));
    assert.equal(shape, [16, 1, 28, 28]);
    assert.is(r.dump!.ids.length, 16, "the first batch's ids");
    assert.is(r.dump!.labels.length, 16, "the first batch's labels");
    checkFmRange(values);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, { skip, timeoutMs: 300_000 });

test("the PyTorch peer's --series gives each batch's hand-over time, rising", async () => {
  const r = await peer("--workers", "1", "--batch", "8", "--series");
  const at = r.batchAtMs!;
  assert.is(at.length, Math.ceil(50 / 8), "one time per batch");
  for (let i = 1; i < at.length; i++) assert.ok(at[i] >= at[i - 1], `batch ${i} at ${at[i]} ms, before batch ${i - 1} at ${at[i - 1]} ms`);
  assert.ok(Math.abs(at[at.length - 1] - (r.seconds as number) * 1000) < 1000, `the last batch (${at[at.length - 1]} ms) ends the clock (${r.seconds} s)`);
}, { skip, timeoutMs: 300_000 });

test("the PyTorch peer's --time-limit stops taking batches once the time is up and says so", async () => {
  const r = await peer("--workers", "2", "--batch", "8", "--time-limit", "0");
  assert.is(r.samples, 8, "a limit already passed at the first batch: that batch only");
  assert.is(r.timeLimited, true);
  assert.is((await peer("--workers", "0", "--batch", "25", "--time-limit", "600")).timeLimited, false, "a limit not reached is not reported");
}, { skip, timeoutMs: 300_000 });

test("the threaded PyTorch peer (ConcurrentDataLoader's design, in_order=False) reads the 50 samples", async () => {
  check(await peer("--workers", "2", "--batch", "16", "--threads", "4", "--no-in-order"), 16);
}, { skip, timeoutMs: 300_000 });

test("the PyTorch peer without workers reads the 50 samples", async () => {
  check(await peer("--workers", "0", "--batch", "10", "--threads", "2"), 10);
}, { skip, timeoutMs: 300_000 });
