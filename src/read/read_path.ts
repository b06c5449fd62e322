/**
 * What the Loader reads from: a source opened by address (or given), with decoding and read
 * workers (open.ts), hedging and the epoch tail's re-asks (hedge.ts), inside the retries
 * (retry.ts). Opened once, on first use.
 *
 *   open(store, { mode: "read", workers, decode }) ─► HedgeSource ─► RetrySource ─► scheduler
 *
 * Hedge inside the retries: a slow attempt is hedged, a failed one retried. The epoch tail's
 * re-asks are the same mechanism's other trigger (with no quantile hedging: budget 0).
 */
import type { Store } from "../dataset/store.ts";
import type { ReadCounters } from "../observe/stats.ts";
import type { Source } from "../source/source.ts";
import type { Addressed, SourceSettings } from "../source/kinds.ts";
import { DecodeSource, type PreparePool } from "./decode_source.ts";
import { type HedgeOptions, HedgeSource } from "./hedge.ts";
import { cacheOf, type CpuOptions, gpuRefusedOf, openRead, type OpenReadOptions, receivedOf } from "./open.ts";
import { readDecodeOptions } from "../decode/decoder.ts";
import { RetrySource } from "./retry.ts";
import type { CacheSource } from "../source/cache/cache_source.ts";
import type { ReadSource, Sample } from "./sample.ts";
import type { PacketReader } from "./packet.ts";
import { WorkerSource } from "./worker_source.ts";

/** What a Loader does about samples that fail or lag (its `faults` options). */
export interface FaultOptions {
  /** Retries of a failed fetch (default 3), with backoff. */
  retries?: number;
  /** After the retries: "throw" (default) ends the epoch with an error naming the id; "skip" counts it and goes on. */
  onError?: "throw" | "skip";
  /**
   * Hedged requests (default off): a sample slower than the recent p95 latency × 2 is asked for
   * again, the first answer wins, at most 5 % of requests are hedged (src/read/hedge.ts).
   */
  hedge?: boolean | HedgeOptions;
  /**
   * At an epoch's end, once everything is requested and the consumer waits, ask once more for
   * a sample pending far longer than usual (NOTE [ Epoch tail ]); the first answer wins. Without
   * `decode` and `transform`, also mid-epoch, whenever the consumer waits with the window full: a
   * connection that turned slow holds no window hostage (default false; train.ts, `cassette
   * read` and the read bench turn it on).
   */
  reaskTail?: boolean;
}

/** The read path's options: a Loader's, resolved (src/loader_options.ts) — the read workers counted, a transform module only. */
export interface ReadPathOptions {
  /** An address parsed once (src/source/kinds.ts `locate`), an open Store or a Source. */
  store: string | Addressed | Store | Source;
  dataset?: string;
  /** Seeds a transform module's `ctx.random` (the plan's seed). */
  seed?: number;
  cpu: Omit<CpuOptions, "workers"> & Pick<OpenReadOptions, "scaleWorkers"> & { workers: number };
  faults: Omit<FaultOptions, "onError">;
  source: SourceSettings;
}

export class ReadPath {
  readonly #o: ReadPathOptions;
  readonly #onDrain: () => void;
  #source?: Promise<ReadSource>;
  #retry?: RetrySource;
  #hedge?: HedgeSource;
  #pool?: PreparePool;
  #workers?: WorkerSource;
  #shards?: string[][];
  #cache?: CacheSource;
  /** The source openRead gave (before hedging and retries): where the bytes received are counted. */
  #opened?: ReadSource;

  /** `onDrain`: the source can take requests again. */
  constructor(options: ReadPathOptions, onDrain: () => void) {
    this.#o = options;
    this.#onDrain = onDrain;
  }

