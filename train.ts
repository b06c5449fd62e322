/**
 * bun run train.ts — the main job.
 *
 * Until the training kernels land, this runs the end-to-end slice of the flow on real data:
 * Fashion-MNIST (Debian's dataset-fashion-mnist) → JPEG → the store (ingested once) → the
 * Loader (out-of-order prefetching, exactly once) → the wasm JPEG decoder (in the loader's
 * transform, or a worker pool) → upload to the GPU → one WGSL kernel (normalize) → check the
 * GPU's answer against the CPU's → report what it did and how fast.
 */
import { runtime } from "./runtime-adapters/index.ts";
import { CassetteError } from "./src/errors.ts";
import { openStore } from "./src/source/open.ts";
import { ingest } from "./src/dataset/ingest.ts";
import { progress } from "./src/observe/progress.ts";
import { Loader } from "./src/loader.ts";
import { createJpegDecoder } from "./src/decode/jpeg.ts";
import { createDecodePool, type JpegDecodePool } from "./src/decode/pool.ts";
import { deviceInfo, requestDevice } from "./src/gpu/device.ts";
import { readBuffer } from "./src/gpu/buffers.ts";
import { encodeNormalize } from "./src/gpu/normalize.ts";
import { parseArgs } from "./src/cli/args.ts";

const HELP = `usage: bun run train.ts [options]

Runs the end-to-end slice: ingest Fashion-MNIST into the embedded store (first run only),
read it back in batches, decode, upload, normalize on the GPU, and report throughput.

  --store ADDRESS   sqlite:PATH (default sqlite:data/fashion-mnist.sqlite) or cassandra://…/KEYSPACE
  --idx PREFIX      idx files (default /usr/share/datasets/fashion-mnist/)
  --limit N         only the first N images of each idx split (default: all 70000)
  --batch B         images per batch (default 256)
  --order ORDER     ready (default) or strict
  --workers N       decode in N worker threads (default 0: in the loader's transform, fastest for 28×28)
  --backend NAME    WebGPU backend: dawn, or builtin (Deno only); default: the runtime's fastest
  --json            print one JSON document instead of the report
  -h, --help        this text`;

const DATASET = "fashion-mnist";
const MEAN = 0.2860, STD = 0.3530; // Fashion-MNIST train pixel statistics (0..1 units)

