/** `cassette read`: the tight loop — read a split as fast as the loader can, report figures. */
import { Loader } from "../loader.ts";
import { loadSplit } from "../dataset/splits.ts";
import { datasetNeeded, open } from "../read/open.ts";
import { readWorkers, workerScale } from "../read/worker_source.ts";
import type { ReadSource, Sample } from "../read/sample.ts";
import { redact } from "../source/address.ts";
import { progress } from "../observe/progress.ts";
import { percentiles } from "../observe/stats.ts";
import { type Dashboard, frameFromStats, startDashboard } from "../observe/dashboard.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import type { Batch } from "../assemble/batch.ts";
import type { Preprocessor } from "../gpu/preprocess.ts";
import { deviceInfo, requestDevice } from "../gpu/device.ts";
import { readBuffer } from "../gpu/buffers.ts";
import { intOption, numberOption, optionalValue, parseArgs, required, usageError } from "./args.ts";
import { PREPROCESS_FLAGS, PREPROCESS_VALUED, preprocessHelp, preprocessRequest, type PreprocessRequest } from "./preprocess_args.ts";
import { readFile, writeFile } from "node:fs/promises";

export const help = `usage: cassette read --store URL [--dataset NAME] [--split FILE[:INDEX|:NAME]] [options]

Reads every sample of the split (default: every sample the store lists) through the loader,
with no decoding unless --decode, and reports MB/s, images/s and batch-time percentiles.

  --store URL          sqlite:PATH, cassandra://HOST/KEYSPACE, http(s)://HOST/PREFIX or file:DIR
                       (the last two: a folder written by cassette export)
  --dataset NAME       needed for sqlite: and cassandra://; for http(s):// and file: the
                       export's labels.json names it (checked when given)
  --split FILE[:INDEX|:NAME]  the ids to read (default: the store's scan, or labels.json)
  --ids FILE           the ids to read, one sample id (UUID) a line, e.g. another loader's list
  --batch B            samples per batch (default 128)
  --prefetch K|auto    batches of requests in flight once ramped up (default auto: start
                       at 8 and deepen while the reader starves and depth pays)
  --order ready|strict ready (default): batches from whatever arrived; strict: plan order
  --epochs E           epochs to read (default 1); each epoch's tail already requests the
                       next one's first samples (one window in all)
  --seed S             shuffle seed (default 0)
  --rank R --world-size W   read rank R's shard of W
  --on-error throw|skip     after retries: stop (default) or skip and count
  --balance rate|driver  cassandra://: send each request where it should finish first (rate,
                       default) or leave the choice to the driver
  --hedge              re-ask for samples slower than the recent p95 latency × 2 (at most 5 %
                       of requests); the first answer wins
  --workers N          read in N worker threads, each with its own connections, handing over
                       batch-sized packets (default: max(2, min(8, cores − 2)), sized as it
                       goes on more than 4 cores; none with --decode-workers; 0: in the
                       loader's thread)
  --decode             decode every JPEG as it arrives (in its read worker with --workers)
  --decode-workers N   with --decode and no --workers: read here, decode in N decode workers
  --grey               with --decode: one channel out (a colour file's luma, as djpeg
                       -grayscale; its chroma is not transformed); with --preprocess also a
                       one-channel tensor
${preprocessHelp}
  --step-ms S          after each batch, wait S ms (a training step that leaves the loader's
                       thread free), as a consumer does; batch times exclude it
  --series             with --json: batchAtMs, each batch's hand-over in ms from the start
  --dashboard [PORT]   serve a live dashboard of the read at http://127.0.0.1:PORT/ (default:
                       any free port; the URL is printed on stderr): images/s, the wait share,
                       batch times, throughput per connection, window depth, retries, hedges,
                       skips, workers, updated 5 times a second; /metrics has the same figures
                       in Prometheus' text format. It closes when the read ends.
  --dashboard-host HOST  listen on HOST instead of 127.0.0.1 (loopback: this machine only); on
                       another address anyone who can reach it sees the figures
  --json               print { samples, bytes, seconds, samplesPerSec, mbPerSec,
                       batchMs: { p50, p99, max }, waitMs (the same, the wait inside the
                       loader only: batchMs less --step-ms and preprocessing), errors,
                       hedged, hedgeWins, … }; with
                       --preprocess also preprocess: { images, tensorShape, seconds, share,
                       batchMs, readback, adapter, … } (share: of the read's seconds)`;

