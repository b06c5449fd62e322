/**
 * The scheduler across epochs: the active epoch's run, the next epoch's read-ahead, the one
 * window that bounds both, and the depth learned from one epoch to the next.
 *
 *   epoch(e) ─► EpochRun(e) ── begin(Window: ramp 5-per-4, depth from DepthPolicy)
 *                  │ all of e requested ─► tail() ─► EpochRun(e+1) read ahead in the room left
 *   epoch(e+1) ─► the read-ahead run, if no skip; else it is dropped and counted
 */
import type { Batch } from "../assemble/batch.ts";
import { CassetteError } from "../errors.ts";
import type { ConnCount, StatsRecorder } from "../observe/stats.ts";
import type { Fetched, Source } from "../source/source.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { DepthPolicy } from "./depth.ts";
import { EpochRun, type RunHost, type RunOptions, type RunPlan } from "./epoch_run.ts";
import { Window } from "./window.ts";
import type { PacketReader } from "../read/packet.ts";

/*
 * NOTE [ First window in bytes ]: a burst's harm is its bytes ("Hiding Latencies…"
 * (arXiv:2503.22643), §3.4: many ranks filling their buffers at once overwhelm the network), but
 * the ramp starts from `rampStart` batches whatever a sample weighs. Two batches of 110 kB
 * photographs at batch 32 send ~7 MB; two of 1 kB Fashion-MNIST images send 256 kB, and on a 150 ms
 * link climbing from there to the thousands of requests the link holds costs the first epoch
 * several round trips. So once answers show a far link (WIDE_MS or more) with no queue and what a
 * sample weighs, the window widens at once to FIRST_WINDOW_BYTES' worth of samples: the same burst
 * in bytes as the photographs' start, never fewer batches than `rampStart`, never beyond
 * `maxPrefetch` (nor maxPrefetchBytes, which bounds every window). Nearer links keep the ramp,
 * which fills them in a few of their short round trips. The evidence is the second round trip's
 * answers (DepthPolicy.farAtLeast): a cold start held a near link's first answers 12-60 ms in tests
 * and at RTT 0, and would have widened it. A stall that still fools it is undone by the first
 * answer faster than WIDE_MS, before the widened depth would carry into later epochs.
 */
const FIRST_WINDOW_BYTES = 8 * 2 ** 20;
/** The fastest answer (ms) of a link whose first window widens. */
const WIDE_MS = 50;

/** The prefetch window, as a Loader's `window` options give it (the defaults are the Loader's). */
export interface WindowOptions {
  /**
   * Batches of requests kept in flight once ramped up: a fixed number, or "auto" (default):
   * start at 8 and deepen while the consumer starves with the window full and depth pays, up
   * to `maxPrefetch` (src/schedule/depth.ts), so that a high-latency link needs no tuning.
   */
  prefetch?: number | "auto";
  /** Deepest window "auto" may reach, in batches (default 64). */
  maxPrefetch?: number;
  /**
   * Bound on the bytes the samples outstanding hold (fetched bytes, and pixels when `decode`
   * decodes them), at their mean size so far: the window holds at most this many bytes' worth of
   * samples, and never less than one batch; until the first sample answers (no size known yet),
   * one batch, whatever `rampStart` says (default: no bound but the window's).
   */
  maxPrefetchBytes?: number;
  /**
   * Batches requested at the first epoch's start before the ramp (default 2). On a far link with
   * no queue the window widens to 8 MiB of samples once their size is known, if that is more
   * (NOTE [ First window in bytes ]).
   */
  rampStart?: number;
  /** "ready" (default): batches from whatever arrived; "strict": plan order. */
  order?: "ready" | "strict";
  /**
   * Read the next epoch's first samples while the current epoch's last ones are in flight, so
   * the pipe does not empty at the epoch boundary (and refills while the caller evaluates).
   * They share the window: never more outstanding than one window in all. Used only if
   * `epoch(e + 1)` is called next without `skip`; otherwise dropped (at most one window of
   * reads wasted). Default "auto": once two epochs have been read in sequence; `true` also for
   * the first epoch (right for a training loop); `epoch(e, { readAhead })` overrides it.
   */
  readAhead?: boolean | "auto";
}

