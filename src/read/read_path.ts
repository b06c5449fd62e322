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
import type { DecodeOptions } from "../decode/decoder.ts";
import type { PlannedDecode } from "../decode/crop.ts";
import type { ReadCounters } from "../observe/stats.ts";
import type { Source } from "../source/source.ts";
import type { Addressed } from "../source/kinds.ts";
import type { TransformModule } from "../decode/transform.ts";
import { DecodeSource, type PreparePool } from "./decode_source.ts";
import { type HedgeOptions, HedgeSource } from "./hedge.ts";
import { cacheOf, openRead } from "./open.ts";
import { RetrySource } from "./retry.ts";
import type { CacheOptions, CacheSource } from "../source/cache/cache_source.ts";
import type { ReadSource } from "./sample.ts";
import type { PacketReader } from "./packet.ts";
import { WorkerSource } from "./worker_source.ts";

export interface ReadPathOptions {
  /** An address parsed once (src/source/kinds.ts `locate`), an open Store or a Source. */
  store: string | Addressed | Store | Source;
  dataset?: string;
  workers?: number;
  scaleWorkers?: { min: number; max: number };
  decode?: boolean | DecodeOptions | PlannedDecode;
  decodeWorkers?: number | "auto";
  transform?: TransformModule;
  slowLane?: boolean;
  seed?: number;
  maxInFlight?: number;
  balance?: "rate" | "driver";
  hedge?: boolean | HedgeOptions;
  reaskTail?: boolean;
  retries?: number;
  cache?: CacheOptions;
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

  /** `onDrain`: the source can take requests again. */
  constructor(options: ReadPathOptions, onDrain: () => void) {
    this.#o = options;
    this.#onDrain = onDrain;
  }

  /** The composed source, opened on first use; its close() closes what it opened. */
  source(): Promise<ReadSource> {
    this.#source ??= (async () => {
      const o = this.#o;
      let src: ReadSource = await openRead(o.store, {
        dataset: o.dataset, workers: o.workers, scaleWorkers: o.scaleWorkers, decode: o.decode, decodeWorkers: o.decodeWorkers, maxInFlight: o.maxInFlight,
        balance: o.balance, transform: o.transform, slowLane: o.slowLane, seed: o.seed, cache: o.cache,
        reads: { retries: o.retries, ...(o.hedge ? { hedge: o.hedge === true ? {} : o.hedge } : {}), reaskTail: o.reaskTail },
      });
      this.#shards = src.shards?.();
      if (src instanceof DecodeSource) this.#pool = src.pool;
      if (src instanceof WorkerSource) this.#workers = src;
      this.#cache = cacheOf(src);
      if (o.hedge || o.reaskTail) src = this.#hedge = new HedgeSource(src, o.hedge ? (o.hedge === true ? {} : o.hedge) : { budget: 0 });
      const retry = this.#retry = new RetrySource(src, { retries: o.retries ?? 3 });
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
    if (!this.#o.reaskTail || (on && stall && (this.#o.decode || this.#o.transform))) return;
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

  /** The consumer waited `waitMs` for a batch: the decode pool's demand signal (NOTE [ Worker scaling ]). */
  demand(waitMs: number): void {
    this.#pool?.demand(waitMs);
    this.#workers?.demand(waitMs);
  }

  counters(): ReadCounters {
    const h = this.#hedge;
    // Packet reads retry and hedge in the workers (NOTE [ Packets ]).
    const w = this.#workers?.counts() ?? { retries: 0, hedged: 0, hedgeWins: 0, reasked: 0, reaskWins: 0 };
    return {
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
