/**
 * A pool of decode workers, one wasm decoder (JPEG or PNG by each sample's first bytes; and,
 * when given, one transform module) in each:
 * the CPU stage of a sample off the loader's thread. Results come in the order jobs *finish*:
 * a slow image never holds back the ones behind it, which is what the ready-order assembler
 * wants. Two things make that hold when per-sample cost is heavy-tailed (MINATOLoader,
 * MinatoLoader (arXiv:2509.10712), §4), and one sizes the pool:
 *
 *   decode/prepare ─► queue ─► worker with the fewest jobs in flight (≤ perWorker each)
 *                                │ claims[slot] = job id           (SharedArrayBuffer)
 *                                ▼
 *             worker: claim (id → RUNNING), stamp its start ─► decode ─► transform ─► reply
 *
 * NOTE [ Slow lane ]: a job running longer than the deadline (learned online, below) puts its
 * worker in the slow lane, once another worker has run dry (holds under a quarter of its
 * jobs): the worker keeps running it in the background (JavaScript cannot preempt a
 * synchronous function, and its work would be lost), gets no new jobs until it is done, and
 * the later half of the jobs queued behind it that it has not started are taken back (their
 * claim swapped id → 0 before the worker can swap it id → RUNNING: exactly one side wins) and
 * go to the other workers, half again at each check while one of them is dry. A worker that
 * the machine's other work only paused keeps the rest (taking whole queues whatever the others
 * held passed them to and fro between two busy workers: 2 495 of 3 000 jobs moved, each copied
 * again, the ImageNet-like shards on 2 busy cores); the taken-back copy's buffers come back
 * from the slow worker when it reaches it. The slow sample joins a later batch when it finishes; the ledger
 * (src/schedule/ledger.ts) still counts it once. The deadline (learned in deadline.ts, which
 * the read workers' slow lane uses too) is the p75 of the last 256 jobs' times, as the paper starts with; when most samples moved were not really slow (over half
 * finished within twice the deadline: a skewed but light tail) it falls back to p90, and goes
 * back once under a fifth are (the paper's fallback, made a rule). It is never under twice the
 * median (a tight distribution's jitter is not a tail: moving those samples only churns the
 * queues) nor under 1 ms (the check runs on a timer), and is not applied before 32 jobs are
 * measured: every sample is assumed fast at first. The check is due every quarter deadline
 * (1 … 20 ms): answers run it when due, and a timer, every 4 ms or more, when none come.
 *
 * NOTE [ Worker scaling ] (the rule in scaler.ts, which the read workers use too): with
 * `autoscale`, every 250 ms the pool looks at the last period and
 * grows by one worker when jobs were waiting (queued, or behind another in a worker) at half
 * its answers or more, the consumer waited over 5 % of the period for
 * batches (`demand()`; assumed when no consumer reports) and at least half a core was idle;
 * it shrinks by one when over one worker's worth of its time was idle for four periods in a row
 * (a second: the gap at an epoch's end is shorter),
 * or when for four (a second) the machine had under a quarter core idle while the consumer did
 * not wait and the workers had half a worker's time to spare (they outrun training and take its
 * CPU: on a CPU WebGPU adapter training runs on these cores; a second, not one period, as a step
 * that does not wait for one period is common even when the pool is just enough; the slack, as
 * a machine busy with other work must not starve the pool that is just enough).
 * While the slow lane has been used in the last 4 s, neither rule goes under two workers: with one,
 * the jobs queued behind a slow sample have nowhere to go, and a tail that costs half a worker on
 * average still holds a batch for a whole slow sample (bench/minato.bench.ts --tail photos: the
 * pool shrank to one and p99 went from 1.2× to 2.4× the median).
 * Bounds `minWorkers` … `maxWorkers` (default 1 … cores). (A spare started beside each worker
 * in the slow lane was tried: a worker takes ~50 ms to start, and the churn cost more than it
 * gave; the scaler sees a lasting shortfall as a backlog anyway.)
 *
 * @example
 * ```ts
 * import { createDecodePool } from "./pool.ts";
 * const pool = await createDecodePool({ workers: 2 });
 * try {
 *   for await (const r of pool.decodeAll([{ bytes: new Uint8Array([0xff, 0xd8]) }])) {
 *     console.assert(r.error?.name === "JpegError"); // truncated: an error, not a crash
 *   }
 * } finally {
 *   pool.close();
 * }
 * ```
 */
