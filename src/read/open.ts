/**
 * `open(address, { mode })`: the one way to open something by address.
 *
 *   mode "write"  →  a Store (sqlite:, cassandra://), made if missing: what ingest writes to
 *   mode "read"   →  a ReadSource for the Loader: any address (sqlite:, cassandra://,
 *                    `cassette export`'s layout over http(s):// or file:, WebDataset shards
 *                    by their index with wds:), an open Store or a
 *                    Source; with `workers` read in worker threads, with `decode` decoded
 *
 * The older names stay: `openStore` and `openSource` (src/source/open.ts: the address → Store
 * and Store → Source steps themselves) and `openReadSource`, an alias. Whether a dataset name is needed is decided
 * in one place, `datasetNeeded` (through `checkReadOptions` for the Loader and open();
 * `cassette read` asks it to word its own flag error).
 *
 * @example
 * ```ts
 * import { Loader, ingest, open } from "cassette";
 * const store = await open("sqlite:.tmp/open-read-example.sqlite", { mode: "write" });
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 8 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * await store.close();
 * const source = await open("sqlite:.tmp/open-read-example.sqlite", { mode: "read", dataset: "fm" });
 * const loader = new Loader({ store: source, ids, batchSize: 8 });
 * let n = 0;
 * for await (const batch of loader.epoch(0)) n += batch.ids.length;
 * console.log(n); // 16
 * await loader.close(); // closes the source, and with it the store
 * ```
 */
import { CassetteError } from "../errors.ts";
import type { Store } from "../dataset/store.ts";
export type { Store };
import { type DecodeOptions, readDecodeOptions } from "../decode/decoder.ts";
import type { PlannedDecode } from "../decode/crop.ts";
import { createDecoder } from "../decode/decoders.ts";
import { createDecodePool } from "../decode/pool.ts";
import { isTransformModule, loadTransformHere, type TransformModule, transformUrl } from "../decode/transform.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { redact } from "../source/address.ts";
import { type Addressed, locate, type OpenStoreOptions, type SourceOpenOptions, writeStore } from "../source/kinds.ts";
import { openSource as storeSource } from "../source/open.ts";
import type { Source } from "../source/source.ts";
import { CacheSource, checkCacheOptions } from "../source/cache/cache_source.ts";
import { DecodeSource, type PixelSink, type SampleClaim } from "./decode_source.ts";
import type { ReadSource } from "./sample.ts";
import { openWorkerSource, type PacketReadOptions, readWorkers } from "./worker_source.ts";

/**
 * The CPU work of reading: read workers, decoding, transforms, the decode pool and its slow
 * lane (a Loader's `cpu` options; `open`'s too). `X`: the transforms taken — `open` takes a
 * module only, the Loader a function as well (run on its own thread).
 */
