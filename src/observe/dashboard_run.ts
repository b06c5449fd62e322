/**
 * A run's figures as the dashboard shows them, with nothing of a server nor a page: the frames a
 * caller gives (`DashboardFrame`), what the dashboard derives from them (the "now" rates, the
 * batch-time histogram: `ServedFrame`) and the bounded history of the curves (`HistoryPoint`).
 * The served dashboard (dashboard.ts) and the component a page mounts (dashboard_mount.ts) both
 * keep a `DashboardRun`, so that they derive the same figures from the same frames.
 *
 * @example
 * ```ts
 * import { DashboardRun } from "./dashboard_run.ts";
 * const run = new DashboardRun();
 * run.update({ seconds: 1, step: 10, samples: 1280, imagesPerSec: 1280, waitShare: 0.1, batchTimesMs: [4, 7] });
 * console.log(run.latest?.batchHistogram.count, run.points.length); // 2 1
 * ```
 */
import type { LoaderStats } from "./stats.ts";

/** What a run knows at one moment. Counts are totals since the run began, not increments. */
export interface DashboardFrame {
  /** Seconds since the run began: the curves' x axis. */
  seconds: number;
  /** Wall-clock time of the frame in ms since 1970 (default: when update() got it). */
  time?: number;
  /** The epoch being read. */
  epoch?: number;
  /** Batches handed over (training steps) so far. */
  step: number;
  /** Samples handed over so far. */
  samples: number;
  /** Bytes handed over so far. */
  bytes?: number;
  /** Samples per second over the run (LoaderStats.samplesPerSec). */
  imagesPerSec: number;
  /** Samples per second over about the last second (default: derived from earlier frames). */
  imagesPerSecNow?: number;
  /** Megabytes (10^6 bytes) per second over the run (LoaderStats.mbPerSec). */
  mbPerSec?: number;
  /** Share of the batch time the consumer spent waiting for the loader, 0…1. */
  waitShare: number;
  /** Losses and accuracies (0…1) of a training run; a read has none. */
  loss?: { train?: number; test?: number };
  /** Train and test accuracies, 0…1. */
  accuracy?: { train?: number; test?: number };
  /** Batch-time percentiles over the run (LoaderStats.batchMs). */
  batchMs?: { p50: number; p99: number; max: number };
  /** Batch times (ms) since the previous frame: added to the dashboard's histogram, not kept. */
  batchTimesMs?: number[];
  /** Bytes and samples per connection (or node) so far. */
  connections?: Record<string, { bytes: number; samples: number }>;
  /** The prefetch window's depth in batches. */
  prefetch?: number;
  /** Most samples outstanding at once (requested, not yet handed over). */
  maxOutstanding?: number;
  /** Requests asked again after an error (LoaderStats.retries). */
  retries?: number;
  /** Requests asked a second time because they were slow (LoaderStats.hedged). */
  hedged?: number;
  /** Hedged requests whose second answer came first (LoaderStats.hedgeWins). */
  hedgeWins?: number;
  /** Samples re-asked at an epoch's tail (LoaderStats.reasked). */
  reasked?: number;
  /** Samples given up on (LoaderStats.errors: skipped under onError "skip"). */
  skipped?: number;
  /** Answers dropped for a sample already handed over (LoaderStats.duplicates). */
  duplicates?: number;
  /** Workers decoding or reading now. */
  workers?: number;
  /** Decode jobs that ran past the deadline (their worker went to the slow lane). */
  slowLane?: number;
  /** Jobs taken back from a slow worker and sent to another. */
  stolen?: number;
  /** The run has ended: the page says so and keeps the last figures. */
  done?: boolean;
}

/** A frame as served: the caller's, with what the dashboard derives. */
export interface ServedFrame extends Omit<DashboardFrame, "batchTimesMs"> {
  /** Wall-clock time of the frame in ms since 1970. */
  time: number;
  /** Samples per second over about the last second. */
  imagesPerSecNow: number;
  /** Bytes per second per connection over about the last second. */
  connectionsBytesPerSec: Record<string, number>;
  /** Every batch time given so far, in BATCH_BUCKETS_MS buckets (the last: above them all). */
  batchHistogram: { boundsMs: readonly number[]; counts: number[]; sumMs: number; count: number };
}

/** One point of the curves. */
export interface HistoryPoint {
  /** Seconds since the run began. */
  seconds: number;
  /** Batches handed over (training steps) so far. */
  step: number;
  /** Samples handed over so far. */
  samples: number;
  /** Samples per second over the run. */
  imagesPerSec: number;
  /** Share of the batch time the consumer spent waiting for the loader, 0…1. */
  waitShare: number;
  /** The prefetch window's depth in batches. */
  prefetch?: number;
  /** Training loss. */
  lossTrain?: number;
  /** Test loss. */
  lossTest?: number;
  /** Training accuracy, 0…1. */
  accuracyTrain?: number;
  /** Test accuracy, 0…1. */
  accuracyTest?: number;
}

/** Upper bounds (ms) of the batch-time histogram's buckets: 1-2-5 steps from 1 ms to 10 s. */
export const BATCH_BUCKETS_MS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/**
 * NOTE [ Dashboard history ]
 * A page opened late draws the curves from the start, so the server keeps points, at most
 * HISTORY_CAP of them. When full, every other point is dropped and from then on only every
 * `stride`-th frame becomes a point (the stride doubles at each halving): the whole run stays
 * drawn at an even density, memory stays flat, and the latest frame is always kept apart.
 */
export const HISTORY_CAP = 2000;

/** How far back the "now" rates look (ms of run time). */
const RATE_WINDOW_S = 1;

