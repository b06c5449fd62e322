/**
 * A loader's figures: what the epoch runs record as batches are handed over, and the summary
 * `Loader.stats()` returns. Counts only; the read path (retries, hedges) reports its own
 * counters, which the summary takes as they are.
 */
import type { PoolStats } from "../decode/pool.ts";
import type { CacheStats } from "../source/cache/cache_source.ts";

/** A sample given up on (`onError: "skip"`): its id and the error's message. */
export interface SkippedSample {
  /** The sample's id. */
  id: string;
  /** The error's message. */
  reason: string;
}
/** Skipped samples kept per epoch with their reason: enough to find what is wrong, bounded whatever fails. */
export const SKIPPED_KEPT = 1000;

/** A loader's figures over all its epochs (`Loader.stats()`): samples, bytes and rates, batch and wait times, errors, retries, hedges, prefetch depth, per-connection counts. */
export interface LoaderStats {
  /** Epochs started. */
  epochs: number;
  /** Batches handed over. */
  batches: number;
  /** Samples handed over. */
  samples: number;
  /** Bytes of the samples handed over. */
  bytes: number;
  /** Seconds the batches took to come: the time before each batch handed over, summed over epochs. */
  seconds: number;
  /** Samples handed over per second of `seconds`. */
  samplesPerSec: number;
  /** Megabytes (10^6 bytes) handed over per second of `seconds`. */
  mbPerSec: number;
  /** Time between consecutive batches handed over. */
  batchMs: { p50: number; p99: number; max: number };
  /** Time the consumer spent waiting inside the iterator. */
  waitSeconds: number;
  /** The consumer's wait for each batch inside the iterator: batchMs without its own work between batches. */
  waitMs: { p50: number; p99: number; max: number };
  /** Samples given up on (under `onError: "skip"`). */
  errors: number;
  /** Requests asked again after an error. */
  retries: number;
  /** Requests asked for a second time because they were slow (option `hedge`). */
  hedged: number;
  /** Hedged requests whose second answer came first. */
  hedgeWins: number;
  /** Answers that came for a sample already handed over (a retry's or hedge's second answer), dropped. */
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
  /** Samples per connection (or host: per node of a Cassandra cluster), likewise. */
  samplesPerConnection: Record<string, number>;
  /**
   * Where samples are decoded or transformed in a decode pool (src/decode/pool.ts): its workers
   * now and over time, the slow lane's counts and deadline, job times, the scaling periods.
   */
  prepare?: PoolStats;
  /** The local cache's hits, misses, evictions, torn entries and bytes, with the `cache` option (src/source/cache/). */
  cache?: CacheStats;
  /**
   * Bytes the store's source received so far, over all epochs, read workers' included, where it
   * counts them (Source.received): a WebDataset source's shard bytes, resumes included. With
   * `rankShards` the ranks' sums of an epoch come to the shards' size.
   */
  received?: number;
  /**
   * With `decode: "gpu"`: JPEGs the GPU decode left to the CPU, decoded to pixels as without it,
   * because `readScan` refused them (progressive, arithmetic coding, CMYK, several scans, …:
   * NOTE [ What the GPU decodes ], src/decode/jpeg_scan.ts), read workers' included. Each
   * decode counts: a sample read in two epochs, or asked for again, counts each time. PNGs and
   * files the options keep on the CPU (a scale, a turn, grey output) are not counted.
   */
  gpuRefused?: number;
}

/** What one connection (or node) delivered since the last hand-over. */
export interface ConnCount {
  bytes: number;
  samples: number;
}

/** What the read path counts itself (src/read/read_path.ts). */
export interface ReadCounters {
  retries: number;
  hedged: number;
  hedgeWins: number;
  reasked: number;
  reaskWins: number;
  /** The decode pool's figures, when samples are decoded or transformed in one. */
  prepare?: PoolStats;
  /** The local cache's figures, with the `cache` option. */
  cache?: CacheStats;
  /** Bytes the store's source received, where it counts them. */
  received?: number;
  /** JPEGs the GPU decode left to the CPU (LoaderStats.gpuRefused), where it decodes so. */
  gpuRefused?: number;
}