async function main(): Promise<number> {
  const { options } = parseArgs(runtime.args(), "train.ts", ["store", "idx", "limit", "batch", "backend", "order", "workers"]);
  if (options.has("help")) return void console.log(HELP), 0;
  const json = options.has("json");
  const address = String(options.get("store") ?? "sqlite:data/fashion-mnist.sqlite");
  const prefix = String(options.get("idx") ?? "/usr/share/datasets/fashion-mnist/");
  const limit = options.has("limit") ? positiveInt("limit", options.get("limit")) : undefined;
  const batch = positiveInt("batch", options.get("batch") ?? "256");
  const backend = options.get("backend") as "dawn" | "builtin" | undefined;
  const order = (options.get("order") ?? "ready") as "ready" | "strict";
  const workers = Number(options.get("workers") ?? 0);
  const log = (s: string) => json || console.log(s);

  const store = await openStore(address);
  try {
    // 1. Ingest (skipped for samples already stored).
    let t0 = runtime.now();
    let bar: ReturnType<typeof progress> | undefined;
    const ing = await ingest(store, `idx:${prefix}`, {
      dataset: DATASET,
      limit,
      onProgress: (p) => {
        bar ??= progress("ingest", p.total, json, runtime.now() - p.seconds * 1000);
        bar.update(p.done, `${p.written} new`);
      },
    });
    if (ing.errors.length) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot use ${DATASET}: ${ing.errors.length} samples failed to ingest, first: ${ing.errors[0].reason}`);
    const ingestS = (runtime.now() - t0) / 1000;
    log(`ingest   ${ing.written} new, ${ing.existing} already stored (${store.address}) in ${ingestS.toFixed(1)} s` +
      (ing.written ? ` — ${(ing.written / ingestS).toFixed(0)} samples/s, ${(ing.bytes / 1e6).toFixed(1)} MB of JPEG` : ""));

    // 2. Read back in batches, decode, upload, normalize on the GPU. The samples are this
    // run's (the first --limit of each idx split), in idx order, found from the metadata.
    const rows: { id: string; split: string; idx: number }[] = [];
    for await (const page of store.scanNat(DATASET)) {
      for (const r of page) if ((r.meta.idx as number) < (limit ?? Infinity)) rows.push({ id: r.id, split: r.meta.split as string, idx: r.meta.idx as number });
    }
    rows.sort((x, y) => (x.split === y.split ? x.idx - y.idx : x.split === "train" ? -1 : 1));
    const ids = rows.map((r) => r.id);
    const device = await requestDevice({ backend });
    const info = deviceInfo(device)!;
    log(`device   ${info.runtime}, ${info.backend}: ${info.adapter}`);
    const px = 28 * 28;
    const input = device.createBuffer({ size: batch * px, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const output = device.createBuffer({ size: batch * px * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const pixels = new Uint8Array(batch * px);
    const decoder = await createJpegDecoder();
    let pool: JpegDecodePool | undefined;
    if (workers > 0) pool = await createDecodePool({ workers });
    const loader = new Loader({
      store, dataset: DATASET, ids, batchSize: batch, order, prefetch: "auto", shuffle: true, seed: 0,
      // Decoding is the loader's transform: a sample is ready once decoded (NOTE [ Ready-order
      // assembly ] in src/loader.ts), so a slow decode delays only its own sample.
      transform: (s) => (pool ? pool.decode(s.data.slice()) : decoder.decode(s.data)),
    });
    let gpuMs = 0, bytes = 0, batches = 0, lastCount = 0;
    const labels = new Array(10).fill(0);
    t0 = runtime.now();
    try {
      for await (const b of loader.epoch(0)) {
        bytes += b.bytes;
        b.items.forEach((img, k) => {
          labels[b.labels[k]]++;
          if (img.width !== 28 || img.height !== 28) {
            throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot use sample ${b.ids[k]} as it decodes to ${img.width}×${img.height}, not 28×28`);
          }
          const c = img.channels;
          for (let p = 0; p < px; p++) pixels[k * px + p] = img.data[c * p]; // grey, or R of R = G = B
        });
        const t = runtime.now();
        lastCount = b.ids.length * px;
        device.queue.writeBuffer(input, 0, pixels, 0, Math.ceil(lastCount / 4) * 4);
        const enc = device.createCommandEncoder();
        const params = await encodeNormalize(device, enc, input, output, lastCount, { channels: 1, mean: [MEAN], std: [STD] });
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
        params.destroy();
        gpuMs += runtime.now() - t;
        batches++;
      }
    } finally {
      await loader.close();
      await pool?.close();
    }
    const ls = loader.stats();
    const totalS = (runtime.now() - t0) / 1000;

    // 3. The GPU's last batch against the CPU's arithmetic: proof the kernel ran on real data.
    const got = new Float32Array(await readBuffer(device, output, lastCount * 4));
    let maxDiff = 0;
    for (let i = 0; i < lastCount; i++) maxDiff = Math.max(maxDiff, Math.abs(got[i] - (pixels[i] / 255 - MEAN) / STD));
    input.destroy();
    output.destroy();
    device.destroy();
    if (!(maxDiff < 1e-4)) throw new CassetteError("ERR_GPU_KERNEL", `The GPU's normalized batch differs from the CPU's by ${maxDiff}`);

    const report = {
      dataset: DATASET,
      store: store.address,
      device: info,
      ingest: { written: ing.written, existing: ing.existing, seconds: ingestS },
      samples: ids.length,
      batches,
      bytes,
      seconds: totalS,
      samplesPerSec: ids.length / totalS,
      mbPerSec: bytes / 1e6 / totalS,
      order,
      decode: workers > 0 ? `wasm, ${workers} workers` : "wasm, in the loader's transform",
      stageSeconds: { waitForData: ls.waitSeconds, gpu: gpuMs / 1000 },
      batchMs: ls.batchMs,
      perLabel: labels,
      gpuCheckMaxDiff: maxDiff,
    };
    if (json) console.log(JSON.stringify(report));
    else {
      log(`read     ${ids.length} samples in ${batches} batches of ${batch}: ${(bytes / 1e6).toFixed(1)} MB`);
      log(`time     ${totalS.toFixed(2)} s — ${report.samplesPerSec.toFixed(0)} samples/s, ${report.mbPerSec.toFixed(1)} MB/s`);
      log(`stages   waiting for the loader (fetch + decode, ${order} order, ${report.decode}) ${ls.waitSeconds.toFixed(2)} s · upload + normalize kernel ${report.stageSeconds.gpu.toFixed(2)} s`);
      log(`batches  p50 ${ls.batchMs.p50.toFixed(1)} ms, p99 ${ls.batchMs.p99.toFixed(1)} ms; window ${ls.prefetch} batches`);
      log(`labels   ${labels.join(" ")}`);
      log(`check    GPU vs CPU on the last batch: max diff ${maxDiff.toExponential(1)}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

function positiveInt(name: string, v: string | true | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot run as '--${name}' must be a positive integer: current value is ${v}`);
  }
  return n;
}

try {
  runtime.exit(await main());
} catch (e) {
  if (e instanceof CassetteError) {
    console.error(`train.ts: ${e.message} [${e.code}]`);
    runtime.exit(2);
  }
  throw e;
}