/**
 * A frame from a loader's figures (`loader.stats()`) and what the caller adds (epoch, losses,
 * batch times since the last frame, seconds of its own clock…), which wins over the stats:
 * `dash.update(frameFromStats(loader.stats(), { epoch, loss: { train: loss } }))`.
 */
export function frameFromStats(stats: LoaderStats, extra: Partial<DashboardFrame> = {}): DashboardFrame {
  const connections: Record<string, { bytes: number; samples: number }> = {};
  for (const [c, bytes] of Object.entries(stats.perConnection)) connections[c] = { bytes, samples: stats.samplesPerConnection[c] ?? 0 };
  return {
    seconds: stats.seconds,
    epoch: Math.max(0, stats.epochs - 1),
    step: stats.batches,
    samples: stats.samples,
    bytes: stats.bytes,
    imagesPerSec: stats.samplesPerSec,
    mbPerSec: stats.mbPerSec,
    waitShare: stats.seconds > 0 ? Math.min(1, stats.waitSeconds / stats.seconds) : 0,
    batchMs: stats.batchMs,
    connections,
    prefetch: stats.prefetch,
    maxOutstanding: stats.maxOutstanding,
    retries: stats.retries,
    hedged: stats.hedged,
    hedgeWins: stats.hedgeWins,
    reasked: stats.reasked,
    skipped: stats.errors,
    duplicates: stats.duplicates,
    ...(stats.prepare && { workers: stats.prepare.workers, slowLane: stats.prepare.slowLane, stolen: stats.prepare.stolen }),
    ...extra,
  };
}

/**
 * The figures of one run as frames come: the latest frame as served, the curves' history
 * (NOTE [ Dashboard history ]), the batch-time histogram and the "now" rates. It holds no server
 * nor page: dashboard.ts serves what it derives, dashboard_mount.ts draws it in a page.
 */
export class DashboardRun {
  /** The latest frame as served (undefined before the first update). */
  latest: ServedFrame | undefined;
  /** The curves' points (at most HISTORY_CAP). */
  points: HistoryPoint[] = [];
  readonly #histogram = { counts: new Array<number>(BATCH_BUCKETS_MS.length + 1).fill(0), sumMs: 0, count: 0 };
  /** Recent frames (run seconds, samples, connection bytes) for the "now" rates. */
  #recent: { seconds: number; samples: number; connections: Record<string, number> }[] = [];
  #stride = 1;
  #frames = 0;

  /** Takes a frame: returns it as served, and the point it makes of it (whether or not the history keeps it). */
  update(frame: DashboardFrame): { served: ServedFrame; point: HistoryPoint } {
    for (const ms of frame.batchTimesMs ?? []) this.#observe(ms);
    const { batchTimesMs: _, ...rest } = frame;
    const rates = this.#rates(frame);
    const served: ServedFrame = {
      ...rest,
      time: frame.time ?? Date.now(),
      imagesPerSecNow: frame.imagesPerSecNow ?? rates.imagesPerSec,
      connectionsBytesPerSec: rates.connections,
      batchHistogram: { boundsMs: BATCH_BUCKETS_MS, counts: [...this.#histogram.counts], sumMs: this.#histogram.sumMs, count: this.#histogram.count },
    };
    this.latest = served;
    const point = pointOf(served);
    // NOTE [ Dashboard history ]
    if (this.#frames++ % this.#stride === 0) {
      this.points.push(point);
      if (this.points.length > HISTORY_CAP) {
        this.points = this.points.filter((_, i) => i % 2 === 0);
        this.#stride *= 2;
      }
    }
    return { served, point };
  }

  #observe(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    let i = 0;
    while (i < BATCH_BUCKETS_MS.length && ms > BATCH_BUCKETS_MS[i]) i++;
    this.#histogram.counts[i]++;
    this.#histogram.sumMs += ms;
    this.#histogram.count++;
  }

  /** Rates over about the last RATE_WINDOW_S of run time, against the oldest frame in it. */
  #rates(frame: DashboardFrame): { imagesPerSec: number; connections: Record<string, number> } {
    const bytes: Record<string, number> = {};
    for (const [c, n] of Object.entries(frame.connections ?? {})) bytes[c] = n.bytes;
    // A clock that went back (a new run through the same dashboard) starts the window again.
    const last = this.#recent[this.#recent.length - 1];
    if (last && frame.seconds < last.seconds) this.#recent = [];
    this.#recent.push({ seconds: frame.seconds, samples: frame.samples, connections: bytes });
    while (this.#recent.length > 2 && frame.seconds - this.#recent[1].seconds >= RATE_WINDOW_S) this.#recent.shift();
    const from = this.#recent[0];
    const dt = frame.seconds - from.seconds;
    const connections: Record<string, number> = {};
    if (dt <= 0) {
      // One frame so far: the averages over the run are the best guess.
      for (const [c, b] of Object.entries(bytes)) connections[c] = frame.seconds > 0 ? b / frame.seconds : 0;
      return { imagesPerSec: frame.imagesPerSec, connections };
    }
    for (const [c, b] of Object.entries(bytes)) connections[c] = Math.max(0, (b - (from.connections[c] ?? 0)) / dt);
    return { imagesPerSec: Math.max(0, (frame.samples - from.samples) / dt), connections };
  }
}

function pointOf(f: ServedFrame): HistoryPoint {
  return {
    seconds: f.seconds, step: f.step, samples: f.samples, imagesPerSec: f.imagesPerSecNow, waitShare: f.waitShare,
    prefetch: f.prefetch, lossTrain: f.loss?.train, lossTest: f.loss?.test, accuracyTrain: f.accuracy?.train, accuracyTest: f.accuracy?.test,
  };
}

