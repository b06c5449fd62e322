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
import type { Batch, ImageTable } from "../assemble/batch.ts";
import { cpuTensor } from "../decode/tensor.ts";
import type { DecodedImage } from "../gpu/pack.ts";
import type { DctImage } from "../decode/decoder.ts";
import type { JpegScan } from "../decode/jpeg_scan.ts";
import type { Preprocessor } from "../gpu/preprocess.ts";
import { deviceInfo, requestDevice } from "../gpu/device.ts";
import { readBuffer } from "../gpu/buffers.ts";
import { intOption, numberOption, optionalValue, parseArgs, parseBytes, required, usageError } from "./args.ts";
import type { CacheOptions, CacheStats } from "../source/cache/cache_source.ts";
import { PREPROCESS_FLAGS, PREPROCESS_VALUED, preprocessHelp, preprocessRequest, type PreprocessRequest } from "./preprocess_args.ts";
import { readFile, writeFile } from "node:fs/promises";
import { count } from "../util/plural.ts";

export const help = `usage: cassette read --store URL [--dataset NAME] [--split FILE[:INDEX|:NAME]] [options]

Reads every sample of the split (default: every sample the store lists) through the loader,
with no decoding unless --decode, and reports MB/s, images/s and batch-time percentiles.

  --store URL          sqlite:PATH, cassandra://HOST/KEYSPACE, http(s)://HOST/PREFIX, file:DIR
                       or s3://BUCKET/PREFIX[?endpoint=URL&region=R&…] (these three: what
                       cassette export wrote), or wds:INDEX (WebDataset shards: INDEX is
                       PREFIX.index.json as a path, an http(s):// URL or an s3:// address)
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
                       goes on more than 4 cores; none with --decode-workers or for wds:
                       shards, streamed once here while a decode pool decodes; 0: in the
                       loader's thread)
  --cache PATH         keep the samples read in a local SQLite file and answer from it first
                       (a far store read again each epoch, or by a later run); the loader
                       tells it each epoch's order, so it gives up the sample needed furthest
                       away; reads in this thread (no --workers)
  --cache-bytes SIZE   with --cache: its budget, e.g. 2GiB or 500MB (needed)
  --cache-policy belady|lru  with --cache: what to give up (default belady)
  --decode [cpu|hybrid|gpu|auto]  decode every image as it arrives (in its read worker
                       with --workers). cpu (the bare flag): to pixels. hybrid, with
                       --preprocess on the GPU: a JPEG stops after entropy decoding and the
                       GPU does the rest (dequantize, IDCT, upsample, colour), the same pixels
                       exactly. gpu, with --preprocess on the GPU: a baseline JPEG's header is
                       read and its scan unstuffed, and the GPU decodes its Huffman codes too;
                       the JPEGs it cannot take (progressive, arithmetic, CMYK, several scans:
                       counted as gpuRefused) and other files decode to pixels on the CPU, and
                       an image the GPU hands back is decoded on the CPU: the same pixels
                       exactly. auto (the default of --preprocess): hybrid on a GPU's own
                       driver, cpu on a CPU driver (lavapipe) or --device cpu
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
                       hedged, hedgeWins, received (bytes from a shard set), gpuRefused (with
                       --decode gpu), … }; with --preprocess also preprocess: { images,
                       tensorShape, seconds, share, batchMs, readback, device, adapter,
                       decode (cpu, hybrid or gpu), … } (share: of the read's seconds), and
                       with --decode gpu preprocess.gpuDecode: { images (JPEGs the GPU
                       decoded or handed back), cpuDecoded (handed back, decoded on the CPU),
                       refused (left to the CPU before the GPU: gpuRefused) }`;