import { runtime, type WorkerHandle } from "../../runtime-adapters/index.ts";
import { CassetteError, type ErrorCode } from "../errors.ts";
import { SpareBuffers } from "../util/spare_buffers.ts";
import { entryUrl } from "../util/entry_url.ts";
import { type AsyncDecoder, type DctImage, type DecodeOptions, type Image, isDctImage } from "./decoder.ts";
import type { JpegDecodeOptions, JpegImage } from "./jpeg.ts";
import { isJpegScan, type JpegScan } from "./jpeg_scan.ts";
import { JpegError, type JpegErrorReason } from "./jpeg_error.ts";
import { PngError, type PngErrorReason } from "./png_error.ts";
import { Deadline } from "./deadline.ts";
import { Scaler, type ScalePeriod } from "./scaler.ts";

export type { ScalePeriod };

/** Message to a worker (worker.ts): the set-up, once, then jobs. */
export type PoolMessage =
  | { t: "setup"; index: number; claims: SharedArrayBuffer; base: number; transform?: { url: string; options?: unknown }; seed: number }
  | DecodeRequest;

export interface DecodeRequest {
  t?: undefined;
  id: number;
  /** Claim slot, or -1: a job that cannot be taken back (its input was the caller's, transferred). */
  slot: number;
  bytes: Uint8Array;
  options?: JpegDecodeOptions;
  /** Decode the bytes (default true); false: the transform gets the bytes only. */
  decode?: boolean;
  /** For the transform: the sample's id and label. */
  sample?: { id: string; label: number };
  /** A buffer to decode the pixels into, which a released batch gave back (NOTE [ Image buffers ]). */
  out?: ArrayBuffer;
  /** Bytes of the largest recent image: a new buffer for the pixels has room for at least this many. */
  outBytes?: number;
}

/** A job its worker found taken back before it started (NOTE [ Slow lane ]): its buffers come home. */
export interface TakenBackReply {
  id: number;
  takenBack: true;
  spare?: ArrayBuffer;
  out?: ArrayBuffer;
}

/** Message from a worker. */
export type DecodeReply = (
  | { id: number; ok: true; image?: JpegImage | DctImage | JpegScan; ms: number }
  | { id: number; ok: false; error: { name: string; code?: string; reason?: string; offset?: number; message: string }; ms: number }
) & {
  /** The request's bytes' buffer, sent back to carry a later job's bytes (NOTE [ Job buffers ]). */
  spare?: ArrayBuffer;
  /** The pixels went into the request's `out` (NOTE [ Image buffers ]). */
  intoOut?: true;
  /** The GPU decode (DecodeOptions.gpu) left this JPEG to the CPU: `readScan` refused it. */
  gpuRefused?: true;
};

/** How a decode pool runs: its workers (fixed or autoscaled), jobs sent ahead, the slow lane, and an optional transform module. */
export interface DecodePoolOptions {
  /** Workers to start with (default 2; with `autoscale`, default min(2, maxWorkers)). */
  workers?: number;
  /** Resize between minWorkers and maxWorkers as NOTE [ Worker scaling ] says (default false: a fixed pool). */
  autoscale?: boolean;
  /** Default 1. */
  minWorkers?: number;
  /** Default: the machine's cores. */
  maxWorkers?: number;
  /** Jobs sent ahead to each worker (default 2). */
  perWorker?: number;
  /** Move slow jobs' followers to other workers: NOTE [ Slow lane ] (default true). */
  slowLane?: boolean;
  /** A transform module each worker loads (src/decode/transform.ts): its URL and options. */
  transform?: { url: string; options?: unknown };
  /** Seeds each worker's `ctx.random` (with its index). */
  seed?: number;
  /** The worker entry (default: worker.ts beside this file, or decode/worker.js in the bundle). */
  workerUrl?: URL;
}

/** One image for `decodeAll`: its bytes and decode options (extra fields ride along to the result). */
export interface DecodeJob {
  /** The encoded image (its buffer is transferred to a worker). */
  bytes: Uint8Array;
  /** Decode options for this image. */
  options?: JpegDecodeOptions;
}

/** One result of `decodeAll`, in completion order: the job and its image or its error. */
export interface DecodeResult<J extends DecodeJob> {
  /** The job as given. */
  job: J;
  /** The image, when it decoded. */
  image?: JpegImage;
  /** The error, when it did not (a JpegError or CassetteError). */
  error?: Error;
}

/** A sample's CPU stage: decode (unless `decode: false`) and the pool's transform. */
export interface PrepareJob {
  /** Kept by the caller: the pool sends a copy, and keeps this one to send again if the job is taken back. */
  bytes: Uint8Array;
  /** Decode options for this sample. */
  options?: DecodeOptions;
  /** false: skip decoding, and hand the transform the sample's bytes. */
  decode?: boolean;
  /** The sample's id, passed to the transform. */
  id: string;
  /** The sample's label, passed to the transform. */
  label: number;
}

