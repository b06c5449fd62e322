/**
 * A pool of decode workers, one wasm JPEG decoder in each: the decode stage off the loader's
 * thread, as an AsyncDecoder (decoder.ts). Input bytes
 * are transferred to a worker, not copied, and pixels are transferred back. Results come in
 * the order decodes *finish*: a slow image never holds back the ones behind it, which is
 * what the loader's ready-order assembler wants.
 *
 *   decode(bytes) ─► queue ─► worker with the fewest jobs in flight (≤ perWorker each)
 *                               │ postMessage(bytes, [bytes.buffer])
 *                               ▼
 *                  worker: jpeg.decode ─► postMessage(image, [image.data.buffer])
 *                               │
 *                  promise of that job resolves; the next queued job goes to that worker
 *
 * Two jobs in flight per worker hide the message round trip: the worker starts the next
 * image while the main thread handles the previous result.
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
import { entryUrl } from "../util/entry_url.ts";
import type { AsyncDecoder } from "./decoder.ts";
import type { JpegDecodeOptions, JpegImage } from "./jpeg.ts";
import { JpegError, type JpegErrorReason } from "./jpeg_error.ts";

/** Message to a worker (worker.ts). */
export interface DecodeRequest {
  id: number;
  bytes: Uint8Array;
  options?: JpegDecodeOptions;
}

/** Message from a worker. */
export type DecodeReply =
  | { id: number; ok: true; image: JpegImage }
  | { id: number; ok: false; error: { name: string; code?: string; reason?: string; offset?: number; message: string } };

export interface DecodePoolOptions {
  /** Workers (default: 2). */
  workers?: number;
  /** Jobs sent ahead to each worker (default 2). */
  perWorker?: number;
  /** The worker entry (default: worker.ts beside this file, or decode/worker.js in the bundle). */
  workerUrl?: URL;
}

export interface DecodeJob {
  bytes: Uint8Array;
  options?: JpegDecodeOptions;
}

/** One result of `decodeAll`, in completion order: the job and its image or its error. */
export interface DecodeResult<J extends DecodeJob> {
  job: J;
  image?: JpegImage;
  error?: Error;
}

interface Pending {
  id: number;
  req: DecodeRequest;
  transfer: ArrayBuffer[];
  resolve: (img: JpegImage) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: WorkerHandle;
  inFlight: Map<number, Pending>;
}

const DEFAULT_WORKER_URL = entryUrl(import.meta.url, "./worker.ts", "decode/worker.js");

/** Starts `workers` decode workers and resolves when each has its decoder instantiated. */
export async function createDecodePool(options: DecodePoolOptions = {}): Promise<JpegDecodePool> {
  const pool = new JpegDecodePool(options);
  await pool.ready;
  return pool;
}

export class JpegDecodePool implements AsyncDecoder<JpegDecodeOptions, JpegImage> {
  readonly format = "jpeg";
  readonly async = true;
  readonly size: number;
  readonly ready: Promise<void>;
  readonly #perWorker: number;
  readonly #url: URL;
  readonly #slots: Slot[] = [];
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: DecodePoolOptions = {}) {
    const n = options.workers ?? 2;
    if (!Number.isInteger(n) || n < 1) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot start a decode pool as 'workers' must be a positive integer: current value is ${n}`);
    }
    const per = options.perWorker ?? 2;
    if (!Number.isInteger(per) || per < 1) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot start a decode pool as 'perWorker' must be a positive integer: current value is ${per}`);
    }
    this.size = n;
    this.#perWorker = per;
    this.#url = options.workerUrl ?? DEFAULT_WORKER_URL;
    const readies: Promise<void>[] = [];
    for (let i = 0; i < n; i++) readies.push(this.#spawn());
    this.ready = Promise.all(readies).then(() => undefined);
  }

  /** Jobs queued or in flight. */
  get pending(): number {
    let n = this.#queue.length;
    for (const s of this.#slots) n += s.inFlight.size;
    return n;
  }

  #spawn(): Promise<void> {
    const worker = runtime.spawnWorker(this.#url);
    const slot: Slot = { worker, inFlight: new Map() };
    this.#slots.push(slot);
    return new Promise<void>((resolve, reject) => {
      worker.onerror = (err) => {
        reject(err);
        this.#lost(slot, err);
      };
      worker.onmessage = (ev) => {
        const msg = ev.data as DecodeReply | { ready: boolean; message?: string };
        if ("ready" in msg) {
          if (msg.ready) resolve();
          else reject(new CassetteError("ERR_RUNTIME", `Cannot start a decode worker as its decoder failed to load: ${msg.message}`));
          return;
        }
        const job = slot.inFlight.get(msg.id);
        if (!job) return;
        slot.inFlight.delete(msg.id);
        if (msg.ok) job.resolve(msg.image);
        else job.reject(reviveError(msg.error));
        this.#pump();
      };
    });
  }

  /** A worker died: fail its jobs (their input was transferred to it) and start another. */
  #lost(slot: Slot, err: Error): void {
    const i = this.#slots.indexOf(slot);
    if (i < 0) return;
    this.#slots.splice(i, 1);
    slot.worker.terminate();
    for (const job of slot.inFlight.values()) {
      job.reject(new CassetteError("ERR_RUNTIME", `Cannot decode job ${job.id} as its worker stopped: ${err.message}`, { cause: err }));
    }
    slot.inFlight.clear();
    if (!this.#closed) this.#spawn().then(() => this.#pump(), () => {});
  }

  /**
   * Decodes `bytes` in a worker. The bytes' buffer is transferred (the caller's view is left
   * empty) when the view spans the whole buffer; otherwise that part is copied first.
   */
  decode(bytes: Uint8Array, options?: JpegDecodeOptions): Promise<JpegImage> {
    if (this.#closed) return Promise.reject(new CassetteError("ERR_INVALID_OPTION", "Cannot decode as the pool is closed"));
    if (!(bytes instanceof Uint8Array)) {
      return Promise.reject(new CassetteError("ERR_INVALID_OPTION", `Cannot decode as the input must be a Uint8Array: current value is ${typeof bytes}`));
    }
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const sent = own ? bytes : bytes.slice();
    return new Promise<JpegImage>((resolve, reject) => {
      const id = this.#nextId++;
      this.#queue.push({ id, req: { id, bytes: sent, options }, transfer: [sent.buffer as ArrayBuffer], resolve, reject });
      this.#pump();
    });
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
        this.decode(job.bytes, job.options).then((image) => finish({ job, image }), (error) => finish({ job, error }));
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
      for (const s of this.#slots) if (s.inFlight.size < this.#perWorker && (!best || s.inFlight.size < best.inFlight.size)) best = s;
      if (!best) return;
      const job = this.#queue.shift()!;
      best.inFlight.set(job.id, job);
      best.worker.postMessage(job.req, job.transfer);
    }
  }

  /** Stops the workers; queued and in-flight jobs are rejected. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
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

function reviveError(e: { name: string; code?: string; reason?: string; offset?: number; message: string }): Error {
  if (e.name === "JpegError") {
    return new JpegError(e.reason as JpegErrorReason, e.offset ?? 0, e.message, e.code === "ERR_UNSUPPORTED");
  }
  if (e.code) return new CassetteError(e.code as ErrorCode, e.message);
  return new Error(e.message);
}