export async function run(argv: string[]): Promise<number> {
  // --dashboard's PORT is optional: a bare --dashboard (not followed by a number) is port 0.
  const args = optionalValue(optionalValue(argv, "dashboard", "0"), "decode", "cpu", /^(cpu|hybrid|gpu|auto)$/);
  const { options } = parseArgs(args, "read", ["store", "dataset", "split", "ids", "batch", "prefetch", "order", "epochs", "seed", "rank", "world-size", "on-error", "balance", "workers", "decode-workers", "step-ms", "dashboard", "dashboard-host", "cache", "cache-bytes", "cache-policy", "decode", ...PREPROCESS_VALUED], ["hedge", "grey", "series", ...PREPROCESS_FLAGS]);
  if (options.has("help")) return void console.log(help), 0;
  const o = await readOptions(options);
  const { address } = o;
  let dataset = o.dataset;
  // The device before the store: no adapter is said at once, before any reading.
  const stage = o.pre && await TensorStage.open(o.pre);
  // The hybrid decode where asked, or by default where a GPU (not a CPU driver) finishes it.
  const hybrid = o.decodeAs === "hybrid" || (o.decodeAs === "auto" && stage !== undefined && stage.gpu);
  // The GPU decode only where asked: it is new, and a CPU driver runs its passes slowly.
  const gpu = o.decodeAs === "gpu";
  const decodeAs = gpu ? "gpu" : hybrid ? "hybrid" : "cpu";
  // With --preprocess only the box its plan reads of each sample is decoded (the same tensor:
  // src/gpu/decode_planned.ts), by the read workers or the decode pool; the plan's epoch comes
  // with each epoch's reads. A JPEG the GPU decodes comes whole (the preprocessor crops it).
  const decodeOptions = { grey: o.grey, ...(hybrid ? { hybrid } : {}), ...(gpu ? { gpu } : {}), ...(o.pre ? { plan: o.pre.options } : {}) };
  const workers = o.workersGiven ?? readWorkers(address, { decodeWorkers: o.decodeWorkers, cache: o.cache });
  // Read workers each open the store themselves (a few round trips each: ~2 s at 150 ms): they
  // start now, while this thread opens its own source and lists the ids, and the Loader reads
  // from them once they are open. Until the Loader has them, closing them is this function's.
  let reading: Promise<ReadSource> | undefined = workers > 0
    ? open(address, {
      mode: "read", dataset, workers, scaleWorkers: workerScale(workers, o.workersGiven), decode: o.decode && decodeOptions,
      decodeWorkers: o.decodeWorkers, balance: o.balance,
      reads: { hedge: o.hedge ? {} : undefined, reaskTail: true },
    })
    : undefined;
  reading?.catch(() => {}); // reported where it is awaited
  let source: ReadSource;
  try {
    source = await open(address, { mode: "read", dataset, balance: o.balance });
  } catch (e) {
    stage?.destroy();
    await reading?.then((s) => s.close(), () => {});
    throw e;
  }
  let closeSource = true;
  let dashboard: Dashboard | undefined;
  let feed: DashboardFeed | undefined;
  try {
    dataset ??= source.dataset;
    const ids = await sampleIds(o, source, dataset);
    if (reading) {
      closeSource = false;
      await source.close(); // it listed the ids; the workers read
    }
    const workerSource = await reading;
    reading = undefined; // the Loader closes it from here on
    // Before the loader exists, so that a port in use stops the read before it starts.
    dashboard = o.dashboardPort === undefined ? undefined : await startDashboard({
      port: o.dashboardPort, host: o.dashboardHost, title: `cassette read ${dataset ?? redact(address)}`,
    });
    if (dashboard) console.error(`dashboard: ${dashboard.url}`);
    const loader = new Loader({
      // The workers decode where they read: the Loader takes their samples as they come.
      store: workerSource ?? source, dataset, decode: !workerSource && o.decode && decodeOptions, ids, order: o.order, onError: o.onError,
      decodeWorkers: workerSource ? undefined : o.decodeWorkers,
      batchSize: o.batch, prefetch: o.prefetch, seed: o.seed, rank: o.rank, worldSize: o.worldSize, hedge: o.hedge, reaskTail: true, cache: o.cache,
    });
    closeSource = false; // the loader closes it
    const t0 = runtime.now();
    feed = dashboard && new DashboardFeed(dashboard, loader, t0, workers);
    const series = await readEpochs(loader, ids, o, stage, feed, t0);
    const report = readReport(loader.stats(), o, { dataset, workers, series, stage, decodeAs, seconds: (runtime.now() - t0) / 1000 });
    // The last frame carries the report's own figures; closing sends it before the streams end.
    feed?.update(true, report.seconds);
    if (o.json) console.log(JSON.stringify(report));
    else printReport(report, o.hedge);
    return report.errors ? 1 : 0;
  } finally {
    feed?.stop();
    await dashboard?.close();
    stage?.destroy();
    if (closeSource) await source.close();
    await reading?.then((s) => s.close(), () => {});
  }
}