export async function run(argv: string[]): Promise<number> {
  // --dashboard's PORT is optional: a bare --dashboard (not followed by a number) is port 0.
  const { options } = parseArgs(optionalValue(argv, "dashboard", "0"), "read", ["store", "dataset", "split", "ids", "batch", "prefetch", "order", "epochs", "seed", "rank", "world-size", "on-error", "balance", "workers", "decode-workers", "step-ms", "dashboard", "dashboard-host", ...PREPROCESS_VALUED], ["hedge", "decode", "grey", "series", ...PREPROCESS_FLAGS]);
  if (options.has("help")) return void console.log(help), 0;
  const dashboardPort = options.has("dashboard") ? intOption(options, "read", "dashboard") : undefined;
  if (dashboardPort !== undefined && (dashboardPort < 0 || dashboardPort > 65535)) usageError("read", `--dashboard must be a port 0…65535: current value is ${dashboardPort}`);
  if (options.has("dashboard-host") && dashboardPort === undefined) usageError("read", "--dashboard-host needs --dashboard");
  const json = options.has("json");
  const grey = options.has("grey");
  const pre = preprocessRequest(options, grey, intOption(options, "read", "seed"));
  const decode = options.has("decode") || pre !== undefined;
  if (grey && !decode) usageError("read", "--grey needs --decode or --preprocess");
  const address = required(options, "read", "store");
  let dataset = options.get("dataset") as string | undefined;
  const why = datasetNeeded(address, dataset);
  if (why) usageError("read", `needs --dataset: ${why}`);
  const order = (options.get("order") ?? "ready") as "ready" | "strict";
  if (order !== "ready" && order !== "strict") usageError("read", `--order must be ready or strict: current value is ${order}`);
  const onError = (options.get("on-error") ?? "throw") as "throw" | "skip";
  const balance = (options.get("balance") ?? "rate") as "rate" | "driver";
  if (balance !== "rate" && balance !== "driver") usageError("read", `--balance must be rate or driver: current value is ${balance}`);
  const prefetch = options.get("prefetch") === "auto" ? "auto" : intOption(options, "read", "prefetch");
  const split = options.has("split") ? await loadSplit(String(options.get("split"))) : undefined;
  if (split && options.has("ids")) usageError("read", "--split and --ids both name the ids to read: give one");
  const idsFile = options.has("ids") ? await readIdsFile(String(options.get("ids"))) : undefined;
  // The device before the store: no adapter is said at once, before any reading.
  const stage = pre && await TensorStage.open(pre);
  const decodeWorkers = intOption(options, "read", "decode-workers");
  const workersGiven = intOption(options, "read", "workers");
  const workers = workersGiven ?? readWorkers(address, { decodeWorkers });
  // Read workers each open the store themselves (a few round trips each: ~2 s at 150 ms): they
  // start now, while this thread opens its own source and lists the ids, and the Loader reads
  // from them once they are open. Until the Loader has them, closing them is this function's.
  let reading: Promise<ReadSource> | undefined = workers > 0
    ? open(address, { mode: "read", dataset, workers, scaleWorkers: workerScale(workers, workersGiven), decode: decode && { grey }, decodeWorkers, balance, reads: { hedge: options.has("hedge") ? {} : undefined, reaskTail: true } })
    : undefined;
  reading?.catch(() => {}); // reported where it is awaited
  let source: ReadSource;
  try {
    source = await open(address, { mode: "read", dataset, balance });
  } catch (e) {
    stage?.destroy();
    await reading?.then((s) => s.close(), () => {});
    throw e;
  }
  let closeSource = true;
  let dashboard: Dashboard | undefined;
  let dashboardTimer: ReturnType<typeof setInterval> | undefined;
  try {
    dataset ??= source.dataset;
    let ids: string[];
    if (split) {
      if (dataset !== undefined && split.file.dataset !== dataset) usageError("read", `the split file is for dataset '${split.file.dataset}', not '${dataset}'`);
      ids = split.split.ids;
    } else if (idsFile) ids = idsFile;
    else if (source.ids) ids = await source.ids();
    else {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot read from ${redact(address)} without sample ids as it cannot list them: pass --split FILE (see cassette read --help)`);
    }
    const epochs = intOption(options, "read", "epochs") ?? 1;
    if (reading) {
      closeSource = false;
      await source.close(); // it listed the ids; the workers read
    }
    const workerSource = await reading;
    reading = undefined; // the Loader closes it from here on
    // Before the loader exists, so that a port in use stops the read before it starts.
    dashboard = dashboardPort === undefined ? undefined : await startDashboard({
      port: dashboardPort, host: options.get("dashboard-host") as string | undefined, title: `cassette read ${dataset ?? redact(address)}`,
    });
    if (dashboard) console.error(`dashboard: ${dashboard.url}`);
    const loader = new Loader({
      // The workers decode where they read: the Loader takes their samples as they come.
      store: workerSource ?? source, dataset, decode: !workerSource && decode && { grey }, ids, order, onError,
      decodeWorkers: workerSource ? undefined : decodeWorkers,
      batchSize: intOption(options, "read", "batch") ?? 128,
      prefetch,
      seed: intOption(options, "read", "seed"),
      rank: intOption(options, "read", "rank"),
      worldSize: intOption(options, "read", "world-size"),
      hedge: options.has("hedge"),
      reaskTail: true,
    });
    closeSource = false; // the loader closes it
    const stepMs = numberOption(options, "read", "step-ms") ?? 0;
    if (stepMs < 0) usageError("read", `--step-ms must be ≥ 0: current value is ${stepMs}`);
    const series = options.has("series") ? [] as number[] : undefined;
    const t0 = runtime.now();
    // The dashboard's figures: the loader's stats, this thread's epoch and clock, and the batch
    // times since the last frame (its histogram; the stats keep only percentiles).
    let epochNow = 0;
    let lastHandOver = t0;
    const batchTimes: number[] = [];
    const frame = (done: boolean, seconds = (runtime.now() - t0) / 1000) => {
      const s = loader.stats();
      return frameFromStats(s, { epoch: epochNow, seconds, batchTimesMs: batchTimes.splice(0), done, ...(!s.prepare && { workers }) });
    };
    if (dashboard) {
      dashboard.update(frame(false));
      dashboardTimer = setInterval(() => dashboard!.update(frame(false)), DASHBOARD_EVERY_MS);
    }
    try {
      for (let e = 0; e < epochs; e++) {
        const bar = progress(`epoch ${e}`, Math.ceil(ids.length / ((loader.options.worldSize ?? 1))), json);
        let n = 0;
        epochNow = e;
        for await (const b of loader.epoch(e, { readAhead: e + 1 < epochs })) {
          if (dashboard) {
            const now = runtime.now();
            batchTimes.push(now - lastHandOver);
            lastHandOver = now;
          }
          if (stage) await stage.run(b, e);
          series?.push(Math.round((runtime.now() - t0) * 100) / 100);
          // A training step that does not hold the loader's thread (as the peers' --step-ms).
          if (stepMs > 0) await new Promise((r) => setTimeout(r, stepMs));
          bar.update((n += b.ids.length), () => `${(loader.stats().mbPerSec).toFixed(1)} MB/s`);
          b.release?.(); // a packet's buffer back to its worker, to fill again
        }
        bar.done();
      }
      // Submitted is not done: the read ends when the last tensor exists.
      await stage?.finish();
    } finally {
      clearInterval(dashboardTimer);
      await loader.close();
    }
    const s = loader.stats();
    const report = {
      store: redact(address), dataset: dataset ?? null, order, epochs, samples: s.samples, bytes: s.bytes,
      seconds: (runtime.now() - t0) / 1000, samplesPerSec: s.samplesPerSec, mbPerSec: s.mbPerSec,
      batchMs: s.batchMs, waitMs: s.waitMs, errors: s.errors, retries: s.retries, duplicates: s.duplicates, maxOutstanding: s.maxOutstanding,
      hedged: s.hedged, hedgeWins: s.hedgeWins, prefetch: s.prefetch, readAhead: s.readAhead,
      workers, decode, grey, stepMs,
      ...(series && { batchAtMs: series }),
      ...(stage && { preprocess: stage.report((runtime.now() - t0) / 1000) }),
    };
    // The last frame carries the report's own figures; closing sends it before the streams end.
    dashboard?.update(frame(true, report.seconds));
    if (json) console.log(JSON.stringify(report));
    else {
      console.log(`read ${s.samples} samples, ${(s.bytes / 1e6).toFixed(1)} MB in ${report.seconds.toFixed(2)} s (${order} order)`);
      console.log(`  ${s.samplesPerSec.toFixed(0)} samples/s, ${s.mbPerSec.toFixed(1)} MB/s`);
      console.log(`  batch time p50 ${s.batchMs.p50.toFixed(1)} ms, p99 ${s.batchMs.p99.toFixed(1)} ms, max ${s.batchMs.max.toFixed(1)} ms`);
      console.log(`  errors ${s.errors}, retries ${s.retries}, most samples outstanding ${s.maxOutstanding}`);
      if (options.has("hedge")) console.log(`  hedged ${s.hedged} requests, the hedge answered first ${s.hedgeWins} times`);
      const p = report.preprocess;
      if (p) {
        console.log(`  preprocess ${p.images} images into ${p.tensorShape.join("×")} ${p.layout} f32 tensors${p.readback ? ", read back to host memory" : ", kept on the device"}: ` +
          `${p.seconds.toFixed(2)} s, ${(100 * p.share).toFixed(0)} % of the read; batch p50 ${p.batchMs.p50.toFixed(1)} ms, max ${p.batchMs.max.toFixed(1)} ms (${p.adapter})`);
        if (p.dump) console.log(`  first batch's tensor in ${p.dump.file}`);
      }
    }
    return s.errors ? 1 : 0;
  } finally {
    clearInterval(dashboardTimer);
    await dashboard?.close();
    stage?.destroy();
    if (closeSource) await source.close();
    await reading?.then((s) => s.close(), () => {});
  }
}

