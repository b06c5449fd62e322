/**
 * Decoding where the sample is read: a Source → Source wrapper (cross-cutting behaviour wraps a
 * Source, so a store file holds only its protocol) that decodes each answer's bytes as it
 * arrives, with any Decoder (src/decode/decoder.ts), and hands it on with `image` set. In a read worker
 * (src/read/worker_source.ts) this puts the decode on the worker's thread beside the fetch,
 * so the loader's thread gets pixels; in the loader's own thread it is the same as decoding in
 * the loader's transform. A file that does not decode is an error naming the sample, not
 * worth asking again (the bytes would be the same): by its key (the path or manifest key it
 * was ingested from) where the source can look it up by id, and its id. The key is not
 * fetched with the bytes (the data table has none); it is asked for on this rare path only.
 *
 * @example
 * ```ts
 * import { DecodeSource } from "./decode_source.ts";
 * import { open } from "./open.ts";
 * import { openStore } from "../source/open.ts";
 * import { ingest } from "../dataset/ingest.ts";
 * import { createJpegDecoder } from "../decode/jpeg.ts";
 * const store = await openStore("sqlite:.tmp/decode-source-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 2 });
 * const [page] = await Array.fromAsync(store.scanNat("fm"));
 * await store.close();
 * const source = new DecodeSource(await open("sqlite:.tmp/decode-source-example.sqlite", { mode: "read", dataset: "fm" }), await createJpegDecoder());
 * const s = await new Promise<any>((resolve, reject) => source.fetch(page[0].id, (e, s) => (e ? reject(e) : resolve(s))));
 * console.log(s.image.width, s.image.height, s.image.channels); // 28 28 3 (ingest stores idx images as colour JPEGs)
 * await source.close();
 * ```
 */
import { type AsyncDecoder, checkDecodeOptions, type DctImage, decodeForRead, type DecodeOptions, type Decoder, type GpuReadCounts, type Image, isDctImage } from "../decode/decoder.ts";
import { isJpegScan, type JpegScan } from "../decode/jpeg_scan.ts";
import type { PoolStats, PrepareJob } from "../decode/pool.ts";
import { type FrameBox, planFor } from "../decode/crop.ts";
import { checkTransformed, type LoadedTransform } from "../decode/transform.ts";
import { CassetteError, type ErrorCode } from "../errors.ts";
import type { Retryable } from "../source/retryable.ts";
import type { FetchCallback, Source } from "../source/source.ts";
import type { ReadSource, Sample } from "./sample.ts";

/**
 * A source that can name a sample's key by its id (the SQLite and Cassandra stores, from
 * metadata_by_uuid); an export (file:, http(s)://) holds ids only.
 */
export interface KeyedSource {
  keyOf(id: string): Promise<string | undefined>;
}

/**
 * A sample whose bytes do not decode: `id`, `key` where the source knows it, and the
 * decoder's error as `cause` (a JpegError: `reason`, `offset`). Its code is the cause's
 * (ERR_MALFORMED_INPUT, or ERR_UNSUPPORTED for a JPEG process the decoder does not read).
 */
export class SampleDecodeError extends CassetteError implements Retryable {
  readonly id: string;
  readonly key?: string;
  readonly retryable = false;
  /** `verb`: "decode", or "transform" for a transform module's error. */
  constructor(id: string, key: string | undefined, source: string, cause: unknown, verb = "decode") {
    const why = cause instanceof Error ? cause.message : String(cause);
    const code: ErrorCode = cause instanceof CassetteError && cause.code === "ERR_UNSUPPORTED" ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT";
    super(code, `Cannot ${verb} sample ${key === undefined ? id : `'${key}' (id ${id})`} from ${source}: ${why}`, { cause });
    this.name = "SampleDecodeError";
    this.id = id;
    if (key !== undefined) this.key = key;
  }
}