/** What `cassette read` reports (its --json), from the loader's figures and how the read ran. */
function readReport(
  s: ReturnType<Loader<Sample>["stats"]>, o: ReadOptions,
  r: { dataset?: string; workers: number; series?: number[]; stage?: TensorStage; decodeAs: "cpu" | "hybrid" | "gpu"; seconds: number },
) {
  return {
    store: redact(o.address), dataset: r.dataset ?? null, order: o.order, epochs: o.epochs, samples: s.samples, bytes: s.bytes,
    seconds: r.seconds, samplesPerSec: s.samplesPerSec, mbPerSec: s.mbPerSec,
    batchMs: s.batchMs, waitMs: s.waitMs, errors: s.errors, retries: s.retries, duplicates: s.duplicates, maxOutstanding: s.maxOutstanding,
    hedged: s.hedged, hedgeWins: s.hedgeWins, prefetch: s.prefetch, readAhead: s.readAhead,
    workers: r.workers, decode: o.decode, grey: o.grey, stepMs: o.stepMs,
    ...(s.cache && { cache: s.cache }),
    ...(s.received !== undefined && { received: s.received }),
    // Read workers given to the Loader as its store count refusals without its decode option.
    ...(r.decodeAs === "gpu" && { gpuRefused: s.gpuRefused ?? 0 }),
    ...(r.series && { batchAtMs: r.series }),
    ...(r.stage && {
      preprocess: {
        ...r.stage.report(r.seconds), decode: r.decodeAs,
        ...(r.decodeAs === "gpu" && { gpuDecode: { ...r.stage.gpuDecode, refused: s.gpuRefused ?? 0 } }),
      },
    }),
  };
}

/** The command line read and checked, before anything is opened. */
async function readOptions(options: ReturnType<typeof parseArgs>["options"]) {
  const dashboardPort = options.has("dashboard") ? intOption(options, "read", "dashboard") : undefined;
  if (dashboardPort !== undefined && (dashboardPort < 0 || dashboardPort > 65535)) usageError("read", `--dashboard must be a port 0…65535: current value is ${dashboardPort}`);
  if (options.has("dashboard-host") && dashboardPort === undefined) usageError("read", "--dashboard-host needs --dashboard");
  const grey = options.has("grey");
  const pre = preprocessRequest(options, grey, intOption(options, "read", "seed"));
  const decode = options.has("decode") || pre !== undefined;
  if (grey && !decode) usageError("read", "--grey needs --decode or --preprocess");
  const decodeAs = (options.get("decode") ?? "auto") as "cpu" | "hybrid" | "gpu" | "auto";
  if (!["cpu", "hybrid", "gpu", "auto"].includes(decodeAs)) usageError("read", `--decode takes cpu, hybrid, gpu or auto (or nothing: cpu): current value is ${decodeAs}`);
  if (decodeAs === "hybrid" && pre?.device !== "gpu") usageError("read", "--decode hybrid needs --preprocess on the GPU (--device gpu), which finishes each JPEG from its DCT blocks");
  if (decodeAs === "gpu" && pre?.device !== "gpu") usageError("read", "--decode gpu needs --preprocess on the GPU (--device gpu), which decodes each JPEG's Huffman codes and finishes it");
  const address = required(options, "read", "store");
  const dataset = options.get("dataset") as string | undefined;
  const why = datasetNeeded(address, dataset);
  if (why) usageError("read", `needs --dataset: ${why}`);
  const order = (options.get("order") ?? "ready") as "ready" | "strict";
  if (order !== "ready" && order !== "strict") usageError("read", `--order must be ready or strict: current value is ${order}`);
  const balance = (options.get("balance") ?? "rate") as "rate" | "driver";
  if (balance !== "rate" && balance !== "driver") usageError("read", `--balance must be rate or driver: current value is ${balance}`);
  const split = options.has("split") ? await loadSplit(String(options.get("split"))) : undefined;
  if (split && options.has("ids")) usageError("read", "--split and --ids both name the ids to read: give one");
  const cache = cacheOption(options);
  const stepMs = numberOption(options, "read", "step-ms") ?? 0;
  if (stepMs < 0) usageError("read", `--step-ms must be ≥ 0: current value is ${stepMs}`);
  return {
    address, dataset, order, balance, grey, decode, decodeAs, pre, split, stepMs, cache,
    json: options.has("json"),
    hedge: options.has("hedge"),
    series: options.has("series"),
    onError: (options.get("on-error") ?? "throw") as "throw" | "skip",
    prefetch: options.get("prefetch") === "auto" ? "auto" as const : intOption(options, "read", "prefetch"),
    idsFile: options.has("ids") ? await readIdsFile(String(options.get("ids"))) : undefined,
    decodeWorkers: intOption(options, "read", "decode-workers"),
    workersGiven: intOption(options, "read", "workers"),
    epochs: intOption(options, "read", "epochs") ?? 1,
    batch: intOption(options, "read", "batch") ?? 128,
    seed: intOption(options, "read", "seed"),
    rank: intOption(options, "read", "rank"),
    worldSize: intOption(options, "read", "world-size"),
    dashboardPort,
    dashboardHost: options.get("dashboard-host") as string | undefined,
  };
}
type ReadOptions = Awaited<ReturnType<typeof readOptions>>;