/** How often the dashboard gets the loader's figures during a read. */
const DASHBOARD_EVERY_MS = 200;

/**
 * The GPU half of `read --preprocess`: each batch's decoded images become the tensor a trainer
 * gets, with the call train's loaderBatches makes (one run per batch, its epoch and ids, so
 * the crops and flips are the same), timed.
 */
class TensorStage {
  readonly #device: GPUDevice;
  readonly #pre: Preprocessor;
  readonly #req: PreprocessRequest;
  readonly #adapter: string;
  readonly #batchMs: number[] = [];
  #ms = 0;
  #images = 0;
  #shape: number[] = [];
  #dump?: { file: string; shape: number[]; ids: string[]; labels: number[] };

  private constructor(device: GPUDevice, pre: Preprocessor, req: PreprocessRequest, adapter: string) {
    this.#device = device;
    this.#pre = pre;
    this.#req = req;
    this.#adapter = adapter;
  }

  static async open(req: PreprocessRequest): Promise<TensorStage> {
    // From source under Node the kernels' .wgsl text needs the loader hooks, as in train.ts;
    // the bundle (dist/) inlines it. Loaded here, so that reads without --preprocess need neither.
    if (runtime.name === "node" && import.meta.url.endsWith(".ts")) await import("../../runtime-adapters/node_hooks.mjs");
    const { createPreprocessor } = await import("../gpu/preprocess.ts");
    const device = await requestDevice();
    try {
      const info = deviceInfo(device);
      const pre = await createPreprocessor(device, req.options);
      return new TensorStage(device, pre, req, info ? `${info.backend}: ${info.adapter}${info.cpu ? " (a CPU driver)" : ""}` : "unknown");
    } catch (e) {
      device.destroy();
      throw e;
    }
  }

