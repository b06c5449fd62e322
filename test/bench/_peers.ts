/**
 * What the tests of bench/peers/ share: the peers' python (built only by `bash bench/peers/env.sh
 * NAME`, never by the test command), the 50 Fashion-MNIST samples they read from the test
 * Cassandra, running a peer program, and reading the `.npy` tensor a peer dumps.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { ingest } from "../../src/dataset/ingest.ts";

export const ROOT = runtime.cwd();
export const DATASET = "fm-peers";
export const SAMPLES = 50;

/** The python of peer family `name` (torch, tf, streaming), or why there is none. */
export function peersPython(name = "torch"): { python?: string; why?: string } {
  const r = spawnSync("bash", [join(ROOT, "bench/peers/env.sh"), name, "--check"], { encoding: "utf8", timeout: 30_000 });
  if (r.status === 0) return { python: r.stdout.trim() };
  return { why: r.stderr.trim() || `the ${name} peers' Python environment is not built (bash bench/peers/env.sh ${name})` };
}

/**
 * The skip reason for a file of peer tests, and the python when there is none: the peers do
 * not depend on the runtime that starts them, so they are checked once, under Bun.
 */
export function peerSkip(name = "torch"): { skip: string | false; python?: string } {
  if (runtime.name !== "bun") return { skip: "the peers do not depend on the runtime that starts them: checked once, under Bun" };
  if (NO_CASSANDRA) return { skip: NO_CASSANDRA };
  const env = peersPython(name);
  return env.python ? { skip: false, python: env.python } : { skip: env.why! };
}

let ingested: Promise<string> | undefined;
/** Ingests the 50 samples once (25 of each Fashion-MNIST split) and returns the store's address. */
export function peersStore(): Promise<string> {
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

export interface PeerReport {
  samples: number;
  bytes: number;
  batches: number;
  shape: number[];
  cpuSeconds: number;
  batchMs: { p50: number; p99: number };
  batchAtMs?: number[];
  dump?: { file: string; ids: string[]; labels: number[] };
  [more: string]: unknown;
}

/** Runs `python script args…`; it must exit 0 and print its JSON report last. */
export function runPeer(python: string, script: string, args: string[], timeoutMs = 240_000): PeerReport {
  const r = spawnSync(python, [join(ROOT, script), ...args], {
    encoding: "utf8",
    timeout: timeoutMs, // a cold `import torch` or tensorflow reads a few GB of libraries
  });
  assert.is(r.status, 0, `${script} exited ${r.status}:\n${r.stderr}`);
  const lines = r.stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1]);
}

/** Every sample once, as [B, 1, 28, 28] tensors, bytes and CPU counted. */
export function checkFmReport(report: PeerReport, batch: number): void {
  assert.is(report.samples, SAMPLES, "every sample once");
  assert.is(report.batches, Math.ceil(SAMPLES / batch));
  assert.equal(report.shape, [batch, 1, 28, 28], "Fashion-MNIST's training tensor: grey 28×28");
  assert.ok(report.bytes > SAMPLES * 100, `JPEG bytes counted: ${report.bytes}`);
  assert.ok(report.cpuSeconds > 0, "the peer's CPU time is reported");
}

/** The float32 values of a NumPy .npy file (format 1.0, little-endian '<f4', C order). */
export function readNpyF32(path: string): { shape: number[]; values: Float32Array } {
  const b = readFileSync(path);
  assert.is(b.subarray(0, 6).toString("latin1"), "\x93NUMPY", "an .npy file");
  const headerLen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + headerLen).toString("latin1");
  assert.match(header, /'descr': '<f4'/);
  const shape = /'shape': \(([^)]*)\)/.exec(header)![1].split(",").filter((s) => s.trim()).map(Number);
  const data = b.subarray(10 + headerLen);
  return { shape, values: new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)) };
}

/** The darkest and brightest values of a Fashion-MNIST tensor normalized as cassette trains on it. */
export function checkFmRange(values: Float32Array): void {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) lo = Math.min(lo, v), hi = Math.max(hi, v);
  // Every Fashion-MNIST image has black background pixels; the brightest can reach 255.
  assert.ok(Math.abs(lo - (0 - 0.286) / 0.353) < 1e-4, `the darkest value is black's: ${lo}`);
  assert.ok(hi <= (1 - 0.286) / 0.353 + 1e-4 && hi > 1, `the brightest value is at most white's: ${hi}`);
}