/** A decode pool's side the read path uses: a sample's CPU stage, its figures, the consumer's waits. */
export interface PreparePool extends AsyncDecoder {
  /** Whether the pool's workers run a transform module. */
  readonly hasTransform: boolean;
  /** Runs a sample's CPU stage in a worker: decode (unless `decode: false`) and the transform. */
  prepare(job: PrepareJob): Promise<Image | DctImage | JpegScan | undefined>;
  /** JPEGs its workers' GPU decode left to the CPU (GpuReadCounts), where it counts them. */
  readonly gpuRefused?: number;
  /** The pool's figures now. */
  stats(): PoolStats;
  /** The consumer waited `waitMs` for a batch: the pool's scaler grows it when waits persist. */
  demand(waitMs: number): void;
  /** An answer's pixel buffer, which its batch no longer reads, for a later answer's pixels (NOTE [ Image buffers ], src/decode/pool.ts). */
  recycle?(buf: ArrayBuffer): void;
}

export interface DecodeSourceOptions {
  /** Decode the bytes (default true); false: only the transform runs, on the bytes. */
  decode?: boolean;
  /** A transform module loaded here (with a Decoder; a pool loads its own). */
  transform?: LoadedTransform;
  /**
   * Where images go instead of a fresh array each (a read worker's packet): used with a
   * Decoder here and no transform (a transform's answer is a new image, which the sink could
   * not hold), for the image only (a mask keeps its own array).
   */
  sink?: PixelSink;
  /**
   * Asked as each answer arrives, before its CPU stage: false leaves the sample to another
   * worker (a read worker's slow lane, NOTE [ Read workers: the slow lane ] in
   * src/read/worker_source.ts), and it is answered with `TAKEN_BACK`, not decoded; `end` is
   * called when that stage has ended, before the sample is answered.
   */
  claim?: SampleClaim;
}

/** A read worker's claims on the samples it decodes (DecodeSourceOptions' `claim`). */
export interface SampleClaim {
  /** Claims sample `id` as its bytes arrive; false: another worker has it. */
  start(id: string): boolean;
  /** The sample's CPU stage has ended. */
  end(id: string): void;
}

/** A sample its worker gave up before decoding it, for another worker to: no error of the sample's. */
export const TAKEN_BACK: Error & Retryable = Object.assign(new Error("taken back by another worker"), { name: "TakenBack", retryable: false as const });

/** Takes each decoded image into a buffer of its own choosing (Decoder.decodeInto). */
export interface PixelSink {
  /**
   * Decodes `bytes` (sample `id`'s) into the sink; `image.data` (a DCT image's arrays, with
   * `hybrid`; a scan's, with `gpu`) is a view of where it went. A JPEG the GPU decode refused
   * is counted in `counts`.
   */
  decode(decoder: Decoder, bytes: Uint8Array, options: DecodeOptions | undefined, id: string, counts?: GpuReadCounts): Image | DctImage | JpegScan;
}

/**
 * NOTE [ Planned decode here ]: with `decode: { plan }` only read workers decoded each sample's
 * box; here (a decode pool, or this thread: a `wds:` address's default, a `decodeWorkers` read)
 * every image was decoded whole, because the box is drawn from (seed, epoch, id) and a fetch did
 * not say its epoch. The epoch run now passes its epoch with each fetch (Source.fetch), the
 * retries and hedges pass it on, and the box is planned here from the header (planFor,
 * src/decode/crop.ts) before the decode: the image comes with its `frame`, and the tensor plans
 * from the frame, so the tensor is the whole decode's exactly. A fetch with no epoch (a random
 * plan asked for outside an epoch run) decodes whole, as before.
 */