/** --cache PATH --cache-bytes SIZE [--cache-policy P]: the Loader's `cache` option, checked. */
function cacheOption(options: ReturnType<typeof parseArgs>["options"]): CacheOptions | undefined {
  if (!options.has("cache")) {
    for (const f of ["cache-bytes", "cache-policy"]) if (options.has(f)) usageError("read", `--${f} needs --cache PATH`);
    return undefined;
  }
  const text = options.get("cache-bytes");
  if (text === undefined) usageError("read", "--cache needs --cache-bytes SIZE, its budget (e.g. 2GiB or 500MB)");
  const bytes = parseBytes(String(text));
  if (bytes === undefined) usageError("read", `--cache-bytes must be a size such as 2GiB, 500MB or 1000000: current value is ${text}`);
  const policy = (options.get("cache-policy") ?? "belady") as "belady" | "lru";
  if (policy !== "belady" && policy !== "lru") usageError("read", `--cache-policy must be belady or lru: current value is ${policy}`);
  if (Number(options.get("workers") ?? 0) > 0) usageError("read", "--cache reads in the loader's thread: leave out --workers (or give 0)");
  return { path: String(options.get("cache")), bytes: bytes!, policy };
}

/** The ids to read: the split's, the file's, or all the source lists. */
async function sampleIds(o: ReadOptions, source: ReadSource, dataset: string | undefined): Promise<string[]> {
  if (o.split) {
    if (dataset !== undefined && o.split.file.dataset !== dataset) usageError("read", `the split file is for dataset '${o.split.file.dataset}', not '${dataset}'`);
    return o.split.split.ids;
  }
  if (o.idsFile) return o.idsFile;
  if (source.ids) return await source.ids();
  throw new CassetteError("ERR_INVALID_OPTION", `Cannot read from ${redact(o.address)} without sample ids as it cannot list them: pass --split FILE (see cassette read --help)`);
}

/**
 * The read itself, epoch by epoch: each batch through the tensor stage (--preprocess), the
 * step (--step-ms), the progress bar; its buffer back to its worker. Each batch's hand-over time
 * with --series.
 */