/** The scheduler's options: the run's, and the window's with their defaults applied (`order` is RunOptions' `strict`). */
export interface ScheduleOptions<S extends Fetched, T>
  extends RunOptions<S, T>, Required<Pick<WindowOptions, "prefetch" | "maxPrefetch" | "rampStart" | "readAhead">>, Pick<WindowOptions, "maxPrefetchBytes"> {}

/** What the scheduler needs from the read path. */
export interface ScheduleSource<S extends Fetched> {
  /** The source, opened on first use; its drain is reported to `drained()`. */
  source(): Promise<Source<S>>;
  /** The consumer waits on what is in flight (true: at an epoch's end, or mid-epoch, `stall`), or no longer / the epoch ended (false). */
  urge(on: boolean, stall?: boolean): void;
  /** The consumer waited `waitMs` for the batch just handed over (the decode pool sizes itself by it). */
  demand(waitMs: number): void;
  /** Once the source is open: its packet reads, where read workers fill packets (NOTE [ Packets ]). */
  packets?(): PacketReader | undefined;
}

export class EpochScheduler<S extends Fetched, T> implements RunHost<S, T> {
  readonly options: ScheduleOptions<S, T>;
  readonly stats: StatsRecorder;
  readonly #read: ScheduleSource<S>;
  readonly #plan: (epoch: number) => RunPlan;
  /** Samples answered and the bytes they held: the mean size maxPrefetchBytes divides by. */
  #sized = 0;
  #sizedBytes = 0;
  readonly #depth: DepthPolicy;
  #active?: EpochRun<S, T>;
  /** The window widened to its bytes (NOTE [ First window in bytes ]): once a loader. */
  #widened?: Window;
  /** The next epoch, read ahead near the active one's end (option readAhead). */
  #ahead?: EpochRun<S, T>;
  #readAhead = false;
  #previous = Number.NaN;
  #closed = false;

  constructor(options: ScheduleOptions<S, T>, read: ScheduleSource<S>, plan: (epoch: number) => RunPlan, stats: StatsRecorder) {
    this.options = options;
    this.#read = read;
    this.#plan = plan;
    this.stats = stats;
    this.#depth = new DepthPolicy(options.batchSize, options.prefetch === "auto" ? undefined : options.prefetch);
  }