/** The pool's figures (`Loader.stats().prepare`). */
export interface PoolStats {
  /** Workers now (serving or in the slow lane). */
  workers: number;
  /** [ms since the pool started, workers] at each change. */
  history: [number, number][];
  /** Jobs answered since the pool started. */
  jobs: number;
  /** Jobs that ran past the deadline (their worker went to the slow lane). */
  slowLane: number;
  /** Jobs taken back from a worker in the slow lane and sent to another. */
  stolen: number;
  /** The deadline now, in ms (Infinity while still learning). */
  thresholdMs: number;
  /** The percentile it is taken at: 75, or 90 after the fallback. */
  percentile: 75 | 90;
  /** Job time p50/p99/max over the last 256 jobs, in ms. */
  jobMs: { p50: number; p99: number; max: number };
  /** The last scaling periods (with `autoscale`; at most 400). */
  periods: ScalePeriod[];
  /** Jobs whose bytes went in a buffer a worker sent back (NOTE [ Job buffers ]), not a new one (a decode pool's). */
  reused?: number;
  /** Images decoded into a buffer a released batch gave back (NOTE [ Image buffers ]), not a new one (a decode pool's). */
  recycled?: number;
}

interface Pending {
  id: number;
  req: DecodeRequest;
  transfer: ArrayBuffer[];
  /** The caller's bytes, to send again when taken back (prepare); undefined: not stealable. */
  keep?: Uint8Array;
  resolve: (img: JpegImage | DctImage | JpegScan | undefined) => void;
  reject: (e: Error) => void;
}

interface Slot {
  index: number;
  worker: WorkerHandle;
  /** In send order: the first unanswered one is the one it runs. */
  inFlight: Map<number, Pending>;
  ready: boolean;
  /** Running a job past the deadline: gets no jobs until that one answers. */
  slowJob?: number;
  /** Being retired: gets no jobs, stops once it has answered its own. */
  retiring?: boolean;
  /** Busy ms answered since the last scaling period. */
  busyMs: number;
}

/** Buffers workers sent back kept for later jobs' bytes (NOTE [ Job buffers ]). */
const SPARES = 32;
/** Image buffers released batches gave back, kept for later answers' pixels (NOTE [ Image buffers ]): a batch or two of them, none over 16 MiB. */
const OUTS = 64;
const OUT_MAX_BYTES = 16 << 20;
/** Answers whose sizes say how large a buffer for the next image's pixels must be. */
const RECENT = 32;
const DEFAULT_WORKER_URL = entryUrl(import.meta.url, "./worker.ts", "decode/worker.js");
/** Claim slots: two Int32 each, [claim, start ms since base]. More than jobs ever sent ahead at once. */
const SLOTS = 4096;
export const RUNNING = -1;
const PERIOD_MS = 250;

/** Starts the workers and resolves when each has its decoder (and transform) loaded. */
export async function createDecodePool(options: DecodePoolOptions = {}): Promise<JpegDecodePool> {
  const pool = new JpegDecodePool(options);
  try {
    await pool.ready;
  } catch (e) {
    pool.close();
    throw e;
  }
  return pool;
}

/** Decodes JPEGs in worker threads, so that a slow image never holds back the ones behind it; made by `createDecodePool`. */
export class JpegDecodePool implements AsyncDecoder<JpegDecodeOptions, JpegImage> {
  /** The format it decodes. */
  readonly format = "jpeg";
  /** Answers are promises (an AsyncDecoder). */
  readonly async = true;
  /** Resolves when every first worker has its decoder (and transform) loaded. */
  readonly ready: Promise<void>;
  readonly #perWorker: number;
  readonly #url: URL;
  readonly #slots: Slot[] = [];
  readonly #queue: Pending[] = [];
  readonly #claims = new Int32Array(new SharedArrayBuffer(SLOTS * 2 * 4));
  readonly #free: number[] = [];
  /** Buffers workers sent back, to carry later jobs' bytes (NOTE [ Job buffers ]). */
  readonly #spares = new SpareBuffers(SPARES);
  #reused = 0;
  /** Image buffers given back (recycle), for later answers' pixels (NOTE [ Image buffers ]). */
  readonly #outs = new SpareBuffers(OUTS, OUT_MAX_BYTES);
  /** Pixel buffers this pool's answers own whole: the only ones recycle() takes, once each. */
  readonly #delivered = new WeakSet<ArrayBuffer>();
  /** The pixel bytes of the last RECENT answers (a ring). */
  readonly #recentBytes = new Int32Array(RECENT);
  #recentAt = 0;
  #recycled = 0;
  #gpuRefused = 0;
  readonly #base = Math.floor(performance.timeOrigin + performance.now());
  readonly #o: DecodePoolOptions;
  readonly #lanes: boolean;
  readonly #min: number;
  readonly #max: number;
  #target: number;
  #nextId = 1;
  #nextIndex = 0;
  #closed = false;
  /** The deadline: learned from recent job times and how the samples moved turned out. */
  readonly #deadline = new Deadline();
  #check?: ReturnType<typeof setInterval>;
  /** When the lane was last checked (ms since base), and how often it is due (ms). */
  #checkedAt = 0;
  #checkEvery = 1;
  // Scaling.
  #period?: ReturnType<typeof setInterval>;
  #periodStart = 0;
  readonly #scaler: Scaler;
  #answersSeen = 0;
  #answersWaiting = 0;
  readonly #history: [number, number][] = [];
  #slowLane = 0;
  #stolen = 0;