export interface CpuOptions<X = TransformModule> {
  /**
   * Read in this many worker threads, each with its own connections to the store, or "auto":
   * max(2, min(8, cores − 2)) for a store address, and on more than 4 cores sized as reading
   * goes between 2 and cores − 1 (NOTE [ Worker scaling ]'s rule: the consumer's waits, the idle
   * cores, the workers' backlog); none for an open Store or Source or a transform (NOTE [ Read
   * workers: how many ], src/read/worker_source.ts); 0: in this thread. Default: "auto" for a
   * Loader, 0 for `open`. The driver's work, and with `decode` the decoding, then leave the
   * thread that iterates the batches, which is the one that feeds the GPU, and the workers
   * hand over batch-sized packets (NOTE [ Packets ], src/read/packet.ts).
   */
  workers?: number | "auto";
  /**
   * Decode each sample where it is read (in its read worker with `workers`, else in this
   * thread as it arrives, or in the decode pool) and hand it over as `Sample.image` (default
   * false). A file that does not decode is an error naming the sample. "hybrid" (or the
   * options' `hybrid`): a JPEG stops after entropy decoding and comes as its DCT blocks
   * (`Sample.coefficients`), which the GPU preprocessor finishes (src/gpu/idct.ts); other
   * files come as pixels. For a GPU that outruns the CPU's IDCT, never on a CPU adapter.
   * "gpu" (or the options' `gpu`): a JPEG the GPU can decode comes as its header and
   * entropy-coded data (`Sample.scan`), which the GPU preprocessor decodes (src/gpu/huffman.ts);
   * other files (a PNG; a progressive, arithmetic, CMYK or multi-scan JPEG: `readScan`'s
   * refusals, counted in `Loader.stats().gpuRefused`) come as pixels.
   */
  decode?: boolean | "hybrid" | "gpu" | DecodeOptions | PlannedDecode;
  /**
   * With `decode` or a transform module and no read `workers`: the decode pool that decodes and
   * transforms off this thread (the reading stays here). "auto" (default): sized as it goes,
   * between 1 and the cores, by the consumer's waits, the samples waiting and the idle cores
   * (src/decode/pool.ts, NOTE [ Worker scaling ]); a number: that many, fixed; 0: in this thread.
   */
  decodeWorkers?: number | "auto";
  /**
   * Runs on each sample. `{ module, options }` names a module exporting
   * `transform(sample, options, ctx)` (src/decode/transform.ts) that runs where samples are
   * decoded, off the loader's thread: in the read workers, or in the decode pool, where a slow
   * sample takes the slow lane (right for CPU-bound work: crops, resizes, augmentations). A
   * Loader also takes a function: it runs on the loader's thread, and a sample is ready when its
   * promise resolves (right for work that awaits, or is cheap). Its answer becomes the sample's `image`.
   */
  transform?: X;
  /**
   * A sample that takes longer than most (a deadline learned as it goes) keeps running in the
   * background while the samples queued behind it go to other workers; it joins a later batch
   * (default true). In the decode pool (NOTE [ Slow lane ] in src/decode/pool.ts) and in the
   * read workers (NOTE [ Read workers: the slow lane ] in src/read/worker_source.ts).
   */
  slowLane?: boolean;
}

/** How `open(…, { mode: "read" })` reads a store: the dataset, requests in flight, per-protocol settings, read workers, decoding, retries and hedging. */
export interface OpenReadOptions extends SourceOpenOptions, CpuOptions {
  /** With `workers`: size them as reading goes, between these (WorkerSourceOptions' `scale`). */
  scaleWorkers?: { min: number; max: number };
  /** Seeds the transform's `ctx.random` (default 0; a Loader's plan seed). */
  seed?: number;
  /** With `decode` here (decodeWorkers: 0) and no transform: where images go (a read worker's packet). */
  sink?: PixelSink;
  /** With `decode` or a transform here (decodeWorkers: 0): DecodeSourceOptions' `claim` (a read worker's slow lane). */
  claim?: SampleClaim;
  /** With `workers`: retries and hedging inside the workers for packet reads (the Loader's; NOTE [ Packets ]). */
  reads?: PacketReadOptions;
}

/** The options of `open`: `mode: "write"` opens a Store to ingest into, `mode: "read"` the read side the Loader uses. */
export type OpenOptions = ({ mode: "write" } & OpenStoreOptions) | ({ mode: "read" } & OpenReadOptions);

