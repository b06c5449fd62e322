/**
 * The Loader: wires the stages of the flow for one split.
 *
 *   epochPlan ─► Window (ramp) ─► Source.fetch (one request per sample, out of order)
 *                    ▲                 │ retries (RetrySource), skip/throw policy
 *                    │                 ▼
 *                consumed ◄── Assembler (ready order | strict order) ◄── transform (decode)
 *
 * NOTE [ Ready-order assembly ]: a batch is formed from whichever samples are ready — fetched
 * and transformed — not from a fixed list of ids. A slow connection or a slow decode delays
 * only its own samples, which join a later batch, so the consumer waits for the *fastest*
 * `batchSize` of the outstanding samples rather than for the slowest of a fixed set. This one
 * mechanism gives the 2025 paper's out-of-order incremental prefetching and MINATOLoader's
 * fast/slow queues. The ledger keeps it honest: every id of the epoch shard is handed over
 * exactly once. `order: "strict"` builds batch k from plan positions k·B … (k+1)·B − 1.
 *
 * @example
 * ```ts
 * import { Loader, openStore, ingest } from "cassette";
 * const store = await openStore("sqlite:.tmp/loader-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 64 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * const loader = new Loader({ store, dataset: "fm", ids, batchSize: 32, prefetch: 4, seed: 7 });
 * let n = 0;
 * for await (const batch of loader.epoch(0)) n += batch.ids.length;
 * console.log(n); // 128
 * await loader.close();
 * await store.close();
 * ```
 */
import { runtime } from "../runtime-adapters/index.ts";
import { CassetteError } from "./errors.ts";
import { epochPlan } from "./plan/epoch.ts";
import { Window } from "./schedule/window.ts";
import { assertUnique, Ledger } from "./schedule/ledger.ts";
import { type Batch, packBatch } from "./assemble/batch.ts";
import type { Fetched, Source } from "./source/source.ts";
import { RetrySource } from "./read/retry.ts";
import { type HedgeOptions, hedgeOptions, HedgeSource } from "./read/hedge.ts";
import { openSource } from "./source/open.ts";
import { openReadSource } from "./read/open.ts";
import { parseStoreAddress } from "./source/address.ts";
import type { Store } from "./dataset/store.ts";
import { openWorkerSource } from "./read/worker_source.ts";
import { DecodeSource } from "./read/decode_source.ts";
import { checkDecodeOptions, createJpegDecoder, type JpegDecodeOptions } from "./decode/jpeg.ts";