/** Accumulates a loader's figures over all its epochs. */
export class StatsRecorder {
  epochs = 0;
  batches = 0;
  samples = 0;
  bytes = 0;
  errors = 0;
  duplicates = 0;
  maxOutstanding = 0;
  readAhead = 0;
  readAheadDropped = 0;
  #busyMs = 0;
  #waitMs = 0;
  readonly #batchMs: number[] = [];
  readonly #batchWaitMs: number[] = [];
  readonly #perConnection: Record<string, number> = {};
  readonly #samplesPerConnection: Record<string, number> = {};
  readonly #skippedByEpoch = new Map<number, number>();
  readonly #skippedIds = new Map<number, SkippedSample[]>();

  /** A batch of `samples` samples and `bytes` bytes was handed over `gapMs` after the last; the consumer waited `waitMs` of it. */
  handedOver(samples: number, bytes: number, gapMs: number, waitMs: number, conns: Map<string, ConnCount>): void {
    this.batches++;
    this.samples += samples;
    this.bytes += bytes;
    this.#batchMs.push(gapMs);
    this.#batchWaitMs.push(waitMs);
    this.#busyMs += gapMs;
    this.#waitMs += waitMs;
    for (const [c, n] of conns) {
      this.#perConnection[c] = (this.#perConnection[c] ?? 0) + n.bytes;
      this.#samplesPerConnection[c] = (this.#samplesPerConnection[c] ?? 0) + n.samples;
    }
    conns.clear();
  }

  outstanding(n: number): void {
    if (n > this.maxOutstanding) this.maxOutstanding = n;
  }

  /** A sample of `epoch` given up on: an error, and one of skipped(epoch); its id and why are kept (the first SKIPPED_KEPT per epoch). */
  skipped(epoch: number, id: string, reason: string): void {
    this.errors++;
    this.#skippedByEpoch.set(epoch, this.skippedIn(epoch) + 1);
    let kept = this.#skippedIds.get(epoch);
    if (!kept) this.#skippedIds.set(epoch, (kept = []));
    if (kept.length < SKIPPED_KEPT) kept.push({ id, reason });
  }

  /** The samples of `epoch` given up on, with why (at most SKIPPED_KEPT; skippedIn counts them all). */
  skippedSamples(epoch: number): SkippedSample[] {
    return [...(this.#skippedIds.get(epoch) ?? [])];
  }

  skippedIn(epoch: number): number {
    return this.#skippedByEpoch.get(epoch) ?? 0;
  }

  summary(read: ReadCounters, prefetch: number): LoaderStats {
    const seconds = this.#busyMs / 1000;
    return {
      epochs: this.epochs, batches: this.batches, samples: this.samples, bytes: this.bytes, seconds,
      samplesPerSec: seconds > 0 ? this.samples / seconds : 0, mbPerSec: seconds > 0 ? this.bytes / 1e6 / seconds : 0,
      batchMs: percentiles(this.#batchMs), waitMs: percentiles(this.#batchWaitMs),
      waitSeconds: this.#waitMs / 1000, errors: this.errors, retries: read.retries,
      hedged: read.hedged, hedgeWins: read.hedgeWins, duplicates: this.duplicates,
      maxOutstanding: this.maxOutstanding, readAhead: this.readAhead, readAheadDropped: this.readAheadDropped,
      reasked: read.reasked, reaskWins: read.reaskWins,
      prefetch, perConnection: { ...this.#perConnection }, samplesPerConnection: { ...this.#samplesPerConnection },
      ...(read.prepare ? { prepare: read.prepare } : {}),
      ...(read.cache ? { cache: read.cache } : {}),
      ...(read.received !== undefined ? { received: read.received } : {}),
      ...(read.gpuRefused !== undefined ? { gpuRefused: read.gpuRefused } : {}),
    };
  }
}

/** p50, p99 and max of `values` (nearest rank below; zeros when empty): the rule of LoaderStats.batchMs. */
export function percentiles(values: readonly number[]): { p50: number; p99: number; max: number } {
  const [p50, p99, max] = quantiles(values, [0.5, 0.99, 1]);
  return { p50, p99, max };
}

/** The quantiles `qs` (each in [0, 1]) of `values` by the same rule: nearest rank below, 1 the max, zeros when empty. */
export function quantiles(values: readonly number[], qs: readonly number[]): number[] {
  const sorted = values.slice().sort((a, b) => a - b);
  return qs.map((q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : 0));
}