  /** Starts the workers; `createDecodePool` also waits for them to be ready. */
  constructor(options: DecodePoolOptions = {}) {
    const bad = (why: string): never => {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot start a decode pool as ${why}`);
    };
    const o = this.#o = options;
    const cores = runtime.cpuTimes().cores;
    this.#min = o.minWorkers ?? 1;
    this.#max = o.maxWorkers ?? Math.max(this.#min, cores);
    if (!Number.isInteger(this.#min) || this.#min < 1) bad(`'minWorkers' must be a positive integer: current value is ${o.minWorkers}`);
    if (!Number.isInteger(this.#max) || this.#max < this.#min) bad(`'maxWorkers' must be an integer ≥ minWorkers (${this.#min}): current value is ${o.maxWorkers}`);
    const n = o.workers ?? (o.autoscale ? Math.max(this.#min, Math.min(2, this.#max)) : 2);
    if (!Number.isInteger(n) || n < 1) bad(`'workers' must be a positive integer: current value is ${n}`);
    const per = o.perWorker ?? 2;
    if (!Number.isInteger(per) || per < 1) bad(`'perWorker' must be a positive integer: current value is ${per}`);
    this.#perWorker = per;
    this.#scaler = new Scaler({ min: this.#min, max: this.#max });
    this.#lanes = o.slowLane ?? true;
    this.#url = o.workerUrl ?? DEFAULT_WORKER_URL;
    for (let s = SLOTS - 1; s >= 0; s--) this.#free.push(s);
    this.#target = n;
    const readies: Promise<void>[] = [];
    for (let i = 0; i < n; i++) readies.push(this.#spawn());
    this.#record();
    this.ready = Promise.all(readies).then(() => undefined);
  }

  /** The workers run a transform module on each prepared sample. */
  get hasTransform(): boolean {
    return this.#o.transform !== undefined;
  }

  /** JPEGs its workers' GPU decode (prepare with `gpu`) left to the CPU as `readScan` refused them. */
  get gpuRefused(): number {
    return this.#gpuRefused;
  }

  /** Workers now (serving, in the slow lane, or retiring). */
  get size(): number {
    return this.#slots.length;
  }

  /** Jobs queued or in flight. */
  get pending(): number {
    let n = this.#queue.length;
    for (const s of this.#slots) n += s.inFlight.size;
    return n;
  }

  #spawn(): Promise<void> {
    const index = this.#nextIndex++;
    const worker = runtime.spawnWorker(this.#url);
    const slot: Slot = { index, worker, inFlight: new Map(), ready: false, busyMs: 0 };
    this.#slots.push(slot);
    worker.postMessage({
      t: "setup", index, claims: this.#claims.buffer as SharedArrayBuffer, base: this.#base, transform: this.#o.transform, seed: this.#o.seed ?? 0,
    } satisfies PoolMessage);
    const started = new Promise<void>((resolve, reject) => {
      worker.onerror = (err) => {
        reject(err);
        this.#lost(slot, err);
      };
      worker.onmessage = (ev) => {
        const msg = ev.data as DecodeReply | TakenBackReply | { ready: boolean; message?: string };
        if ("ready" in msg) {
          if (msg.ready) {
            slot.ready = true;
            resolve();
            this.#pump();
          } else {
            const err = new CassetteError("ERR_RUNTIME", `Cannot start a decode worker: ${msg.message}`);
            reject(err);
            this.#retire(slot, true);
            // Nothing will serve the queue if no worker can start (a transform module that does not load).
            if (this.#slots.every((s) => !s.ready)) for (const job of this.#queue.splice(0)) job.reject(err);
          }
          return;
        }
        if ("takenBack" in msg) {
          // Not an answer (the job went to another worker): its buffers, for later jobs.
          if (msg.spare) this.#spares.give(msg.spare);
          if (msg.out) this.#outs.give(msg.out);
          return;
        }
        this.#answered(slot, msg);
      };
    });
    started.catch(() => {});
    return started;
  }

  #answered(slot: Slot, msg: DecodeReply): void {
    const job = slot.inFlight.get(msg.id);
    if (!job) return;
    slot.inFlight.delete(msg.id);
    this.#release(job);
    if (msg.spare) this.#spares.give(msg.spare);
    if (msg.gpuRefused) this.#gpuRefused++;
    // Pixels only: a scan has components and no data, as a DCT image has.
    if (msg.ok && msg.image && !isJpegScan(msg.image) && !isDctImage(msg.image)) {
      this.#delivered.add(msg.image.data.buffer);
      this.#recentBytes[this.#recentAt++ % RECENT] = msg.image.data.byteLength;
      if (msg.intoOut) this.#recycled++;
    }
    slot.busyMs += msg.ms;
    this.#answersSeen++;
    if (this.pending > this.#serving()) this.#answersWaiting++;
    this.#deadline.observe(msg.ms, slot.slowJob === msg.id);
    if (slot.slowJob === msg.id) slot.slowJob = undefined;
    if (msg.ok) job.resolve(msg.image);
    else job.reject(reviveError(msg.error));
    if (slot.retiring && slot.inFlight.size === 0) this.#retire(slot, true);
    if (this.#check) {
      const now = performance.timeOrigin + performance.now() - this.#base;
      if (now - this.#checkedAt >= this.#checkEvery) this.#laneScan(now);
    }
    this.#pump();
  }

  #release(job: Pending): void {
    const s = job.req.slot;
    if (s < 0) return;
    Atomics.store(this.#claims, s * 2, 0);
    this.#free.push(s);
    job.req.slot = -1;
  }

  /** A worker died: fail its jobs (their input was transferred to it) and start another. */
  #lost(slot: Slot, err: Error): void {
    const i = this.#slots.indexOf(slot);
    if (i < 0) return;
    this.#slots.splice(i, 1);
    slot.worker.terminate();
    for (const job of slot.inFlight.values()) {
      this.#release(job);
      job.reject(new CassetteError("ERR_RUNTIME", `Cannot decode job ${job.id} as its worker stopped: ${err.message}`, { cause: err }));
    }
    slot.inFlight.clear();
    if (!this.#closed && slot.ready) this.#spawn().then(() => this.#pump(), () => {});
  }

  /**
   * Decodes `bytes` in a worker. The bytes' buffer is transferred (the caller's view is left
   * empty) when the view spans the whole buffer; otherwise that part is copied first.
   */
  decode(bytes: Uint8Array, options?: JpegDecodeOptions): Promise<JpegImage> {
    if (!(bytes instanceof Uint8Array)) return Promise.reject(notBytes(bytes));
    return this.#enqueue(ownRequest(bytes, pixelOptions(options)), undefined) as Promise<JpegImage>;
  }

  /**
   * A sample's CPU stage in a worker: its pixels (unless `decode: false`; with `hybrid`, a JPEG's
   * DCT blocks; with `gpu`, a JPEG's scan) through the pool's
   * transform. The caller keeps `bytes`; the job can be taken back from a slow worker.
   */
  prepare(job: PrepareJob): Promise<Image | DctImage | JpegScan | undefined> {
    return this.#enqueue({ id: 0, slot: -1, bytes: job.bytes, options: job.options, decode: job.decode, sample: { id: job.id, label: job.label } }, job.bytes);
  }

  #enqueue(req: DecodeRequest, keep: Uint8Array | undefined): Promise<JpegImage | DctImage | JpegScan | undefined> {
    if (this.#closed) return Promise.reject(closedError());
    return new Promise((resolve, reject) => this.#submit(req, keep, resolve, reject));
  }

  /** Queues a job whose answer goes to `resolve` or `reject`: decodeAll passes its own, with no promise per job. */
  #submit(req: DecodeRequest, keep: Uint8Array | undefined, resolve: Pending["resolve"], reject: Pending["reject"]): void {
    const id = req.id = this.#newId();
    this.#queue.push({ id, req, transfer: keep ? [] : [req.bytes.buffer as ArrayBuffer], keep, resolve, reject });
    this.#pump();
  }

  /** Decodes every job, yielding each result as soon as it is ready (not in input order). */
  async *decodeAll<J extends DecodeJob>(jobs: Iterable<J> | AsyncIterable<J>): AsyncGenerator<DecodeResult<J>> {
    const done: DecodeResult<J>[] = [];
    let wake: (() => void) | null = null;
    // Through a function: TypeScript reads the feeding IIFE below as run inline, where wake is null.
    const wakeUp = () => wake?.();
    let outstanding = 0;
    let fed = false;
    const finish = (r: DecodeResult<J>) => {
      done.push(r);
      outstanding--;
      wakeUp();
    };
    // Feed jobs while yielding results: the iterator may be slow (a network source).
    const feeding = (async () => {
      for await (const job of jobs as AsyncIterable<J>) {
        outstanding++;
        // Straight to the queue with two callbacks: decode()'s promise (and the one .then makes)
        // cost the calling thread per image, competing with the workers for the cores.
        const bytes = job.bytes as unknown;
        if (!(bytes instanceof Uint8Array)) finish({ job, error: notBytes(bytes) });
        else if (this.#closed) finish({ job, error: closedError() });
        else this.#submit(ownRequest(bytes, pixelOptions(job.options)), undefined, (image) => finish({ job, image: image as JpegImage }), (error) => finish({ job, error }));
      }
      fed = true;
      wakeUp();
    })();
    let feedError: unknown = null;
    feeding.catch((e) => {
      feedError = e;
      fed = true;
      wakeUp();
    });
    while (true) {
      if (done.length > 0) {
        yield done.shift()!;
        continue;
      }
      if (feedError) throw feedError;
      if (fed && outstanding === 0) return;
      await new Promise<void>((r) => (wake = r));
      wake = null;
    }
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      let best: Slot | null = null;
      for (const s of this.#slots) {
        if (!s.ready || s.slowJob !== undefined || s.retiring || s.inFlight.size >= this.#perWorker) continue;
        if (!best || s.inFlight.size < best.inFlight.size) best = s;
      }
      if (!best) break;
      const job = this.#queue.shift()!;
      if (job.keep) {
        // A copy goes (transferred); the kept bytes can be sent again if the job is taken back.
        const copy = this.#carrier(job.keep.length);
        copy.set(job.keep);
        job.req.bytes = copy;
        job.transfer = [copy.buffer as ArrayBuffer];
        // Sent afresh each time: a buffer sent before went with the bytes to the worker that had the job.
        job.req.out = this.#outFor(job.req);
        if (job.req.out) job.transfer.push(job.req.out);
        if (this.#lanes && this.#free.length > 0) {
          const s = job.req.slot = this.#free.pop()!;
          Atomics.store(this.#claims, s * 2, job.id);
        }
      }
      best.inFlight.set(job.id, job);
      best.worker.postMessage(job.req, job.transfer);
    }
    this.#timers();
  }

  /** The lane check runs while jobs are in flight; the scaling period while the pool is used. */
  #timers(): void {
    const busy = this.pending > 0;
    if (this.#lanes && busy && !this.#check && Number.isFinite(this.#deadline.ms)) {
      // Due every quarter deadline; answers run it when due (#answered), and the timer is the
      // backstop for when none come, at 4 ms or more: an idle thread woken every 1 ms costs
      // ~20 µs a wake (Bun, 2 cores), a few µs an image taken from the workers' cores.
      this.#checkEvery = Math.max(1, Math.min(20, this.#deadline.ms / 4));
      this.#check = setInterval(() => this.#laneCheck(), Math.max(4, this.#checkEvery));
      (this.#check as { unref?: () => void }).unref?.();
    } else if (this.#check && !busy) {
      clearInterval(this.#check);
      this.#check = undefined;
    }
    if (this.#o.autoscale && busy && !this.#period && !this.#closed) {
      this.#periodStart = runtime.now();
      this.#scaler.restart();
      this.#period = setInterval(() => this.#scale(), PERIOD_MS);
      (this.#period as { unref?: () => void }).unref?.();
    }
  }

  /** NOTE [ Slow lane ]: a worker past the deadline gives back the jobs it has not started. */
  #laneCheck(): void {
    this.#laneScan(performance.timeOrigin + performance.now() - this.#base);
    this.#pump();
  }

  #laneScan(now: number): void {
    this.#checkedAt = now;
    for (const slot of this.#slots) {
      if (slot.inFlight.size === 0) continue;
      if (slot.slowJob === undefined) {
        const job = this.#pastDeadline(slot, now);
        // Only while another worker has run dry: moving a queue to a worker as busy copies the
        // jobs' bytes again and passes queues to and fro (two workers on two busy cores stole
        // 2 495 of 3 000 jobs, the ImageNet-like shards with the CPU tensor).
        if (!job || !this.#idleBesides(slot)) continue;
        slot.slowJob = job.id;
        this.#slowLane++;
        this.#scaler.laneUsed();
      }
      if (this.#idleBesides(slot)) this.#takeBack(slot);
    }
  }

  /** The job `slot` is running, when it has run past the deadline. */
  #pastDeadline(slot: Slot, now: number): Pending | undefined {
    for (const job of slot.inFlight.values()) {
      const s = job.req.slot;
      if (s < 0 || Atomics.load(this.#claims, s * 2) !== RUNNING) continue;
      return now - Atomics.load(this.#claims, s * 2 + 1) > this.#deadline.ms ? job : undefined;
    }
    return undefined;
  }

  /** Whether a worker other than `slot`, serving, holds under a quarter of what `slot` holds. */
  #idleBesides(slot: Slot): boolean {
    return this.#slots.some((o) => o !== slot && o.ready && o.slowJob === undefined && !o.retiring && 4 * o.inFlight.size < slot.inFlight.size);
  }

  /**
   * The later half of the jobs `slot` holds and has not started, back to the queue's front (work
   * stealing's half): a worker that other work only paused keeps the rest, and one truly stuck
   * is drained half by half as the others come free.
   */
  #takeBack(slot: Slot): void {
    const unstarted: Pending[] = [];
    for (const job of slot.inFlight.values()) if (job.id !== slot.slowJob && job.req.slot >= 0) unstarted.push(job);
    const back: Pending[] = [];
    for (const other of unstarted.slice(unstarted.length >> 1)) {
      const o = other.req.slot;
      if (Atomics.compareExchange(this.#claims, o * 2, other.id, 0) !== other.id) continue; // it started: it stays
      slot.inFlight.delete(other.id);
      this.#free.push(o);
      other.req.slot = -1;
      // A new id: the copy still queued at the slow worker can then never match a later claim.
      other.id = other.req.id = this.#newId();
      back.push(other);
    }
    this.#stolen += back.length;
    this.#queue.unshift(...back);
  }

  /** Job ids are positive Int32s (claims hold them; RUNNING is -1), so they wrap before 2³¹. */
  #newId(): number {
    const id = this.#nextId;
    this.#nextId = id >= 0x3fffffff ? 1 : id + 1;
    return id;
  }

  #serving(): number {
    let n = 0;
    for (const s of this.#slots) if (s.slowJob === undefined && !s.retiring) n++;
    return n;
  }

  /** The consumer waited `waitMs` for a batch (the loader reports each hand-over): scaling's demand signal. */
  demand(waitMs: number): void {
    this.#scaler.demand(waitMs);
  }

  /** NOTE [ Worker scaling ]: the period's figures to the rule (scaler.ts), and its answer. */
  #scale(): void {
    const now = runtime.now();
    let busyMs = 0;
    for (const s of this.#slots) busyMs += s.busyMs, s.busyMs = 0;
    // Jobs waited (in the queue, or behind another job in a worker) at most answers of the period.
    const backlog = this.#answersSeen > 0 ? this.#answersWaiting * 2 >= this.#answersSeen : this.pending > this.#serving();
    this.#answersSeen = this.#answersWaiting = 0;
    const to = this.#scaler.period({ workers: this.#target, serving: this.#serving(), busyMs, backlog, periodMs: now - this.#periodStart });
    if (to !== this.#target) this.resize(to);
    this.#periodStart = now;
    if (this.pending === 0 && this.#target <= this.#min && this.#period) {
      clearInterval(this.#period);
      this.#period = undefined;
    }
  }

  /** Sets the number of serving workers (within minWorkers … maxWorkers): starts or retires them. */
  resize(n: number): void {
    if (this.#closed) return;
    const to = Math.max(this.#min, Math.min(this.#max, Math.round(n)));
    this.#target = to;
    while (this.#serving() < to && this.#slots.length < this.#max) this.#spawn().catch(() => {});
    while (this.#serving() > to && this.#retireOne());
    this.#record();
  }

  /** Retires the least busy serving worker: now if it holds nothing, else once it has answered. */
  #retireOne(): boolean {
    let pick: Slot | undefined;
    for (const s of this.#slots) if (s.slowJob === undefined && !s.retiring && (!pick || s.inFlight.size < pick.inFlight.size)) pick = s;
    if (!pick) return false;
    this.#retire(pick, pick.inFlight.size === 0);
    return true;
  }

  #retire(slot: Slot, now: boolean): void {
    slot.retiring = true;
    if (!now) return;
    const i = this.#slots.indexOf(slot);
    if (i >= 0) this.#slots.splice(i, 1);
    slot.worker.terminate();
    this.#record();
  }

  #record(): void {
    const t = Math.round(performance.timeOrigin + performance.now() - this.#base);
    const n = this.#slots.filter((s) => !s.retiring).length;
    const last = this.#history.at(-1);
    if (!last || last[1] !== n) this.#history.push([t, n]);
    if (this.#history.length > 10_000) this.#history.splice(0, 5_000); // bounded over a long run
  }

  /**
   * NOTE [ Job buffers ]: a job's bytes cross to its worker in a buffer of their own (the sample
   * keeps its bytes, and the copy is sent again if the job is taken back). A new one per job put
   * an allocation of the file's size, its page faults and, in the worker, an arriving buffer on
   * each decode: the `slice` was 11 % of the loader's thread reading the ImageNet-like shards.
   * The worker sends the buffer back with its answer, and the next job's bytes go in it: the
   * smallest that fits of at most SPARES kept. A job taken back loses its buffer to the collector.
   */
  #carrier(n: number): Uint8Array {
    const spare = this.#spares.take(n);
    if (!spare) return new Uint8Array(new ArrayBuffer(n + (n >> 2)), 0, n);
    this.#reused++;
    return new Uint8Array(spare, 0, n);
  }

  /**
   * NOTE [ Image buffers ]: a sample's pixels came back from its worker in a new ArrayBuffer, of
   * the decoded region's size (~280 kB for a RandomResizedCrop of a 500×375 photo). Their page
   * faults and zero-filling in the workers were 62 % of a shard read's page faults, and its
   * system time 18 % of its CPU (`perf record -e page-faults`, the ImageNet-like shards with
   * the CPU tensor). A batch the loader's thread packs (src/assemble/batch.ts, packBatch) gives
   * its samples' image buffers back here when it is released (`recycle`), and the next jobs take
   * one each to decode into (Decoder.decodeInto): one at least as large as the largest of the
   * last RECENT images, else the worker makes a new one with that much room. Only buffers this
   * pool's answers own whole are taken, each once; a batch never released leaves them to the
   * collector, as before. After release() the batch's images may read a later sample's pixels.
   */
  recycle(buf: ArrayBuffer): void {
    if (!this.#closed && this.#delivered.delete(buf)) this.#outs.give(buf);
  }

  /** A buffer given back for `req`'s pixels, when they will be pixels of a size it holds. */
  #outFor(req: DecodeRequest): ArrayBuffer | undefined {
    if (this.hasTransform || req.decode === false || req.options?.hybrid || req.options?.gpu || (req.options as { depth16?: boolean } | undefined)?.depth16) return undefined;
    let need = 0;
    for (const b of this.#recentBytes) need = Math.max(need, b);
    req.outBytes = need;
    return this.#outs.take(need);
  }

  /** The pool's figures now: workers, their history, jobs and the slow lane's counts. */
  stats(): PoolStats {
    return {
      workers: this.#slots.filter((s) => !s.retiring).length, history: this.#history.slice(), jobs: this.#deadline.jobs, slowLane: this.#slowLane,
      stolen: this.#stolen, thresholdMs: this.#deadline.ms, percentile: this.#deadline.percentile, jobMs: this.#deadline.jobMs(),
      periods: this.#scaler.periods.slice(), reused: this.#reused, recycled: this.#recycled,
    };
  }

  /** Stops the workers; queued and in-flight jobs are rejected. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#check);
    clearInterval(this.#period);
    const err = new CassetteError("ERR_INVALID_OPTION", "Cannot finish decoding as the pool was closed");
    for (const job of this.#queue.splice(0)) job.reject(err);
    for (const s of this.#slots) {
      for (const job of s.inFlight.values()) job.reject(err);
      s.inFlight.clear();
      s.worker.terminate();
    }
    this.#slots.length = 0;
  }
}

/** Options for pixels: the hybrid decode's DCT blocks and the GPU decode's scans are the read path's (prepare), not decode()'s or decodeAll's. */
function pixelOptions(options: JpegDecodeOptions | undefined): JpegDecodeOptions | undefined {
  return options?.hybrid || options?.gpu ? { ...options, hybrid: false, gpu: false } : options;
}

/** The request for `bytes`: its buffer is transferred when the view spans it, else that part is copied first. */
function ownRequest(bytes: Uint8Array, options: JpegDecodeOptions | undefined): DecodeRequest {
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  return { id: 0, slot: -1, bytes: own ? bytes : bytes.slice(), options };
}

function notBytes(bytes: unknown): CassetteError {
  return new CassetteError("ERR_INVALID_OPTION", `Cannot decode as the input must be a Uint8Array: current value is ${typeof bytes}`);
}

function closedError(): CassetteError {
  return new CassetteError("ERR_INVALID_OPTION", "Cannot decode as the pool is closed");
}

function reviveError(e: { name: string; code?: string; reason?: string; offset?: number; message: string }): Error {
  if (e.name === "JpegError") {
    return new JpegError(e.reason as JpegErrorReason, e.offset ?? 0, e.message, e.code === "ERR_UNSUPPORTED");
  }
  if (e.name === "PngError") {
    return new PngError(e.reason as PngErrorReason, e.offset ?? 0, e.message, e.code === "ERR_UNSUPPORTED", { expected: 0, actual: 0, chunk: "" });
  }
  if (e.code) return new CassetteError(e.code as ErrorCode, e.message);
  return new Error(e.message);
}