async function readEpochs(
  loader: Loader<Sample>, ids: string[], o: ReadOptions, stage: TensorStage | undefined, feed: DashboardFeed | undefined, t0: number,
): Promise<number[] | undefined> {
  const series = o.series ? [] as number[] : undefined;
  try {
    for (let e = 0; e < o.epochs; e++) {
      const bar = progress(`epoch ${e}`, Math.ceil(ids.length / (o.worldSize ?? 1)), o.json);
      let n = 0;
      if (feed) feed.epoch = e;
      for await (const b of loader.epoch(e, { readAhead: e + 1 < o.epochs })) {
        feed?.handedOver();
        if (stage) await stage.run(b, e);
        series?.push(Math.round((runtime.now() - t0) * 100) / 100);
        // A training step that does not hold the loader's thread (as the peers' --step-ms).
        if (o.stepMs > 0) await new Promise((r) => setTimeout(r, o.stepMs));
        bar.update((n += b.ids.length), () => `${(loader.stats().mbPerSec).toFixed(1)} MB/s`);
        b.release?.(); // a packet's buffer back to its worker, to fill again
      }
      bar.done();
    }
    // Submitted is not done: the read ends when the last tensor exists.
    await stage?.finish();
  } finally {
    feed?.stop();
    await loader.close();
  }
  return series;
}

/**
 * The dashboard's figures during a read: the loader's stats, this thread's epoch and clock, and
 * the batch times since the last frame (its histogram; the stats keep only percentiles).
 */
class DashboardFeed {
  epoch = 0;
  readonly #dashboard: Dashboard;
  readonly #loader: Loader<Sample>;
  readonly #t0: number;
  readonly #workers: number;
  readonly #batchTimes: number[] = [];
  #lastHandOver: number;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(dashboard: Dashboard, loader: Loader<Sample>, t0: number, workers: number) {
    this.#dashboard = dashboard;
    this.#loader = loader;
    this.#t0 = this.#lastHandOver = t0;
    this.#workers = workers;
    dashboard.update(this.#frame(false));
    this.#timer = setInterval(() => dashboard.update(this.#frame(false)), DASHBOARD_EVERY_MS);
  }

  handedOver(): void {
    const now = runtime.now();
    this.#batchTimes.push(now - this.#lastHandOver);
    this.#lastHandOver = now;
  }