  /** Batches of `epoch`, without the ids in `skip`; `readAhead` overrides the option for this epoch. */
  epoch(epoch: number, skip: Set<string>, readAhead?: boolean): EpochRun<S, T> {
    if (this.#active && !this.#active.finished) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot start epoch ${epoch} while epoch ${this.#active.epoch} is still being read: finish or break out of it first`);
    }
    const ahead = this.#ahead;
    this.#ahead = undefined;
    let run: EpochRun<S, T>;
    if (ahead && ahead.epoch === epoch && skip.size === 0) {
      run = ahead;
      this.stats.readAhead += ahead.requestedSoFar;
    } else {
      if (ahead) this.stats.readAheadDropped += ahead.requestedSoFar, ahead.stop();
      // A resumed epoch's plan leaves out what was handed over: its positions are its own.
      run = new EpochRun<S, T>(this, epoch, skip.size ? { ids: this.#plan(epoch).ids.filter((id) => !skip.has(id)) } : this.#plan(epoch));
    }
    const o = this.options;
    const auto = o.prefetch === "auto";
    const prefetch = this.#depth.depth();
    // The ramp guards the first start of a link; later epochs start at the depth the loader
    // has learned, which is the steady state, not a burst above it.
    const start = this.#depth.rampedUp() ? prefetch : o.rampStart;
    run.begin(new Window(o.batchSize, prefetch, start, auto ? Math.max(prefetch, o.maxPrefetch) : prefetch, () => this.#depth.unqueued()));
    const mode = readAhead ?? o.readAhead;
    this.#readAhead = mode === true || (mode === "auto" && this.#previous === epoch - 1);
    this.#previous = epoch;
    this.#active = run;
    this.stats.epochs++;
    this.#depth.epochStarted();
    return run;
  }

  /** The source can take requests again. */
  drained(): void {
    this.#active?.drained();
    this.#ahead?.drained();
  }

  /** The window's depth now, in batches. */
  prefetch(): number {
    return this.#active?.prefetch() ?? 0;
  }

  /** Stops both runs; the active one's consumer gets `error`. */
  close(error: Error): void {
    this.#closed = true;
    this.#active?.stop(error);
    this.#ahead?.stop();
  }

  // --- RunHost -------------------------------------------------------------------------------

  /**
   * A source that plans (a cache: src/source/cache/) hears a run's order and the next epoch's
   * before the run's first request, so that it knows which sample it needs next.
   */
  opened(run: EpochRun<S, T>, source: Source<S>): void {
    if (!source.plan) return;
    source.plan(run.epoch, run.ids);
    source.plan(run.epoch + 1, this.#plan(run.epoch + 1).ids);
  }

  source(): Promise<Source<S>> {
    return this.#read.source();
  }

  handedOver(batch: Batch<T>, gapMs: number, waitMs: number, conns: Map<string, ConnCount>): void {
    this.stats.handedOver(batch.ids.length, batch.bytes, gapMs, waitMs, conns);
    this.#read.demand(waitMs);
    this.#depth.handedOver(runtime.now(), batch.ids.length);
    this.outstanding();
  }

  answered(ms: number, bytes: number, now: number): void {
    this.#sizedBytes += bytes;
    this.#sized++;
    this.#depth.answered(ms, now);
    this.#sizeWindow();
  }

  answeredMany(ms: Float32Array, n: number, bytes: number, now: number): void {
    this.#sizedBytes += bytes;
    this.#sized += n;
    for (let i = 0; i < n; i++) this.#depth.answered(ms[i], now);
    this.#sizeWindow();
  }

  packets(): PacketReader | undefined {
    return this.#read.packets?.();
  }

  /** NOTE [ First window in bytes ]. */
  #sizeWindow(): void {
    const w = this.#active?.window;
    if (!w) return;
    if (!this.#widened && this.#depth.farAtLeast(WIDE_MS)) {
      this.#widened = w;
      const samples = FIRST_WINDOW_BYTES / Math.max(1, this.#sizedBytes / this.#sized);
      w.widen(Math.ceil(samples / this.options.batchSize));
      this.#active?.pump();
    } else if (this.#widened === w && this.#depth.fastestMs() < WIDE_MS) w.unwiden();
  }

  starved(window: Window): void {
    this.#depth.starved(window, this.stats.batches);
  }

  urge(on: boolean, stall?: boolean): void {
    this.#read.urge(on, stall);
  }

  duplicate(): void {
    this.stats.duplicates++;
  }

  skipped(epoch: number, id: string, reason: string): void {
    this.stats.skipped(epoch, id, reason);
  }

  /** Records the samples outstanding over both runs (the memory bound). */
  outstanding(): void {
    const active = this.#active;
    this.stats.outstanding((active && !active.finished ? active.outstanding : 0) + (this.#ahead?.outstanding ?? 0));
  }

  /**
   * Samples `run` may still request. One window bounds both runs together: the active
   * epoch's, which the next epoch's read-ahead fills only once the active one has asked for its
   * whole plan (and keeps, while the caller is between epochs).
   */
  room(run: EpochRun<S, T>): number {
    const active = this.#active, ahead = this.#ahead;
    if (!active) return 0;
    const used = (active.finished ? 0 : active.outstanding) + (ahead?.outstanding ?? 0);
    const limit = Math.min(active.windowSamples(), this.#byteLimit());
    if (run === active && !active.finished) return limit - used;
    if (run === ahead && (active.finished || active.allRequested)) return limit - used;
    return 0;
  }

  /**
   * Samples that fit in maxPrefetchBytes at the mean size answered so far, never under one batch
   * (the consumer must be able to make progress). Before the first answer no size is known:
   * one batch, so that a window set to start wide (rampStart) cannot send a burst the bound
   * would not allow.
   */
  #byteLimit(): number {
    const max = this.options.maxPrefetchBytes;
    if (max === undefined) return Infinity;
    if (this.#sized === 0) return this.options.batchSize;
    return Math.max(this.options.batchSize, Math.floor(max / Math.max(1, this.#sizedBytes / this.#sized)));
  }

  tail(source: Source<S>): void {
    const active = this.#active;
    if (!active || this.#closed || !this.#readAhead || active.stopped) return;
    if (!this.#ahead) {
      this.#ahead = new EpochRun<S, T>(this, active.epoch + 1, this.#plan(active.epoch + 1));
      this.opened(this.#ahead, source);
      this.#ahead.prime(source);
    } else this.#ahead.pump();
  }

  ended(depth?: number): void {
    this.#read.urge(false);
    if (depth !== undefined) this.#depth.learned(depth); // the next epoch starts as deep as this one ended
  }
}