/** Wraps a Source so that each answer is decoded as it arrives (here, or in a decode pool) and handed on with `image` set; a file that does not decode is an error naming the sample. */
export class DecodeSource implements ReadSource {
  readonly #inner: Source;
  readonly #decoder: Decoder | AsyncDecoder;
  readonly #options?: DecodeOptions;
  readonly #async: boolean;
  readonly #decode: boolean;
  readonly #transform?: LoadedTransform;
  readonly #sink?: PixelSink;
  readonly #claim?: SampleClaim;
  /** What the GPU decode counted here (and in the sink). */
  readonly #counts: GpuReadCounts = { gpuRefused: 0 };
  /** The decode pool, when the CPU stage runs in one. */
  readonly pool?: PreparePool;
  /** Every sample id the inner source can serve, where it can list them. */
  readonly ids?: () => string[] | Promise<string[]>;
  /** The inner source's ids by shard, where it is a shard set. */
  readonly shards?: () => string[][];
  /** The inner source's plan hook (Source.plan), where it has one. */
  readonly plan?: (epoch: number, ids: readonly string[]) => void;

  /**
   * `decoder`: one here (decodes as each answer arrives), or a decode pool (answers when its
   * worker has; with `prepare`, the pool's transform runs there too and slow samples take the
   * slow lane).
   */
  constructor(inner: Source, decoder: Decoder | AsyncDecoder, options?: DecodeOptions, stage: DecodeSourceOptions = {}) {
    this.#inner = inner;
    if (inner.ids) this.ids = () => inner.ids!();
    if (inner.shards) this.shards = () => inner.shards!();
    if (inner.plan) this.plan = (epoch, ids) => inner.plan!(epoch, ids);
    this.#decoder = decoder;
    if (options) checkDecodeOptions(options); // named once here, not as every sample's error
    this.#options = options;
    this.#async = "async" in decoder;
    if (this.#async && "prepare" in decoder) this.pool = decoder as PreparePool;
    this.#decode = stage.decode ?? true;
    this.#transform = stage.transform;
    if (!this.#async && !this.#transform) this.#sink = stage.sink;
    this.#claim = stage.claim;
  }
  /**
   * JPEGs the GPU decode (DecodeOptions.gpu) left to the CPU as `readScan` refused them, here,
   * in the sink or in the decode pool, since it was made: each decode counts, a sample asked
   * for again (a retry, a hedge, a later epoch) as often as it is decoded.
   */
  get gpuRefused(): number {
    return this.#counts.gpuRefused + (this.pool?.gpuRefused ?? 0);
  }
  /** The inner source's name. */
  get name(): string {
    return this.#inner.name;
  }
  /** The dataset the inner source reads, when it knows. */
  get dataset(): string | undefined {
    return this.#inner.dataset;
  }

  /** Fetches `id` from the inner source and answers with its decoded image; returns false when the inner source is saturated. */
  fetch(id: string, done: FetchCallback<Sample>, epoch?: number): boolean {
    return this.#inner.fetch(id, (err, s) => {
      if (err || !s) return done(err ?? new Error(`no answer for ${id}`));
      const claim = this.#claim;
      if (claim && !claim.start(id)) return done(TAKEN_BACK);
      let verb = "decode";
      const failed = (e: unknown) => {
        claim?.end(id);
        const keyed = this.#inner as Partial<KeyedSource>;
        if (typeof keyed.keyOf !== "function") return done(new SampleDecodeError(id, undefined, this.name, e, verb));
        // A lookup that fails leaves the id alone to name the sample: the decode error is the news.
        keyed.keyOf(id).catch(() => undefined).then((key) => done(new SampleDecodeError(id, key, this.name, e, verb)));
      };
      // A blob label (a mask) decodes beside the image, with the same decoder.
      let mask: Image | Promise<Image> | undefined;
      if (s.target instanceof Uint8Array && this.#decode) {
        if (this.#transform || this.pool?.hasTransform) {
          return failed(new CassetteError("ERR_UNSUPPORTED", "a transform module sees the image only, and its crops would leave the label's mask behind: crop and flip both on the GPU (createPreprocessor's run with masks)"));
        }
        try {
          mask = this.#decoder.decode(this.#async ? new Uint8Array(s.target) : s.target); // a copy of its own to transfer (a driver's Buffer slices share a pool)
          // Seen in `answer`; should the image fail first, its error is the one reported.
          if (mask instanceof Promise) mask.catch(() => {});
        } catch (e) {
          return failed(maskError(e));
        }
      }
      // A planned decode: only the box this sample's plan reads in `epoch` (NOTE [ Planned decode
      // here ], above); the read workers' sink plans its own, and a transform is handed whole images.
      const { options, frame } = this.#sink || !this.#decode || this.#transform || this.pool?.hasTransform ? { options: this.#options, frame: undefined } : planFor(this.#options, s.data, epoch, id);
      const answer = (out: Image | DctImage | JpegScan | undefined) => {
        claim?.end(id);
        // The hybrid decode's blocks say their region themselves (DctImage.region); a scan is whole.
        if (frame && out && !isJpegScan(out) && !isDctImage(out)) (out as Image & { frame?: FrameBox }).frame = frame;
        // A scan has components and no data as a DCT image has: told apart first.
        const got: Sample = !out ? s : isJpegScan(out) ? { ...s, scan: out } : isDctImage(out) ? { ...s, coefficients: out } : { ...s, image: out };
        if (!mask) return done(null, got);
        Promise.resolve(mask).then((m) => done(null, { ...got, mask: m }), (e) => failed(maskError(e)));
      };
      if (this.pool) {
        // The pool sends a copy and keeps these bytes, to send again if the job is taken back.
        const job = this.pool.prepare({ bytes: s.data, options, decode: this.#decode, id, label: s.label });
        return void job.then(answer, (e) => {
          if ((e as { name?: string })?.name !== "JpegError" && this.pool!.hasTransform) verb = "transform";
          failed(e);
        });
      }
      let image: Image | DctImage | JpegScan | Promise<Image> | undefined;
      try {
        // A pool takes the bytes' buffer away (transferred to its worker): it gets a copy, and
        // the sample keeps its bytes.
        if (!this.#decode) image = undefined;
        else if (this.#sink) image = this.#sink.decode(this.#decoder as Decoder, s.data, options, id, this.#counts);
        else if (this.#async) image = this.#decoder.decode(s.data.slice(), options);
        else image = decodeForRead(this.#decoder as Decoder, s.data, options, this.#counts);
      } catch (e) {
        return failed(e);
      }
      const t = this.#transform;
      if (!t) {
        if (image instanceof Promise) image.then(answer, failed);
        else answer(image);
        return;
      }
      const run = (image: Image | DctImage | JpegScan | undefined) => {
        verb = "transform";
        if (image && isJpegScan(image)) throw new CassetteError("ERR_UNSUPPORTED", "a transform takes pixels, and the GPU decode leaves a JPEG's scan for the GPU");
        if (image && isDctImage(image)) throw new CassetteError("ERR_UNSUPPORTED", "a transform takes pixels, and the hybrid decode leaves DCT blocks for the GPU");
        const out = t.fn({ id, label: s.label, data: s.data, image }, t.options, t.ctx);
        return out instanceof Promise ? out.then((o) => checkTransformed(o, id, t.url)) : checkTransformed(out, id, t.url);
      };
      try {
        const out = image instanceof Promise ? image.then(run) : run(image);
        if (out instanceof Promise) out.then(answer, failed);
        else answer(out);
      } catch (e) {
        failed(e);
      }
    });
  }
  /** Called when the inner source can take requests again. */
  onDrain(listener: () => void): void {
    this.#inner.onDrain(listener);
  }
  /** Requests started and not yet answered, as the inner source counts them. */
  inFlight(): number {
    return this.#inner.inFlight();
  }
  /** Closes the decoder and the inner source. */
  close(): Promise<void> {
    this.#decoder.close();
    return this.#inner.close();
  }
}

/** A mask that does not decode: the sample's error says it was the label, with the decoder's reason. */
function maskError(e: unknown): CassetteError {
  const code: ErrorCode = e instanceof CassetteError && e.code === "ERR_UNSUPPORTED" ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT";
  return new CassetteError(code, `its label (a mask) ${(e as Error)?.message ?? String(e)}`, { cause: e });
}