  #frame(done: boolean, seconds = (runtime.now() - this.#t0) / 1000) {
    const s = this.#loader.stats();
    return frameFromStats(s, { epoch: this.epoch, seconds, batchTimesMs: this.#batchTimes.splice(0), done, ...(!s.prepare && { workers: this.#workers }) });
  }

  update(done: boolean, seconds?: number): void {
    this.#dashboard.update(this.#frame(done, seconds));
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** The read's figures as text. */
function printReport(report: { samples: number; bytes: number; seconds: number; order: string; samplesPerSec: number; mbPerSec: number; batchMs: { p50: number; p99: number; max: number }; errors: number; retries: number; maxOutstanding: number; hedged: number; hedgeWins: number; cache?: CacheStats; preprocess?: ReturnType<TensorStage["report"]> & { gpuDecode?: { images: number; cpuDecoded: number; refused: number } } }, hedge: boolean): void {
  const r = report;
  console.log(`read ${count(r.samples, "sample")}, ${(r.bytes / 1e6).toFixed(1)} MB in ${r.seconds.toFixed(2)} s (${r.order} order)`);
  console.log(`  ${r.samplesPerSec.toFixed(0)} samples/s, ${r.mbPerSec.toFixed(1)} MB/s`);
  console.log(`  batch time p50 ${r.batchMs.p50.toFixed(1)} ms, p99 ${r.batchMs.p99.toFixed(1)} ms, max ${r.batchMs.max.toFixed(1)} ms`);
  console.log(`  errors ${r.errors}, retries ${r.retries}, most samples outstanding ${r.maxOutstanding}`);
  if (hedge) console.log(`  hedged ${count(r.hedged, "request")}, the hedge answered first ${count(r.hedgeWins, "time")}`);
  const c = r.cache;
  if (c) {
    console.log(`  cache ${count(c.hits, "hit")}, ${count(c.misses, "miss", "misses")}, ${count(c.evictions, "eviction")}${c.torn ? `, ${count(c.torn, "torn entry", "torn entries")} fetched again` : ""}; ` +
      `${(c.bytes / 1e6).toFixed(1)} of ${(c.budget / 1e6).toFixed(1)} MB held`);
  }
  const p = r.preprocess;
  if (p) {
    console.log(`  preprocess ${count(p.images, "image")} into ${p.tensorShape.join("×")} ${p.layout} f32 tensors${p.device === "cpu" ? ", made on the CPU" : p.readback ? ", read back to host memory" : ", kept on the device"}: ` +
      `${p.seconds.toFixed(2)} s, ${(100 * p.share).toFixed(0)} % of the read; batch p50 ${p.batchMs.p50.toFixed(1)} ms, max ${p.batchMs.max.toFixed(1)} ms (${p.adapter})`);
    const g = p.gpuDecode;
    if (g) console.log(`  GPU decode: ${count(g.images, "JPEG")} to the GPU, ${g.cpuDecoded} of them handed back to the CPU; ${count(g.refused, "JPEG")} refused (decoded on the CPU)`);
    if (p.dump) console.log(`  first batch's tensor in ${p.dump.file}`);
  }
}

/** How often the dashboard gets the loader's figures during a read. */
const DASHBOARD_EVERY_MS = 200;

/**
 * The tensor half of `read --preprocess`: each batch's decoded images become the tensor a
 * trainer gets, with the call train's loaderBatches makes (one run per batch, its epoch and
 * ids, so the crops and flips are the same), timed; on the GPU, or with --device cpu made here
 * from the same plans (src/decode/tensor.ts).
 */
class TensorStage {
  readonly #make: TensorMaker;
  readonly #req: PreprocessRequest;
  readonly #batchMs: number[] = [];
  #ms = 0;
  #images = 0;
  #shape: number[] = [];
  #dump?: { file: string; shape: number[]; ids: string[]; labels: number[] };
  readonly #gpuDecode = { images: 0, cpuDecoded: 0 };

  private constructor(make: TensorMaker, req: PreprocessRequest) {
    this.#make = make;
    this.#req = req;
  }

  static async open(req: PreprocessRequest): Promise<TensorStage> {
    return new TensorStage(req.device === "cpu" ? cpuMaker(req) : await gpuMaker(req), req);
  }

  /** Whether the tensor is made on a GPU, not the CPU (--device cpu) nor a CPU driver (lavapipe). */
  get gpu(): boolean {
    return this.#make.gpu;
  }

  async run(b: Batch<Sample>, epoch: number): Promise<void> {
    const t0 = runtime.now();
    const missing = b.images ? b.images.channels.indexOf(0) : -1;
    if (missing >= 0) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot preprocess sample ${b.ids[missing]} as it arrived without its decoded image`);
    // Read workers' packets: the batch's images in one buffer, one copy into the upload.
    const images = b.images ?? b.items.map((s) => {
      const img = s.scan ?? s.coefficients ?? s.image; // the GPU decode's scan, the hybrid decode's DCT blocks: the GPU finishes them
      if (!img) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot preprocess sample ${s.id} as it arrived without its decoded image`);
      return img;
    });
    const out = await this.#make.run(images, epoch, b.ids);
    b.release?.();
    if (out.gpuDecode) {
      this.#gpuDecode.images += out.gpuDecode.images;
      this.#gpuDecode.cpuDecoded += out.gpuDecode.cpuDecoded.length;
    }
    const first = this.#images === 0;
    let host: Float32Array | undefined;
    if (this.#req.readback) host = await out.host();
    let asideMs = 0; // the dump is not part of what is measured
    if (first && this.#req.dump) {
      const t1 = runtime.now();
      host ??= await out.host();
      await writeFile(this.#req.dump, npy(host, out.shape));
      this.#dump = { file: this.#req.dump, shape: out.shape, ids: b.ids, labels: [...b.labels] };
      asideMs = runtime.now() - t1;
    }
    if (first || b.ids.length > this.#shape[0]) this.#shape = out.shape;
    this.#images += b.ids.length;
    const ms = runtime.now() - t0 - asideMs;
    this.#batchMs.push(ms);
    this.#ms += ms;
  }

  /** The GPU decode's counts summed over the batches (PreprocessedBatch.gpuDecode): scan images, and those handed back to the CPU. */
  get gpuDecode(): { images: number; cpuDecoded: number } {
    return { ...this.#gpuDecode };
  }

  /** Waits for the work already submitted (kept on the device, it was not waited for). */
  async finish(): Promise<void> {
    const t0 = runtime.now();
    await this.#make.finish();
    this.#ms += runtime.now() - t0;
  }

  report(seconds: number) {
    const o = this.#req.options;
    return {
      images: this.#images, tensorShape: this.#shape, layout: o.layout ?? "nchw", dtype: "f32",
      crop: o.crop, flip: o.flip, mean: o.mean, std: o.std, seed: o.seed, readback: this.#req.readback,
      seconds: this.#ms / 1000, share: seconds > 0 ? this.#ms / 1000 / seconds : 0,
      batchMs: percentiles(this.#batchMs),
      device: this.#req.device, adapter: this.#make.adapter, dump: this.#dump,
    };
  }

  destroy(): void {
    this.#make.destroy();
  }
}

/** Where a batch's tensor is made: its shape, and its values in host memory when asked. */
interface TensorMaker {
  readonly adapter: string;
  /** A GPU's own driver (not a CPU driver such as lavapipe, nor --device cpu). */
  readonly gpu: boolean;
  run(
    images: ImageTable | (DecodedImage | DctImage | JpegScan)[], epoch: number, ids: string[],
  ): Promise<{ shape: number[]; host: () => Promise<Float32Array>; gpuDecode?: { images: number; cpuDecoded: number[] } }>;
  finish(): Promise<void>;
  destroy(): void;
}

/** The GPU preprocessing pass, as train.ts runs it. */
async function gpuMaker(req: PreprocessRequest): Promise<TensorMaker> {
  // From source under Node the kernels' .wgsl text needs the loader hooks, as in train.ts;
  // the bundle (dist/) inlines it. Loaded here, so that reads without --preprocess need neither.
  if (runtime.name === "node" && import.meta.url.endsWith(".ts")) await import("../../runtime-adapters/node_hooks.mjs");
  const { createPreprocessor } = await import("../gpu/preprocess.ts");
  const device = await requestDevice();
  let pre: Preprocessor;
  try {
    pre = await createPreprocessor(device, req.options);
  } catch (e) {
    device.destroy();
    throw e;
  }
  const info = deviceInfo(device);
  return {
    adapter: info ? `${info.backend}: ${info.adapter}${info.cpu ? " (a CPU driver)" : ""}` : "unknown",
    gpu: info !== undefined && !info.cpu,
    async run(images, epoch, ids) {
      const out = await pre.run(images, { epoch, ids });
      return { shape: out.shape, host: async () => new Float32Array(await readBuffer(device, out.buffer, out.bytes)), ...(out.gpuDecode && { gpuDecode: out.gpuDecode }) };
    },
    finish: () => device.queue.onSubmittedWorkDone(),
    destroy() {
      pre.destroy();
      device.destroy();
    },
  };
}

/** The same tensor made in this thread (cpuTensor), into one array reused batch to batch. */
function cpuMaker(req: PreprocessRequest): TensorMaker {
  let out = new Float32Array(0);
  return {
    adapter: "cpu (the loader's thread)",
    gpu: false,
    run(images, epoch, ids) {
      const o = req.options, n = ids.length;
      const size = n * (o.channels ?? 3) * o.width * o.height;
      if (out.length < size) out = new Float32Array(size);
      const t = cpuTensor(images as DecodedImage[], o, { epoch, ids }, out); // DCT blocks are named there (never asked for with --device cpu)
      return Promise.resolve({ shape: t.shape, host: () => Promise.resolve(out.subarray(0, size)) });
    },
    finish: () => Promise.resolve(),
    destroy() {},
  };
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
