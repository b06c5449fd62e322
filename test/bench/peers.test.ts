/**
 * The Python peers of bench/peers/ still run: each reads 50 Fashion-MNIST samples that this
 * test ingests into the test Cassandra, and hands over [B, 1, 28, 28] training tensors.
 *
 * The peers are benchmarks, not tests: their virtualenv (PyTorch, a few GB) is built only by
 * `bash bench/peers/env.sh`, never by the test command. Without it this file skips, saying so.
 * The peers do not depend on the runtime that starts them: checked once, under Bun.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassandraStore } from "../../src/source/cassandra.ts";
import { ingest } from "../../src/dataset/ingest.ts";

const ROOT = runtime.cwd();
const DATASET = "fm-peers";
const SAMPLES = 50;

/** The peers' python, or why there is none (env.sh --check answers without building). */
function peersPython(): { python?: string; why?: string } {
  const r = spawnSync("bash", [join(ROOT, "bench/peers/env.sh"), "--check"], { encoding: "utf8", timeout: 30_000 });
  if (r.status === 0) return { python: r.stdout.trim() };
  return { why: r.stderr.trim() || "the Python peers' environment is not built (bash bench/peers/env.sh)" };
}

const env = runtime.name === "bun" ? peersPython() : {};
const skip = runtime.name !== "bun"
  ? "the peers do not depend on the runtime that starts them: checked once, under Bun"
  : NO_CASSANDRA || (env.python ? false : env.why!);

let ingested: Promise<string> | undefined;
/** Ingests the 50 samples once (25 of each Fashion-MNIST split) and returns the store's address. */
function store(): Promise<string> {
  return ingested ??= (async () => {
    const address = testCassandra("cassette_peers")!;
    const s = await CassandraStore.open(address);
    try {
      await ingest(s, "idx:/usr/share/datasets/fashion-mnist/", { dataset: DATASET, limit: SAMPLES / 2 });
      assert.is((await s.info(DATASET)).count, SAMPLES, "the store holds the 50 samples");
    } finally {
      await s.close();
    }
    return address;
  })();
}

interface PeerReport {
  samples: number;
  bytes: number;
  batches: number;
  shape: number[];
  cpuSeconds: number;
  batchMs: { p50: number; p99: number };
  dump?: { file: string; ids: string[]; labels: number[] };
}

/** The float32 values of a NumPy .npy file (format 1.0, little-endian '<f4', C order). */
function readNpyF32(path: string): { shape: number[]; values: Float32Array } {
  const b = readFileSync(path);
  assert.is(b.subarray(0, 6).toString("latin1"), "\x93NUMPY", "an .npy file");
  const headerLen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + headerLen).toString("latin1");
  assert.match(header, /'descr': '<f4'/);
  const shape = /'shape': \(([^)]*)\)/.exec(header)![1].split(",").filter((s) => s.trim()).map(Number);
  const data = b.subarray(10 + headerLen);
  return { shape, values: new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)) };
}

/** Runs the PyTorch peer with `args` on the test store; it must exit 0 and print its JSON line. */
async function peer(...args: string[]): Promise<PeerReport> {
  const address = await store();
  const r = spawnSync(env.python!, [join(ROOT, "bench/peers/torch_cassandra.py"), "--store", address, "--dataset", DATASET, "--json", ...args], {
    encoding: "utf8",
    timeout: 240_000, // a cold `import torch` reads a few GB of libraries
  });
  assert.is(r.status, 0, `the peer exited ${r.status}:\n${r.stderr}`);
  const lines = r.stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1]);
}

function check(report: PeerReport, batch: number): void {
  assert.is(report.samples, SAMPLES, "every sample once");
  assert.is(report.batches, Math.ceil(SAMPLES / batch));
  assert.equal(report.shape, [batch, 1, 28, 28], "Fashion-MNIST's training tensor: grey 28×28");
  assert.ok(report.bytes > SAMPLES * 100, `JPEG bytes counted: ${report.bytes}`);
  assert.ok(report.cpuSeconds > 0, "the peer's CPU time is reported");
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
    let lo = Infinity, hi = -Infinity;
    for (const v of values) lo = Math.min(lo, v), hi = Math.max(hi, v);
    // Every Fashion-MNIST image has black background pixels; the brightest can reach 255.
    assert.ok(Math.abs(lo - (0 - 0.286) / 0.353) < 1e-4, `the darkest value is black's: ${lo}`);
    assert.ok(hi <= (1 - 0.286) / 0.353 + 1e-4 && hi > 1, `the brightest value is at most white's: ${hi}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, { skip, timeoutMs: 300_000 });

test("the threaded PyTorch peer (ConcurrentDataLoader's design, in_order=False) reads the 50 samples", async () => {
  check(await peer("--workers", "2", "--batch", "16", "--threads", "4", "--no-in-order"), 16);
}, { skip, timeoutMs: 300_000 });

test("the PyTorch peer without workers reads the 50 samples", async () => {
  check(await peer("--workers", "0", "--batch", "10", "--threads", "2"), 10);
}, { skip, timeoutMs: 300_000 });