/** A Store to write into (made if missing; `create: false` to refuse a missing one). */
export function open(address: string, options: { mode: "write" } & OpenStoreOptions): Promise<Store>;
/** The read side for the Loader: an address, an open Store, or a Source to wrap. */
export function open(target: string | Store | Source, options: { mode: "read" } & OpenReadOptions): Promise<ReadSource>;
export function open(target: string | Store | Source, options: OpenOptions): Promise<Store | ReadSource> {
  if (options?.mode === "write") {
    if (typeof target !== "string") throw new CassetteError("ERR_INVALID_OPTION", "Cannot open for writing as the target must be a store address");
    const at = locate(target);
    if (at.kind.writeRefusal) throw new CassetteError("ERR_UNSUPPORTED", `Cannot open '${redact(target)}' for writing as ${at.kind.writeRefusal}`);
    return writeStore(at, options);
  }
  if (options?.mode !== "read") {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot open '${typeof target === "string" ? redact(target) : "a store"}' as 'mode' must be "read" or "write": current value is ${(options as { mode?: unknown } | undefined)?.mode}`);
  }
  return openRead(target, options);
}

/**
 * Why reading `target` needs a dataset name, or undefined when it does not: a store holds
 * several datasets; an export (http(s)://, file:) names its own, and a Source is already one.
 * Callers word the error for where they are (a Loader's option, a CLI flag, an open()).
 */
export function datasetNeeded(target: string | Addressed | Store | Source, dataset: string | undefined): string | undefined {
  const at = typeof target === "string" ? locate(target) : isAddressed(target) ? target : undefined; // a bad address fails here, not at the first batch
  if (at) return !dataset && at.kind.several ? `a ${at.parsed.kind} store holds several` : undefined;
  return !dataset && isStore(target) ? "a store holds several" : undefined;
}

function isAddressed(x: unknown): x is Addressed {
  return typeof x === "object" && x !== null && "parsed" in x && "kind" in x && "text" in x;
}

function isStore(x: unknown): x is Store {
  return typeof x === "object" && x !== null && "scanNat" in x && "createDataset" in x;
}

/**
 * Names what cannot be read as asked, before anything is opened: a missing dataset name, and a
 * bad combination of `workers`, `decode` and `decodeWorkers`. `what` starts the message
 * ("Cannot create a Loader").
 */
export function checkReadOptions(target: string | Addressed | Store | Source, o: OpenReadOptions, what: string): void {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `${what} as ${why}`);
  };
  const why = datasetNeeded(target, o.dataset);
  if (why) throw new CassetteError("ERR_INVALID_OPTION", `${what} without a dataset name: 'dataset' is needed, as ${why}`);
  if (o.workers !== undefined && o.workers !== "auto" && !(Number.isInteger(o.workers) && o.workers >= 0)) bad(`'workers' must be a whole number or "auto": current value is ${o.workers}`);
  const workers = countWorkers(target, o);
  if (workers && typeof target !== "string" && !isAddressed(target)) bad("'workers' needs a store address (each worker opens its own connections), not an open store or source");
  if (o.cache !== undefined) checkCacheOptions(o.cache);
  if (workers && o.cache) bad("'cache' and 'workers' cannot both be set: the cache is read and written in this thread (give 'workers: 0')");
  const decode = readDecodeOptions(o.decode);
  if (o.transform !== undefined && decode?.hybrid) bad("a transform takes pixels, and the hybrid decode leaves DCT blocks for the GPU: give 'decode: true' with a transform");
  if (o.transform !== undefined && decode?.gpu) bad("a transform takes pixels, and the GPU decode leaves a JPEG's scan for the GPU: give 'decode: true' with a transform");
  // A planned decode's box is the read path's own (the preprocessor draws the same plan on the
  // whole image); a fixed box would come back whole, as the GPU decodes whole images.
  if (decode?.gpu && decode.region) bad(`the GPU decode ('gpu') decodes whole images and 'region' asks for a box of each: current value is ${JSON.stringify(decode.region)}`);
  if (o.transform !== undefined) {
    if (!isTransformModule(o.transform)) bad(`'transform' must be a function or { module, options }: current value is ${typeof o.transform}`);
    transformUrl(o.transform, runtime.cwd()); // a bad address is named here
  }
  if (o.decodeWorkers === undefined || o.decodeWorkers === 0) return;
  if (o.decodeWorkers !== "auto" && !(Number.isInteger(o.decodeWorkers) && o.decodeWorkers > 0)) bad(`'decodeWorkers' must be a whole number or "auto": current value is ${o.decodeWorkers}`);
  if (!o.decode && !o.transform) bad("'decodeWorkers' needs 'decode' or a transform module (it is the number of workers that decode and transform)");
  if (workers && o.decodeWorkers !== "auto") bad("'decodeWorkers' and 'workers' cannot both be set: read workers decode where they read");
}

/** The read workers `o.workers` asks for: "auto" counted as the Loader counts it (NOTE [ Read workers: how many ]). */
function countWorkers(target: string | Addressed | Store | Source, o: OpenReadOptions): number | undefined {
  return o.workers === "auto" ? readWorkers(isAddressed(target) ? target.text : target, o) : o.workers;
}

/** `open(…, { mode: "read" })`, also for an address parsed already (the Loader's: parsed once, passed on). */
export async function openRead(target: string | Addressed | Store | Source, o: OpenReadOptions): Promise<ReadSource> {
  const at = typeof target === "string" ? locate(target) : isAddressed(target) ? target : undefined;
  checkReadOptions(at ?? target, o, `Cannot read from ${at ? `'${redact(at.text)}'` : "a store"}`);
  const transform = o.transform && { url: transformUrl(o.transform, runtime.cwd()), options: o.transform.options };
  const workers = countWorkers(at ?? target, o);
  if (workers && at) {
    // Each worker opens the same address with this function (workers: 0) and decodes there.
    return openWorkerSource(at.text, o.dataset, {
      workers, decode: o.decode, transform, seed: o.seed, maxInFlight: o.maxInFlight, balance: o.balance, reads: o.reads, slowLane: o.slowLane,
      scale: o.scaleWorkers,
    });
  }
  const given = target as Store | Source;
  let src: Source = at ? await at.kind.read(at, o) : isStore(given) ? await storeSource(given, o.dataset!, o.maxInFlight, { balance: o.balance }) : given;
  const opened = src;
  let cache: CacheSource | undefined;
  if (o.cache) {
    try {
      src = cache = new CacheSource(src, o.cache); // under the decoding: it keeps the bytes as stored
    } catch (e) {
      if (at) await src.close().catch(() => {});
      throw e;
    }
  }
  if (o.decode || transform) {
    try {
      const options = readDecodeOptions(o.decode);
      const dw = o.decodeWorkers ?? "auto";
      if (dw === 0) {
        const decoder = await createDecoder("auto"); // JPEG or PNG, by each sample's first bytes
        const here = transform && await loadTransformHere(transform.url, transform.options, decoder, o.seed);
        src = new DecodeSource(src, decoder, options, { decode: !!o.decode, transform: here, sink: o.sink, claim: o.claim });
      } else {
        // Many jobs ahead per worker hide the message round trip of small images; the slow lane
        // takes back the ones queued behind a slow sample.
        const pool = await createDecodePool({
          ...(dw === "auto" ? { autoscale: true } : { workers: dw }), perWorker: 8, slowLane: o.slowLane, transform, seed: o.seed,
        });
        src = new DecodeSource(src, pool, options, { decode: !!o.decode });
      }
    } catch (e) {
      if (at) await src.close().catch(() => {});
      throw e;
    }
  }
  if (src !== opened) under.set(src, { store: opened, cache });
  return src;
}

/**
 * What lies under a source openRead composed (decoding, a cache over the store's source): the
 * store's source, which counts the bytes it received (Source.received), and the cache, whose
 * figures go into the Loader's stats.
 */
const under = new WeakMap<Source, { store: Source; cache?: CacheSource }>();

/** Bytes the store's source under `src` (one openRead made) received, where it counts them. */
export function receivedOf(src: Source): number | undefined {
  return (under.get(src)?.store ?? src).received?.();
}

/** JPEGs the GPU decode of a source `openRead` made left to the CPU (DecodeSource.gpuRefused), where it decodes. */
export function gpuRefusedOf(src: Source): number | undefined {
  return src instanceof DecodeSource ? src.gpuRefused : undefined;
}

/** The cache under a source `openRead` made with `cache` (its figures go into the Loader's stats). */
export function cacheOf(src: Source): CacheSource | undefined {
  return under.get(src)?.cache;
}

/**
 * `open(address, { mode: "read", dataset, … })` under its older name.
 * @deprecated Use `open(address, { mode: "read", dataset })`, which also takes an open Store or a Source, `workers` and `decode`.
 */
export function openReadSource(address: string, dataset?: string, options: Omit<OpenReadOptions, "dataset" | "workers" | "decode"> = {}): Promise<ReadSource> {
  return open(address, { ...options, mode: "read", dataset });
}