  async run(b: Batch<Sample>, epoch: number): Promise<void> {
    const t0 = runtime.now();
    const missing = b.images ? b.images.channels.indexOf(0) : -1;
    if (missing >= 0) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot preprocess sample ${b.ids[missing]} as it arrived without its decoded image`);
    // Read workers' packets: the batch's images in one buffer, one copy into the upload.
    const images = b.images ?? b.items.map((s) => {
      if (!s.image) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot preprocess sample ${s.id} as it arrived without its decoded image`);
      return s.image;
    });
    const out = await this.#pre.run(images, { epoch, ids: b.ids });
    b.release?.();
    const first = this.#images === 0;
    let host: ArrayBuffer | undefined;
    if (this.#req.readback) host = await readBuffer(this.#device, out.buffer, out.bytes);
    let asideMs = 0; // the dump is not part of what is measured
    if (first && this.#req.dump) {
      const t1 = runtime.now();
      host ??= await readBuffer(this.#device, out.buffer, out.bytes);
      await writeFile(this.#req.dump, npy(new Float32Array(host), out.shape));
      this.#dump = { file: this.#req.dump, shape: out.shape, ids: b.ids, labels: [...b.labels] };
      asideMs = runtime.now() - t1;
    }
    if (first || b.ids.length > this.#shape[0]) this.#shape = out.shape;
    this.#images += b.ids.length;
    const ms = runtime.now() - t0 - asideMs;
    this.#batchMs.push(ms);
    this.#ms += ms;
  }

  /** Waits for the work already submitted (kept on the device, it was not waited for). */
  async finish(): Promise<void> {
    const t0 = runtime.now();
    await this.#device.queue.onSubmittedWorkDone();
    this.#ms += runtime.now() - t0;
  }

  report(seconds: number) {
    const o = this.#req.options;
    return {
      images: this.#images, tensorShape: this.#shape, layout: o.layout ?? "nchw", dtype: "f32",
      crop: o.crop, flip: o.flip, mean: o.mean, std: o.std, seed: o.seed, readback: this.#req.readback,
      seconds: this.#ms / 1000, share: seconds > 0 ? this.#ms / 1000 / seconds : 0,
      batchMs: percentiles(this.#batchMs),
      adapter: this.#adapter, dump: this.#dump,
    };
  }

  destroy(): void {
    this.#pre.destroy();
    this.#device.destroy();
  }
}

/**
 * A little-endian f32 array as a NumPy .npy file (format 1.0): the header is a Python dict
 * literal padded with spaces so that the data starts on a 64-byte boundary.
 */
function npy(data: Float32Array, shape: readonly number[]): Uint8Array {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(", ")}${shape.length === 1 ? "," : ""}), }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1) + "\n";
  const out = new Uint8Array(total + data.byteLength);
  out.set([0x93, ...new TextEncoder().encode("NUMPY"), 1, 0, header.length & 0xff, header.length >> 8]);
  out.set(new TextEncoder().encode(header), 10);
  // WebGPU's f32 is little-endian, as is every host these runtimes run on.
  out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), total);
  return out;
}

/** The sample ids of a file with one UUID a line (blank lines skipped); a bad line is named by its number. */
async function readIdsFile(path: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot read --ids file '${path}': ${(e as Error).message}`);
  }
  const ids: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const id = lines[i].trim();
    if (!id) continue;
    if (!UUID.test(id)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot use line ${i + 1} of --ids file '${path}' as a sample id: '${id.slice(0, 60)}' is not a UUID`);
    ids.push(id.toLowerCase());
  }
  if (ids.length === 0) throw new CassetteError("ERR_INVALID_OPTION", `Cannot read the ids in --ids file '${path}': it lists none`);
  return ids;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