export interface LoaderOptions<T = Fetched> {
  /**
   * A store address (`sqlite:PATH`, `cassandra://…`, `http(s)://HOST/PREFIX`, `file:DIR`,
   * opened with openReadSource and closed by close()), an open Store, or a Source.
   */
  store: string | Store | Source;
  /**
   * The dataset: needed for a Store and for sqlite: and cassandra:// addresses; for http(s)://
   * and file: it is checked against the export's labels.json when given.
   */
  dataset?: string;
  /** The split's ids (e.g. `(await loadSplit("splits.json:train")).split.ids`). */
  ids: readonly string[];
  batchSize: number;
  /** Permute ids each epoch (default true). */
  shuffle?: boolean;
  seed?: number;
  rank?: number;
  worldSize?: number;
  /**
   * Batches of requests kept in flight once ramped up (default 8), or "auto": start at 8 and
   * deepen whenever the consumer starves with the window full, up to `maxPrefetch`.
   */
  prefetch?: number | "auto";
  /** Deepest window "auto" may reach, in batches (default 64). */
  maxPrefetch?: number;
  /** Batches requested at the start of an epoch before the ramp (default 2). */
  rampStart?: number;
  /** "ready" (default): batches from whatever arrived; "strict": plan order. */
  order?: "ready" | "strict";
  /** Drop samples so every rank has the same whole number of batches. */
  dropLast?: boolean;
  /** Retries of a failed fetch (default 3), with backoff. */
  retries?: number;
  /** After the retries: "throw" (default) ends the epoch with an error naming the id; "skip" counts it and goes on. */
  onError?: "throw" | "skip";
  /** Runs on each fetched sample (e.g. decode); a sample is ready when its promise resolves. */
  transform?: (s: Fetched) => T | Promise<T>;
  /**
   * Hedged requests (default off): a sample slower than the recent p95 latency × 2 is asked for
   * again, the first answer wins, at most 5 % of requests are hedged (src/read/hedge.ts).
   */
  hedge?: boolean | HedgeOptions;
  /**
   * Read the next epoch's first samples while the current epoch's last ones are in flight, so
   * the pipe does not empty at the epoch boundary (and refills while the caller evaluates).
   * They share the window: never more outstanding than one window in all. Used only if
   * `epoch(e + 1)` is called next without `skip`; otherwise dropped (at most one window of
   * reads wasted). Default "auto": once two epochs have been read in sequence; `true` also for
   * the first epoch (right for a training loop); `epoch(e, { readAhead })` overrides it.
   */
  readAhead?: boolean | "auto";
  /**
   * At an epoch's end, once everything is requested and the consumer waits, ask once more for
   * a sample pending far longer than usual (NOTE [ Epoch tail ]); the first answer wins
   * (default false; train.ts and the read bench turn it on).
   */
  reaskTail?: boolean;
  /** Cassandra: "rate" (default) sends each request where it should finish first; "driver" leaves the choice to the driver. */
  balance?: "rate" | "driver";
  /** Cap on requests in flight at the source (default: the source's). */
  maxInFlight?: number;
  /**
   * Read in this many worker threads, each with its own connections to the store (default 0:
   * in this thread). Needs a store address. The driver's work, and with `decode` the decoding,
   * then leave the thread that iterates the batches, which is the one that feeds the GPU
   * (src/read/worker_source.ts).
   */
  workers?: number;
  /**
   * Decode each sample's JPEG where it is read (in its read worker with `workers`, else in
   * this thread as it arrives) and hand it over as `Fetched.image` (default false). A file
   * that does not decode is an error naming the sample.
   */
  decode?: boolean | JpegDecodeOptions;
  signal?: AbortSignal;
}

export interface EpochOptions {
  /** Ids already handed over in an interrupted run of this epoch (from checkpointed batch.ids): they are not read again. */
  skip?: Iterable<string>;
  /** Read ahead into epoch `epoch + 1` near this epoch's end (default: the loader's `readAhead`). */
  readAhead?: boolean;
}

export interface LoaderStats {
  epochs: number;
  batches: number;
  samples: number;
  bytes: number;
  seconds: number;
  samplesPerSec: number;
  mbPerSec: number;
  /** Time between consecutive batches handed over. */
  batchMs: { p50: number; p99: number; max: number };
  /** Time the consumer spent waiting inside the iterator. */
  waitSeconds: number;
  errors: number;
  retries: number;
  /** Requests asked for a second time because they were slow (option `hedge`). */
  hedged: number;
  /** Hedged requests whose second answer came first. */
  hedgeWins: number;
  duplicates: number;
  /** Most samples ever outstanding (requested, not yet handed over): the memory bound. */
  maxOutstanding: number;
  /**
   * Samples asked for again at an epoch's end because they were far slower than usual (the
   * consumer was waiting for nothing else); the first answer wins, the other is dropped.
   */
  reasked: number;
  /** Of those, how many got their answer from the second request. */
  reaskWins: number;
  /** Samples of the next epoch read ahead (option readAhead) that were used. */
  readAhead: number;
  /** Samples read ahead and then dropped because a different epoch (or a resume) came next. */
  readAheadDropped: number;
  /** The window's depth in batches at the end (grows under prefetch: "auto"). */
  prefetch: number;
  /** Bytes per connection (or host), when the source says which served a sample. */
  perConnection: Record<string, number>;
}

