import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-train-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function train(...args: string[]) {
  const [cmd, ...rest] = runtime.scriptCommand("train.ts", args);
  const r = spawnSync(cmd, rest, { encoding: "utf8", timeout: 240_000 });
  if (r.status !== 0) throw new Error(`train.ts ${args.join(" ")} exited ${r.status}:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

test("train.ts runs the slice on real Fashion-MNIST: ingests, reads every sample once, GPU agrees with CPU", () => {
  const store = `sqlite:${join(dir, "fm.sqlite")}`;
  const first = train("--store", store, "--limit", "150", "--batch", "64", "--json");
  assert.is(first.ingest.written, 300, "150 from train + 150 from t10k");
  assert.is(first.samples, 300);
  assert.is(first.batches, 5);
  assert.is(first.perLabel.reduce((a: number, b: number) => a + b, 0), 300);
  assert.ok(first.perLabel.filter((n: number) => n > 0).length === 10, "all ten classes appear");
  assert.ok(first.gpuCheckMaxDiff < 1e-4);
  assert.ok(first.samplesPerSec > 0 && first.bytes > 300 * 200);
  // Re-running stores nothing twice.
  const second = train("--store", store, "--limit", "150", "--json");
  assert.is(second.ingest.written, 0);
  assert.is(second.ingest.existing, 300);
  assert.is(second.samples, 300);
}, { timeoutMs: 400_000 });