  /** The composed source, opened on first use; its close() closes what it opened. */
  source(): Promise<ReadSource> {
    this.#source ??= (async () => {
      const { store, dataset, seed, cpu, faults: f, source } = this.#o;
      let src: ReadSource = await openRead(store, {
        dataset, ...cpu, ...source, seed,
        reads: { retries: f.retries, ...(f.hedge ? { hedge: f.hedge === true ? {} : f.hedge } : {}), reaskTail: f.reaskTail },
      });
      this.#shards = src.shards?.();
      if (src instanceof DecodeSource) this.#pool = src.pool;
      if (src instanceof WorkerSource) this.#workers = src;
      this.#cache = cacheOf(src);
      this.#opened = src;
      if (f.hedge || f.reaskTail) src = this.#hedge = new HedgeSource(src, f.hedge ? (f.hedge === true ? {} : f.hedge) : { budget: 0 });
      const retry = this.#retry = new RetrySource(src, { retries: f.retries ?? 3 });
      retry.onDrain(this.#onDrain);
      return retry;
    })();
    return this.#source;
  }

  /** The opened source's ids by shard (Source's `shards()`), once `source()` has resolved. */
  shards(): string[][] | undefined {
    return this.#shards;
  }

  /**
   * The consumer waits on what is in flight (true), or no longer (false): NOTE [ Epoch tail ] in
   * src/schedule/epoch_run.ts. Mid-epoch (`stall`) only where a re-ask repeats a fetch alone:
   * with decoding or a transform under the hedge, it would run that work twice.
   */
  urge(on: boolean, stall = false): void {
    const { faults, cpu } = this.#o;
    if (!faults.reaskTail || (on && stall && (cpu.decode || cpu.transform))) return;
    this.#hedge?.urge(on);
    this.#workers?.urge(on);
  }

  /**
   * The read workers' packet reads (NOTE [ Packets ], src/read/packet.ts), once the source is
   * open: they retry and hedge inside the workers, with this path's options.
   */
  packets(): PacketReader | undefined {
    return this.#workers;
  }

  /**
   * A released batch's sample, whose decoded image the decode pool made: its buffer back to the
   * pool for a later sample's pixels (NOTE [ Image buffers ], src/decode/pool.ts).
   */
  recycle(s: Sample): void {
    if (s.image) this.#pool?.recycle?.(s.image.data.buffer);
  }

  /** The consumer waited `waitMs` for a batch: the decode pool's demand signal (NOTE [ Worker scaling ]). */
  demand(waitMs: number): void {
    this.#pool?.demand(waitMs);
    this.#workers?.demand(waitMs);
  }

  counters(): ReadCounters {
    const h = this.#hedge;
    // Packet reads retry and hedge in the workers (NOTE [ Packets ]).
    const w = this.#workers?.counts() ?? { retries: 0, hedged: 0, hedgeWins: 0, reasked: 0, reaskWins: 0, received: 0, gpuRefused: 0 };
    // Bytes received from the store: the workers' sum, or this thread's source's (Source.received).
    const received = this.#workers ? (this.#workers.receives ? w.received : undefined) : this.#opened && receivedOf(this.#opened);
    // The GPU decode's refusals: the workers' sum, or this thread's decoding's (and its pool's);
    // said with `decode: "gpu"`, or where read workers given as the store counted some.
    const refused = this.#workers ? w.gpuRefused : (this.#opened && gpuRefusedOf(this.#opened)) ?? 0;
    const gpuRefused = refused || readDecodeOptions(this.#o.cpu.decode)?.gpu ? refused : undefined;
    return {
      ...(received !== undefined ? { received } : {}),
      ...(gpuRefused !== undefined ? { gpuRefused } : {}),
      retries: (this.#retry?.retries ?? 0) + w.retries, hedged: (h?.hedged ?? 0) + w.hedged, hedgeWins: (h?.hedgeWins ?? 0) + w.hedgeWins,
      reasked: (h?.reasked ?? 0) + w.reasked, reaskWins: (h?.reaskWins ?? 0) + w.reaskWins,
      ...(this.#cache ? { cache: this.#cache.stats() } : {}),
      ...(this.#pool ? { prepare: this.#pool.stats() } : this.#workers?.laneStats() ? { prepare: this.#workers.laneStats() } : {}),
    };
  }

  /** Closes what was opened (nothing, if it never was). */
  async close(): Promise<void> {
    if (this.#source) await (await this.#source.catch(() => undefined))?.close();
  }
}