export class Loader<T = Fetched> implements AsyncDisposable {
  readonly options: LoaderOptions<T>;
  #source?: Promise<Source>;
  readonly #skippedByEpoch = new Map<number, number>();
  #retry?: RetrySource;
  #hedge?: HedgeSource;
  #active?: EpochRun<T>;
  /** The next epoch, read ahead near the active one's end (option readAhead). */
  #ahead?: EpochRun<T>;
  #readAhead = false;
  #previous = Number.NaN;
  /** Fastest request → answer time seen (ms): with the delivered rate, what the link holds. */
  #minLatencyMs = Infinity;
  readonly #handOvers: [number, number][] = []; // [time, samples] of the last 16 hand-overs: the rate taken
  /** The last depth probe beyond what latency asks: the rate before it, and when (batches). */
  #probe?: { rate: number; at: number };
  #plateau = false;
  #closed = false;
  #depth?: number;
  #rampedUp = false;
  readonly #stats = {
    epochs: 0, batches: 0, samples: 0, bytes: 0, busyMs: 0, waitMs: 0, errors: 0, duplicates: 0, maxOutstanding: 0, readAhead: 0, readAheadDropped: 0,
    batchMs: [] as number[], perConnection: {} as Record<string, number>,
  };

  constructor(options: LoaderOptions<T>) {
    const o = options;
    const bad = (why: string): never => {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot create a Loader as ${why}`);
    };
    if (!Number.isInteger(o.batchSize) || o.batchSize < 1) bad(`'batchSize' must be a positive integer: current value is ${o.batchSize}`);
    if (o.prefetch !== undefined && o.prefetch !== "auto" && !(Number.isInteger(o.prefetch) && o.prefetch >= 1)) {
      bad(`'prefetch' must be a positive integer or "auto": current value is ${o.prefetch}`);
    }
    if (o.order !== undefined && o.order !== "ready" && o.order !== "strict") bad(`'order' must be "ready" or "strict": current value is ${o.order}`);
    if (o.balance !== undefined && o.balance !== "rate" && o.balance !== "driver") bad(`'balance' must be "rate" or "driver": current value is ${o.balance}`);
    if (o.readAhead !== undefined && typeof o.readAhead !== "boolean" && o.readAhead !== "auto") bad(`'readAhead' must be true, false or "auto": current value is ${o.readAhead}`);
    if (o.onError !== undefined && o.onError !== "throw" && o.onError !== "skip") bad(`'onError' must be "throw" or "skip": current value is ${o.onError}`);
    if (o.workers !== undefined && !(Number.isInteger(o.workers) && o.workers >= 0)) bad(`'workers' must be a whole number: current value is ${o.workers}`);
    if (o.decode !== undefined && typeof o.decode !== "boolean") {
      if (typeof o.decode !== "object" || o.decode === null) bad(`'decode' must be true, false or the decoder's options: current value is ${o.decode}`);
      checkDecodeOptions(o.decode); // a bad option is named now, not as every sample's decode error
    }
    if (o.workers && typeof o.store !== "string") bad("'workers' needs a store address (each worker opens its own connections), not an open store or source");
    if (typeof o.store === "string") {
      const kind = parseStoreAddress(o.store).kind; // a bad address fails here, not at the first batch
      if (!o.dataset && (kind === "sqlite" || kind === "cassandra")) bad(`'dataset' is needed to read from a ${kind} store, which holds several`);
    } else if (isStore(o.store) && !o.dataset) bad("'dataset' is needed to read from a store");
    if (!Array.isArray(o.ids)) bad("'ids' must be an array of sample ids");
    assertUnique(o.ids, "Cannot create a Loader");
    if (typeof o.hedge === "object" && o.hedge !== null) hedgeOptions(o.hedge, "a Loader's requests");
    this.options = options;
  }

  /** Batches of epoch `epoch`: iterate with `for await`. One epoch at a time. */
  epoch(epoch: number, opts: EpochOptions = {}): AsyncIterableIterator<Batch<T>, undefined> {
    if (this.#closed) throw new CassetteError("ERR_INVALID_OPTION", "Cannot start an epoch as the loader is closed");
    if (this.#active && !this.#active.finished) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot start epoch ${epoch} while epoch ${this.#active.epoch} is still being read: finish or break out of it first`);
    }
    const skip = new Set(opts.skip ?? []);
    const ahead = this.#ahead;
    this.#ahead = undefined;
    let run: EpochRun<T>;
    if (ahead && ahead.epoch === epoch && skip.size === 0) {
      run = ahead;
      this.#stats.readAhead += ahead.requestedSoFar;
    } else {
      if (ahead) this.#stats.readAheadDropped += ahead.requestedSoFar, ahead.stop();
      run = new EpochRun<T>(this, epoch, this.#plan(epoch).filter((id) => !skip.has(id)));
    }
    const o = this.options;
    const auto = o.prefetch === "auto";
    const prefetch = this._depth();
    // The ramp guards the first start of a link; later epochs start at the depth the loader
    // has learned, which is the steady state, not a burst above it.
    const start = this._started() ? prefetch : (o.rampStart ?? 2);
    run.begin(new Window(o.batchSize, prefetch, start, auto ? Math.max(prefetch, o.maxPrefetch ?? 64) : prefetch));
    const mode = opts.readAhead ?? o.readAhead ?? "auto";
    this.#readAhead = mode === true || (mode === "auto" && this.#previous === epoch - 1);
    this.#previous = epoch;
    this.#active = run;
    this.#stats.epochs++;
    this.#handOvers.length = 0; // rates are measured within an epoch: the boundary is no sample of them
    return run;
  }

  #plan(epoch: number): string[] {
    const o = this.options;
    return epochPlan(o.ids, {
      seed: o.seed ?? 0, epoch, rank: o.rank, worldSize: o.worldSize, shuffle: o.shuffle, batchSize: o.batchSize, dropLast: o.dropLast,
    });
  }

  /** The source, opened on first use. */
  source(): Promise<Source> {
    this.#source ??= (async () => {
      const o = this.options;
      let src: Source;
      // Every kind of address opens the same way; the source's close() closes its store.
      if (typeof o.store === "string" && o.workers) {
        src = await openWorkerSource(o.store, o.dataset, { workers: o.workers, decode: o.decode, maxInFlight: o.maxInFlight, balance: o.balance });
      } else {
        if (typeof o.store === "string") src = await openReadSource(o.store, o.dataset, { maxInFlight: o.maxInFlight, balance: o.balance });
        else if (isStore(o.store)) src = await openSource(o.store, o.dataset!, o.maxInFlight, { balance: o.balance });
        else src = o.store;
        if (o.decode) src = new DecodeSource(src, await createJpegDecoder(), o.decode === true ? undefined : o.decode);
      }
      // Hedge inside the retries: a slow attempt is hedged, a failed one retried. The epoch
      // tail's re-asks are the same mechanism's other trigger (no quantile hedging: budget 0).
      if (o.hedge || o.reaskTail) src = this.#hedge = new HedgeSource(src, o.hedge ? (o.hedge === true ? {} : o.hedge) : { budget: 0 });
      this.#retry = new RetrySource(src, { retries: o.retries ?? 3 });
      this.#retry.onDrain(() => {
        this.#active?.drained();
        this.#ahead?.drained();
      });
      return this.#retry;
    })();
    return this.#source;
  }

  /**
   * Samples of epoch `epoch` given up on after their retries so far (`onError: "skip"`):
   * unlike `stats().errors`, not mixed with the next epoch's read-ahead.
   */
  skipped(epoch: number): number {
    return this.#skippedByEpoch.get(epoch) ?? 0;
  }

  /** Figures for everything read so far. */
  stats(): LoaderStats {
    const s = this.#stats;
    const sorted = s.batchMs.slice().sort((a, b) => a - b);
    const q = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0);
    const seconds = s.busyMs / 1000;
    return {
      epochs: s.epochs, batches: s.batches, samples: s.samples, bytes: s.bytes, seconds,
      samplesPerSec: seconds > 0 ? s.samples / seconds : 0, mbPerSec: seconds > 0 ? s.bytes / 1e6 / seconds : 0,
      batchMs: { p50: q(0.5), p99: q(0.99), max: sorted[sorted.length - 1] ?? 0 },
      waitSeconds: s.waitMs / 1000, errors: s.errors, retries: this.#retry?.retries ?? 0,
      hedged: this.#hedge?.hedged ?? 0, hedgeWins: this.#hedge?.hedgeWins ?? 0, duplicates: s.duplicates,
      maxOutstanding: s.maxOutstanding, readAhead: s.readAhead, readAheadDropped: s.readAheadDropped,
      reasked: this.#hedge?.reasked ?? 0, reaskWins: this.#hedge?.reaskWins ?? 0,
      prefetch: this.#active?.prefetch() ?? 0, perConnection: { ...s.perConnection },
    };
  }

  /** Stops reading, closes what the loader opened. Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#active?.stop(new CassetteError("ERR_INVALID_OPTION", "Cannot read on: the loader was closed"));
    this.#ahead?.stop();
    if (this.#source) await (await this.#source.catch(() => undefined))?.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** @internal bookkeeping from the epoch run. */
  _record(batch: Batch<T>, gapMs: number, waitMs: number, conns: Map<string, number>): void {
    const s = this.#stats;
    s.batches++;
    s.samples += batch.ids.length;
    s.bytes += batch.bytes;
    s.batchMs.push(gapMs);
    this.#handOvers.push([runtime.now(), batch.ids.length]);
    if (this.#handOvers.length > 16) this.#handOvers.shift();
    s.busyMs += gapMs;
    s.waitMs += waitMs;
    this._outstanding();
    for (const [c, b] of conns) s.perConnection[c] = (s.perConnection[c] ?? 0) + b;
    conns.clear();
  }
  /** @internal A request was answered after `ms`. */
  _answered(ms: number): void {
    if (ms < this.#minLatencyMs) this.#minLatencyMs = ms;
  }
  /** @internal The consumer waits at an epoch's end (true), or the epoch ended (false): NOTE [ Epoch tail ]. */
  _urge(on: boolean): void {
    if (this.options.reaskTail) this.#hedge?.urge(on);
  }
  /** @internal */
  _error(duplicates = 0, errors = 0): void {
    this.#stats.duplicates += duplicates;
    this.#stats.errors += errors;
  }
  /** @internal A sample of `epoch` given up on: an error in stats(), and one of skipped(epoch). */
  _skipped(epoch: number): void {
    this.#stats.errors++;
    this.#skippedByEpoch.set(epoch, this.skipped(epoch) + 1);
  }
  /** @internal The window depth an epoch starts from: what earlier epochs learned. */
  _depth(learned?: number): number {
    if (learned !== undefined) this.#depth = learned;
    return this.#depth ?? (typeof this.options.prefetch === "number" ? this.options.prefetch : 8);
  }
  /** @internal Whether an earlier epoch already ramped this loader's link up (then: true). */
  _started(): boolean {
    const was = this.#rampedUp;
    this.#rampedUp = true;
    return was;
  }
  /** @internal Records the samples outstanding over both runs (the memory bound). */
  _outstanding(): void {
    const n = (this.#active && !this.#active.finished ? this.#active.outstanding : 0) + (this.#ahead?.outstanding ?? 0);
    this.#stats.maxOutstanding = Math.max(this.#stats.maxOutstanding, n);
  }
  /**
   * @internal Samples `run` may still request. One window bounds both runs together: the active
   * epoch's, which the next epoch's read-ahead fills only once the active one has asked for its
   * whole plan (and keeps, while the caller is between epochs).
   */
  _room(run: EpochRun<T>): number {
    const active = this.#active, ahead = this.#ahead;
    if (!active) return 0;
    const used = (active.finished ? 0 : active.outstanding) + (ahead?.outstanding ?? 0);
    if (run === active && !active.finished) return active.windowSamples() - used;
    if (run === ahead && (active.finished || active.allRequested)) return active.windowSamples() - used;
    return 0;
  }
  /** @internal The active run asked for its whole plan, or ended: start or feed the read-ahead. */
  _tail(source: Source): void {
    const active = this.#active;
    if (!active || this.#closed || !this.#readAhead || active.stopped) return;
    if (!this.#ahead) {
      this.#ahead = new EpochRun<T>(this, active.epoch + 1, this.#plan(active.epoch + 1));
      this.#ahead.prime(source);
    } else this.#ahead.pump();
  }
  /**
   * @internal The consumer found nothing ready with the window full: deepen it, if that pays.
   * - Below twice what the link holds at the rate batches are taken (rate × fastest request
   *   time, as BBR estimates a path) the window is too shallow for the latency: grow.
   * - Beyond that, depth only pays through cheaper per-request work (fuller writes, fewer
   *   wake-ups): probe 25 % deeper, and go on only while the rate taken rises ≥ 5 % over the
   *   next 16 batches. A consumer short of CPU rather than data stops after one probe.
   */
  _deepen(window: Window): void {
    const h = this.#handOvers;
    if (!Number.isFinite(this.#minLatencyMs) || h.length < 2) return; // nothing measured yet
    let n = 0;
    for (let i = 1; i < h.length; i++) n += h[i][1];
    const samplesPerMs = n / Math.max(1e-3, h[h.length - 1][0] - h[0][0]);
    if (window.samples() < 2 * samplesPerMs * this.#minLatencyMs + this.options.batchSize) {
      if (window.starved()) this.#probe = undefined;
      return;
    }
    // A probe is judged on 16 hand-overs of one epoch, all at the new depth.
    const batches = this.#stats.batches;
    if (this.#plateau || h.length < 16 || (this.#probe && batches - this.#probe.at < 16)) return;
    if (this.#probe && samplesPerMs < this.#probe.rate * 1.05) {
      this.#plateau = true;
      return;
    }
    if (window.starved(Math.max(1, Math.round(window.prefetch / 4)))) this.#probe = { rate: samplesPerMs, at: batches };
  }
}

function isStore(x: unknown): x is Store {
  return typeof x === "object" && x !== null && "scanNat" in x && "createDataset" in x;
}

/** One epoch's reading: scheduler, ledger and assembler for one pass over the plan. */
class EpochRun<T> implements AsyncIterableIterator<Batch<T>, undefined> {
  readonly epoch: number;
  finished = false;
  readonly #loader: Loader<T>;
  readonly #plan: string[];
  readonly #ledger: Ledger;
  #window?: Window; // set by begin(): a run read ahead has none until its epoch is asked for
  readonly #B: number;
  readonly #strict: boolean;
  readonly #skipErrors: boolean;
  readonly #transform?: (s: Fetched) => T | Promise<T>;
  #source?: Source;
  #begun = false;
  stopped = false;
  #next = 0; // plan position of the next request
  #outstanding = 0; // requested and not yet handed over (in flight, transforming, or ready)
  #pending = 0; // requested and neither arrived nor skipped
  #saturated = false;
  #ready: { s: Fetched; item: T }[] = []; // ready order: arrival order
  readonly #atPos: ({ s: Fetched; item: T } | undefined)[]; // strict order: by plan position
  #skippedHeld = 0; // ready order: skipped samples whose window slots are not yet freed
  #batchIndex = 0;
  #error?: Error;
  #wake?: () => void;
  #lastHandOver = 0;
  readonly #askedAt: Float64Array; // when each plan position was asked for (its latency)
  readonly #conns = new Map<string, number>();
  readonly #onAbort = () => this.stop(new CassetteError("ERR_INVALID_OPTION", "Cannot read on: the loader's signal was aborted"));

  constructor(loader: Loader<T>, epoch: number, plan: string[]) {
    const o = loader.options;
    this.#loader = loader;
    this.epoch = epoch;
    this.#plan = plan;
    this.#ledger = new Ledger(plan.length);
    this.#askedAt = new Float64Array(plan.length);
    this.#atPos = o.order === "strict" ? new Array(plan.length) : [];
    this.#B = o.batchSize;
    this.#strict = o.order === "strict";
    this.#skipErrors = o.onError === "skip";
    this.#transform = o.transform;
    o.signal?.addEventListener("abort", this.#onAbort, { once: true });
    if (o.signal?.aborted) this.#onAbort();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The caller asked for this epoch: from now on its own window bounds it. */
  begin(window: Window): void {
    this.#window = window;
  }

  /** Starts reading ahead (before begin()), on the source the active epoch uses. */
  prime(source: Source): void {
    this.#source = source;
    this.pump();
  }

  get outstanding(): number {
    return this.#outstanding;
  }
  /** Samples requested so far. */
  get requestedSoFar(): number {
    return this.#next;
  }
  get allRequested(): boolean {
    return this.#next === this.#plan.length;
  }
  windowSamples(): number {
    return this.#window?.samples() ?? 0;
  }

  async next(): Promise<IteratorResult<Batch<T>, undefined>> {
    const t0 = runtime.now();
    if (!this.#begun) {
      try {
        this.#source ??= await this.#loader.source();
      } catch (e) {
        this.#finish();
        throw e;
      }
      this.#begun = true;
      this.#lastHandOver = runtime.now();
      this.pump();
    }
    for (;;) {
      if (this.#error) {
        this.#finish();
        throw this.#error;
      }
      const taken = this.#take();
      if (taken) {
        const { skippedCount, ...batch } = taken;
        const now = runtime.now();
        this.#loader._record(batch, now - this.#lastHandOver, now - t0, this.#conns);
        this.#lastHandOver = now;
        this.#outstanding -= batch.ids.length + skippedCount;
        this.#window!.consumed();
        this.pump();
        return { value: batch, done: false };
      }
      if (this.#next === this.#plan.length && this.#pending === 0) {
        this.#finish();
        if (!this.#ledger.complete()) {
          throw new Error(`ledger: epoch ${this.epoch} ended with ${this.#ledger.delivered} delivered + ${this.#ledger.skipped} skipped of ${this.#ledger.size}`);
        }
        return { value: undefined, done: true };
      }
      // Nothing ready, the window full, and the source still taking requests: the window may
      // be too shallow for this link's latency. (A saturated source is the bottleneck itself:
      // deepening the window would only hold more memory.)
      if (this.#loader._room(this) <= 0 && this.#next < this.#plan.length && !this.#saturated) {
        this.#loader._deepen(this.#window!);
        this.pump();
      }
      if (this.#next === this.#plan.length && this.#pending > 0) this.#loader._urge(true);
      await new Promise<void>((r) => (this.#wake = r));
    }
  }

  /*
   * NOTE [ Epoch tail ]: an epoch ends only when its slowest sample is in, so a sample stuck
   * on a connection that turned slow holds up the last batch (and, in strict order, its own).
   * Once everything is requested and the consumer waits, samples pending far longer than
   * usual (3 × the median request time, and 100 ms more) are asked for once more; the source
   * sends them where they should finish first. This is HedgeSource's second trigger
   * (`urge`, src/read/hedge.ts), inside the retries: the first answer wins, the other is
   * dropped there, and an error waits for the other attempt. Option `reaskTail`.
   */

  /** Breaking out of `for await` ends the epoch. */
  return(): Promise<IteratorResult<Batch<T>, undefined>> {
    this.stop();
    return Promise.resolve({ value: undefined, done: true });
  }

  stop(error?: Error): void {
    if (this.finished) return;
    if (error) this.#error = error;
    this.stopped = true;
    this.#next = this.#plan.length; // request nothing more
    this.#finish();
    this.#wakeUp();
  }

  prefetch(): number {
    return this.#window?.prefetch ?? 0;
  }

  drained(): void {
    this.#saturated = false;
    this.pump();
  }

  #finish(): void {
    this.finished = true;
    this.#loader._urge(false);
    if (this.#window) this.#loader._depth(this.#window.prefetch); // the next epoch starts as deep as this one ended
    this.#loader.options.signal?.removeEventListener("abort", this.#onAbort);
    // Ended normally: the next epoch's read-ahead may now use the whole window.
    if (this.#window && !this.stopped && !this.#error && this.#source) this.#loader._tail(this.#source);
  }

  /** Requests as many samples as the window, the plan and the source allow. */
  pump(): void {
    const src = this.#source;
    if (!src || this.finished) return;
    const now = runtime.now();
    for (let room = this.#loader._room(this); room > 0 && !this.#saturated && this.#next < this.#plan.length; room--) {
      // Positions, not ids, from here on: the ledger and the strict assembler index by them.
      const pos = this.#next++;
      this.#ledger.requested(pos);
      this.#askedAt[pos] = now;
      this.#outstanding++;
      this.#pending++;
      if (!src.fetch(this.#plan[pos], (err, s) => this.#arrived(pos, err, s))) this.#saturated = true;
    }
    this.#loader._outstanding();
    if (this.#window && this.#next === this.#plan.length) this.#loader._tail(src);
  }

  #arrived(pos: number, err: Error | null, s?: Fetched): void {
    if (this.finished && !this.#error) return;
    const id = this.#plan[pos];
    if (err || !s) {
      this.#pending--;
      if (this.#skipErrors) this.#skip(pos);
      else {
        this.#error ??= new CassetteError(
          ((err as { code?: string })?.code?.startsWith?.("ERR_") ? (err as CassetteError).code : "ERR_STORE_UNREACHABLE"),
          `Cannot read sample ${id} of epoch ${this.epoch} from ${this.#source?.name}: ${err?.message}`,
          { cause: err },
        );
      }
      return this.#wakeUp();
    }
    if (!this.#ledger.deliver(pos)) return this.#loader._error(1, 0);
    this.#loader._answered(runtime.now() - this.#askedAt[pos]);
    if (s.conn) this.#conns.set(s.conn, (this.#conns.get(s.conn) ?? 0) + s.data.length);
    if (!this.#transform) return this.#ready1(pos, s, s as unknown as T);
    let out: T | Promise<T>;
    try {
      out = this.#transform(s);
    } catch (e) {
      return this.#transformFailed(pos, e as Error);
    }
    // A transform that answers at once (train.ts's, with read workers) costs no promise and no
    // trip through the microtask queue.
    if (typeof (out as { then?: unknown } | null)?.then !== "function") return this.#ready1(pos, s, out as T);
    (out as Promise<T>).then((item) => this.#ready1(pos, s, item), (e) => this.#transformFailed(pos, e));
  }

  #skip(pos: number): void {
    this.#ledger.skip(pos);
    if (!this.#strict) this.#skippedHeld++;
    this.#loader._skipped(this.epoch);
  }

  #transformFailed(pos: number, e: Error): void {
    this.#pending--;
    if (this.#skipErrors) this.#skip(pos);
    else {
      // Named by sample and epoch, whatever threw (a decoder's JpegError names only a byte offset).
      const code = e instanceof CassetteError ? e.code : "ERR_MALFORMED_INPUT";
      this.#error ??= new CassetteError(code, `Cannot transform sample ${this.#plan[pos]} of epoch ${this.epoch}: ${e.message}`, { cause: e });
    }
    this.#wakeUp();
  }

  #ready1(pos: number, s: Fetched, item: T): void {
    this.#pending--;
    if (this.#strict) this.#atPos[pos] = { s, item };
    else this.#ready.push({ s, item });
    this.#wakeUp();
  }

  #wakeUp(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /** The next batch if one is ready. */
  #take(): (Batch<T> & { skippedCount: number }) | undefined {
    const pack = !this.#transform;
    const allIn = this.#next === this.#plan.length && this.#pending === 0;
    if (!this.#strict) {
      // Skipped samples free their window slots as soon as a batch is taken.
      if (this.#ready.length >= this.#B || (allIn && this.#ready.length > 0)) {
        const part = this.#ready.splice(0, this.#B);
        const skippedCount = this.#skippedHeld;
        this.#skippedHeld = 0;
        return { ...packBatch(this.epoch, this.#batchIndex++, part, pack), skippedCount };
      }
      if (allIn && this.#skippedHeld) this.#outstanding -= this.#skippedHeld, this.#skippedHeld = 0;
      return undefined;
    }
    const start = this.#batchIndex * this.#B;
    if (start >= this.#plan.length) return undefined;
    const end = Math.min(start + this.#B, this.#plan.length);
    for (let p = start; p < end; p++) if (!this.#atPos[p] && !this.#ledger.isSkipped(p)) return undefined;
    const part: { s: Fetched; item: T }[] = [];
    let skippedCount = 0;
    for (let p = start; p < end; p++) {
      const a = this.#atPos[p];
      if (a) part.push(a), this.#atPos[p] = undefined;
      else skippedCount++;
    }
    if (part.length === 0) {
      // A batch of nothing but skipped samples: hand over nothing, move on.
      this.#batchIndex++;
      this.#outstanding -= skippedCount;
      return this.#take();
    }
    return { ...packBatch(this.epoch, this.#batchIndex++, part, pack), skippedCount };
  }
}
