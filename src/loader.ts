/**
 * The Loader: the public face of the read path for one split. It checks its options, and
 * wires the stages that do the work:
 *
 *   plan/epoch.ts ─► schedule/epochs.ts (window, ramp, depth, read-ahead, exactly-once ledger)
 *                          │ requests                     ▲ batches
 *                          ▼                              │
 *   read/read_path.ts (open, workers, decode, hedge, retry)   assemble/assembler.ts (ready | strict:
 *                                                               NOTE [ Ready-order assembly ])
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
import { CassetteError } from "./errors.ts";
import { epochOrder, epochPlan, epochSequence, paddedFrom } from "./plan/epoch.ts";
import { checkMix, mixOrder, type MixOptions } from "./plan/mix.ts";
import type { RunPlan } from "./schedule/epoch_run.ts";
import { assertUnique } from "./schedule/ledger.ts";
import { EpochScheduler } from "./schedule/epochs.ts";
import { checkPlan, checkResumeState, HandedOver, type LoaderState, planDigest, type PlanIdentity, resumed, stateBefore, type WholeOrder } from "./schedule/resume.ts";
import type { Batch } from "./assemble/batch.ts";
import type { Source } from "./source/source.ts";
import type { CacheOptions } from "./source/cache/cache_source.ts";
import { type Addressed, locate } from "./source/kinds.ts";
import type { Store } from "./dataset/store.ts";
import { hedgeOptions, type HedgeOptions } from "./read/hedge.ts";
import { checkReadOptions } from "./read/open.ts";

/** The ids by shard a Loader plans by, set once known; `loading` while the read path opens a shard set. */
interface ShardGroups {
  groups?: string[][];
  loading?: Promise<void>;
}
import { ReadPath } from "./read/read_path.ts";
import { readWorkers, workerScale } from "./read/worker_source.ts";
import type { Sample } from "./read/sample.ts";
import { checkDecodeOptions, type DecodeOptions } from "./decode/decoder.ts";
import type { PlannedDecode } from "./decode/crop.ts";
import { type LoaderStats, type SkippedSample, StatsRecorder } from "./observe/stats.ts";
import { isTransformModule, type TransformModule } from "./decode/transform.ts";

export type { LoaderState, LoaderStats, PlanIdentity, SkippedSample };
export { mergeStates } from "./schedule/resume.ts";

/** Everything a `Loader` needs: the store and the split's ids, the batch size, and how to read (order, prefetch, workers, decoding, retries, hedging, resume). */
export interface LoaderOptions<T = Sample> {
  /**
   * A store address (`sqlite:PATH`, `cassandra://…`, `http(s)://HOST/PREFIX`, `file:DIR`,
   * opened with `open(…, { mode: "read" })` and closed by close()), an open Store, or a Source.
   */
  store: string | Store | Source;
  /**
   * The dataset: needed for a Store and for sqlite: and cassandra:// addresses; for http(s)://
   * and file: it is checked against the export's labels.json when given.
   */
  dataset?: string;
  /** The split's ids (e.g. `(await loadSplit("splits.json:train")).split.ids`). */
  ids: readonly string[];
  /** Samples per batch (an epoch's last batch may hold fewer, unless `dropLast`). */
  batchSize: number;
  /** Permute ids each epoch (default true). */
  shuffle?: boolean;
  /** Seed of the epoch's permutation (default 0): the same seed, epoch and ids give the same order. */
  seed?: number;
  /** This process's rank among `worldSize` (default 0): each rank reads its own share of every epoch. */
  rank?: number;
  /** Processes reading the split together (default 1); their shares partition each epoch. */
  worldSize?: number;
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
   * (NOTE [ First window in bytes ], src/schedule/epochs.ts).
   */
  rampStart?: number;
  /** "ready" (default): batches from whatever arrived; "strict": plan order. */
  order?: "ready" | "strict";
  /**
   * Drop samples so every rank has the same whole number of batches (default false: every
   * sample is read each epoch, and the last batch may be short).
   */
  dropLast?: boolean;
  /**
   * Repeat samples so that every rank gets the same number, ⌈ids / worldSize⌉, as PyTorch's
   * DistributedSampler pads (data-parallel ranks then take the same number of steps); each
   * batch's `padded` marks the repeats, so that metrics can leave them out. Default false; not
   * with `dropLast`.
   */
  pad?: boolean;
  /** Retries of a failed fetch (default 3), with backoff. */
  retries?: number;
  /** After the retries: "throw" (default) ends the epoch with an error naming the id; "skip" counts it and goes on. */
  onError?: "throw" | "skip";
  /**
   * Runs on each sample: a function runs here, on the loader's thread, and a sample is ready
   * when its promise resolves (right for work that awaits, or is cheap); `{ module, options }`
   * names a module exporting `transform(sample, options, ctx)` (src/decode/transform.ts) that
   * runs where samples are decoded, off this thread: in the read workers, or in the decode
   * pool, where a slow sample takes the slow lane (right for CPU-bound work: crops, resizes,
   * augmentations). Its answer becomes the sample's `image`.
   */
  transform?: ((s: Sample) => T | Promise<T>) | TransformModule;
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
   * a sample pending far longer than usual (NOTE [ Epoch tail ]); the first answer wins. Without
   * `decode` and `transform`, also mid-epoch, whenever the consumer waits with the window full: a
   * connection that turned slow holds no window hostage (default false; train.ts, `cassette
   * read` and the read bench turn it on).
   */
  reaskTail?: boolean;
  /** Cassandra: "rate" (default) sends each request where it should finish first; "driver" leaves the choice to the driver. */
  balance?: "rate" | "driver";
  /** Cap on requests in flight at the source (default: the source's). */
  maxInFlight?: number;
  /**
   * Read in this many worker threads, each with its own connections to the store, or "auto"
   * (default): max(2, min(8, cores − 2)) for a store address, and on more than 4 cores sized as
   * reading goes between 2 and cores − 1 (NOTE [ Worker scaling ]'s rule: the consumer's waits,
   * the idle cores, the workers' backlog); none for an open Store or Source or a transform
   * (NOTE [ Read workers: how many ], src/read/worker_source.ts); 0: in this thread. The
   * driver's work, and with `decode` the decoding, then leave the thread that iterates the
   * batches, which is the one that feeds the GPU, and the workers hand over batch-sized packets
   * (NOTE [ Packets ], src/read/packet.ts).
   */
  workers?: number | "auto";
  /**
   * Decode each sample where it is read (in its read worker with `workers`, else in this
   * thread as it arrives) and hand it over as `Sample.image` (default false). A file that
   * does not decode is an error naming the sample. `{ plan: pre.options }` (a Preprocessor's
   * options): read workers decode only the box that preprocessor's plan reads of each sample.
   */
  decode?: boolean | DecodeOptions | PlannedDecode;
  /**
   * With `decode` or a transform module and no `workers`: the decode pool that decodes and
   * transforms off this thread (the reading stays here). "auto" (default): sized as it goes,
   * between 1 and the cores, by the consumer's waits, the samples waiting and the idle cores
   * (src/decode/pool.ts, NOTE [ Worker scaling ]); a number: that many, fixed; 0: in this thread.
   */
  decodeWorkers?: number | "auto";
  /**
   * A sample that takes longer than most (a deadline learned as it goes) keeps running in the
   * background while the samples queued behind it go to other workers; it joins a later batch
   * (default true). In the decode pool (NOTE [ Slow lane ] in src/decode/pool.ts) and in the
   * read workers (NOTE [ Read workers: the slow lane ] in src/read/worker_source.ts).
   */
  slowLane?: boolean;
  /**
   * Continue from `loader.state()` of an earlier run with the same ids and plan options: the
   * first `epoch(state.epoch)` reads only the samples not handed over then (whatever order
   * they left in); a state from other ids, seed, rank or batch options is refused by name.
   */
  resume?: LoaderState;
  /** Aborting it stops the epoch being read: its iterator throws a CassetteError. */
  signal?: AbortSignal;
  /**
   * Over a shard set (a `wds:` source: `Source.shards()`) with several ranks, each rank streams
   * its own shards each epoch instead of every shard for its stride: the shards, shuffled by
   * (seed, epoch), are cut into runs balanced within one sample (src/plan/epoch.ts
   * `rankShards`; `pad` and `dropLast` as usual), so the ranks together stream each shard about
   * once. Default false; resumes only on the same number of ranks.
   */
  rankShards?: boolean;
  /**
   * Keep fetched samples in a local SQLite file (`path`) within `bytes` and answer from it
   * first: a far store is then read in full only once. The Loader tells the cache each epoch's
   * order, so it gives up the sample needed furthest away (Belady's policy; `policy: "lru"` for
   * the usual one). Reads in this thread (no read workers); src/source/cache/.
   */
  cache?: CacheOptions;
  /**
   * Mix parts (datasets, splits, stores) in every epoch by weight or by count (src/plan/mix.ts,
   * NOTE [ Mixing ]): each epoch takes every part's share from that part's own seeded cycles
   * (no sample twice within a cycle) and interleaves them so that every batch in strict order,
   * and every rank's stride, holds the parts in proportion (ready order takes what arrives
   * first: over the epoch the counts hold). `ids` must hold every part's ids, and the store serve
   * them (one store, or a `MixSource` over several). Not with `shuffle: false` or `rankShards`.
   */
  mix?: MixOptions;
}

/** Options of one `loader.epoch(e)`: ids to skip (an interrupted run's), and whether to read ahead into the next epoch. */
export interface EpochOptions {
  /** Ids already handed over in an interrupted run of this epoch: they are not read again (`resume` does this from a `state()`). */
  skip?: Iterable<string>;
  /** Read ahead into epoch `epoch + 1` near this epoch's end (default: the loader's `readAhead`). */
  readAhead?: boolean;
}


/**
 * Reads a split's samples from a store in batches, epoch by epoch: prefetching, out-of-order where it pays, with retries and hedged requests, decoding in workers.
 *
 * @example
 * ```ts
 * import { Loader, openStore, ingest } from "cassette";
 * const store = await openStore("sqlite:.tmp/loader-class-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 32 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * const loader = new Loader({ store, dataset: "fm", ids, batchSize: 16 });
 * for await (const batch of loader.epoch(0)) console.log(batch.ids.length); // 16
 * await loader.close();
 * await store.close();
 * ```
 */
export class Loader<T = Sample> implements AsyncDisposable {
  /** The options it was made with. */
  readonly options: LoaderOptions<T>;
  readonly #read: ReadPath;
  readonly #stats = new StatsRecorder();
  readonly #schedule: EpochScheduler<Sample, T>;
  #closed = false;

  /** Checks the options (a bad one is a CassetteError naming it); the store is opened when first read. */
  constructor(options: LoaderOptions<T>) {
    const o = options;
    const bad = (why: string): never => {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot create a Loader as ${why}`);
    };
    if (!Number.isInteger(o.batchSize) || o.batchSize < 1) bad(`'batchSize' must be a positive integer: current value is ${o.batchSize}`);
    if (o.maxPrefetchBytes !== undefined && !(Number.isFinite(o.maxPrefetchBytes) && o.maxPrefetchBytes > 0)) {
      bad(`'maxPrefetchBytes' must be a positive number of bytes: current value is ${o.maxPrefetchBytes}`);
    }
    if (o.prefetch !== undefined && o.prefetch !== "auto" && !(Number.isInteger(o.prefetch) && o.prefetch >= 1)) {
      bad(`'prefetch' must be a positive integer or "auto": current value is ${o.prefetch}`);
    }
    if (o.order !== undefined && o.order !== "ready" && o.order !== "strict") bad(`'order' must be "ready" or "strict": current value is ${o.order}`);
    if (o.pad !== undefined && typeof o.pad !== "boolean") bad(`'pad' must be true or false: current value is ${o.pad}`);
    if (o.rankShards !== undefined && typeof o.rankShards !== "boolean") bad(`'rankShards' must be true or false: current value is ${o.rankShards}`);
    if (o.pad && o.dropLast) bad("'pad' and 'dropLast' ask for opposite things (repeat samples, or drop them): give one");
    if (o.balance !== undefined && o.balance !== "rate" && o.balance !== "driver") bad(`'balance' must be "rate" or "driver": current value is ${o.balance}`);
    if (o.readAhead !== undefined && typeof o.readAhead !== "boolean" && o.readAhead !== "auto") bad(`'readAhead' must be true, false or "auto": current value is ${o.readAhead}`);
    if (o.onError !== undefined && o.onError !== "throw" && o.onError !== "skip") bad(`'onError' must be "throw" or "skip": current value is ${o.onError}`);
    if (o.transform !== undefined && typeof o.transform !== "function" && !isTransformModule(o.transform)) {
      bad(`'transform' must be a function or { module, options }: current value is ${typeof o.transform}`);
    }
    const module = isTransformModule(o.transform) ? o.transform : undefined;
    if (o.workers !== undefined && o.workers !== "auto" && !(Number.isInteger(o.workers) && o.workers >= 0)) bad(`'workers' must be a whole number or "auto": current value is ${o.workers}`);
    const workers = readWorkers(o.store, o);
    // A bad address fails here too, not at the first batch; parsed once, passed on to the read path.
    const at = this.#at = typeof o.store === "string" ? locate(o.store) : undefined;
    checkReadOptions(at ?? o.store, { ...o, transform: module, workers }, "Cannot create a Loader");
    if (o.decode !== undefined && typeof o.decode !== "boolean") {
      if (typeof o.decode !== "object" || o.decode === null) bad(`'decode' must be true, false or the decoder's options: current value is ${o.decode}`);
      checkDecodeOptions(o.decode); // a bad option is named now, not as every sample's decode error
    }
    if (!Array.isArray(o.ids)) bad("'ids' must be an array of sample ids");
    assertUnique(o.ids, "Cannot create a Loader");
    if (o.mix !== undefined) {
      if (o.shuffle === false || o.rankShards) bad(`'mix' draws its own order of every part: not with ${o.rankShards ? "'rankShards'" : "'shuffle: false'"}`);
      checkMix(o.mix, o.ids, o.seed ?? 0);
    }
    if (typeof o.hedge === "object" && o.hedge !== null) hedgeOptions(o.hedge, "a Loader's requests");
    this.options = options;
    if (o.resume !== undefined) this.#resumeFrom(checkResumeState(o.resume, this.#identity()));
    this.#read = new ReadPath({ ...o, store: at ?? o.store, transform: module, seed: o.seed, workers, scaleWorkers: workerScale(workers, o.workers) }, () => this.#schedule.drained());
    this.#schedule = new EpochScheduler<Sample, T>(
      {
        batchSize: o.batchSize, strict: o.order === "strict", skipErrors: o.onError === "skip", signal: o.signal,
        transform: typeof o.transform === "function" ? o.transform : undefined,
        prefetch: o.prefetch ?? "auto", maxPrefetch: o.maxPrefetch ?? 64, rampStart: o.rampStart ?? 2, readAhead: o.readAhead ?? "auto",
        maxPrefetchBytes: o.maxPrefetchBytes,
      },
      this.#read,
      (epoch) => this.#planOf(epoch),
      this.#stats,
    );
  }

  /** Batches of epoch `epoch`: iterate with `for await`. One epoch at a time. */
  epoch(epoch: number, opts: EpochOptions = {}): AsyncIterableIterator<Batch<T>, undefined> {
    if (this.#closed) throw new CassetteError("ERR_INVALID_OPTION", "Cannot start an epoch as the loader is closed");
    // A shard set is planned shard by shard (plan/epoch.ts `groups`); a wds: address's shards
    // are known once its index is read, before the first epoch's plan.
    const shards = this.#shards ??= this.#shardGroups();
    const start = () => {
      // What this epoch hands over is recorded for state(); a resume's epoch starts from the
      // state's record and leaves its samples out.
      // An elastic resume's epoch is planned without what every rank handed over (#before).
      const from = this.#resume?.epoch === epoch ? this.#resume : undefined;
      const elastic = this.#elastic?.epoch === epoch ? this.#elastic : undefined;
      const plan = this.#planOf(epoch).ids, whole = this.#whole(epoch);
      if (elastic) checkPlan(elastic, plan, whole);
      const handed = from ? resumed(from, plan, whole) : new HandedOver(epoch, plan, whole);
      const skip = new Set(opts.skip ?? []);
      if (from) for (const id of handed.ids()) skip.add(id);
      const run = this.#schedule.epoch(epoch, skip, opts.readAhead);
      if (from) this.#resume = undefined;
      if (elastic) this.#elastic = undefined;
      this.#handed = handed;
      // With pad, the plan's tail repeats samples of other ranks (plan/epoch.ts): marked in each batch.
      const repeats = this.options.pad ? new Set(plan.slice(paddedFrom(whole.samples, { ...this.#identity(), before: whole.before }))) : undefined;
      return tracked(run, handed, repeats);
    };
    if (shards.groups || !shards.loading) return start();
    const loading = shards.loading;
    return (async function* (): AsyncGenerator<Batch<T>, undefined> {
      await loading;
      yield* start();
      return undefined;
    })();
  }
  #shards?: ShardGroups;
  #at?: Addressed;

  /**
   * A shard set's ids by shard (Source's `shards()`): at once from a source given open; for an
   * address of a kind with shards (src/source/kinds.ts), once the read path has opened the
   * source the epoch reads (its index read once, there); none for any other store.
   */
  #shardGroups(): ShardGroups {
    const store = this.options.store, out: ShardGroups = {};
    if (typeof store !== "string") {
      if (typeof (store as Source).shards === "function") out.groups = (store as Source).shards!();
    } else if (this.#at?.kind.shards) {
      out.loading = this.#read.source().then(() => {
        out.groups = this.#read.shards();
      });
    }
    return out;
  }
  #resume?: LoaderState;
  /** A state taken on another world size (one that covers every rank): its epoch is checked by the whole order's digest. */
  #elastic?: LoaderState;
  /** The samples of the resumed epoch's whole order handed over before this run: left out of its plan (NOTE [ Elastic resume ]). */
  #before?: { epoch: number; bits: Uint8Array };
  #handed?: HandedOver;

  /** Takes a checked state: on this world size it resumes this rank's plan; on another, the rest of the epoch is strided over this run's ranks. */
  #resumeFrom(st: LoaderState): void {
    const elastic = st.worldSize !== (this.options.worldSize ?? 1);
    const bits = stateBefore(st, elastic);
    if (bits) this.#before = { epoch: st.epoch, bits };
    if (elastic) this.#elastic = st;
    else this.#resume = st;
  }

  /** The epoch's whole order, every rank's, as a state records it: its length, its digest (drawn when first asked for), what it left out. */
  #whole(epoch: number): WholeOrder {
    let digest: string | undefined;
    const ids = this.#epochIds(epoch), groups = this.#groups();
    return {
      samples: ids.length,
      digest: () => digest ??= planDigest(epochSequence(ids, { ...this.#orderOptions(), epoch, groups })),
      before: this.#before?.epoch === epoch ? this.#before.bits : undefined,
    };
  }

  /**
   * The plan of `epoch` (the last two kept: the scheduler and state() ask for the same ones),
   * with its positions in the split where it is drawn without shards (read workers are sent those).
   */
  #planOf(epoch: number): RunPlan {
    const hit = this.#plans.find((p) => p.epoch === epoch);
    if (hit) return hit.plan;
    const ids = this.#epochIds(epoch), o = { ...this.#orderOptions(), epoch, before: this.#before?.epoch === epoch ? this.#before.bits : undefined };
    const groups = this.#groups();
    let plan: RunPlan;
    if (groups) plan = { ids: epochPlan(ids, { ...o, groups }) };
    else if (this.options.mix) plan = { ids: epochPlan(ids, o) }; // each epoch its own ids: no split for the workers to keep
    else {
      const order = epochOrder(ids.length, o);
      const planned = new Array<string>(order.length);
      for (let i = 0; i < order.length; i++) planned[i] = ids[order[i]];
      plan = { ids: planned, split: { ids, order } };
    }
    this.#plans = [{ epoch, plan }, ...this.#plans.slice(0, 1)];
    return plan;
  }
  #plans: { epoch: number; plan: RunPlan }[] = [];

  /** The ids epoch `epoch` orders: the split, or with `mix` the epoch's mixed order (NOTE [ Mixing ]). */
  #epochIds(epoch: number): readonly string[] {
    const mix = this.options.mix;
    if (!mix) return this.options.ids;
    const hit = this.#mixed;
    if (hit?.epoch === epoch) return hit.ids;
    const ids = mixOrder(mix.parts, { seed: this.options.seed ?? 0, epoch, samples: mix.samples });
    this.#mixed = { epoch, ids };
    return ids;
  }
  #mixed?: { epoch: number; ids: readonly string[] };

  /** The plan's options: the identity, with a mix's order taken as it is drawn (it is shuffled already). */
  #orderOptions(): PlanIdentity {
    return this.options.mix ? { ...this.#identity(), shuffle: false } : this.#identity();
  }

  /** The shard groups the plan follows: none under a mix, whose order is its own. */
  #groups(): string[][] | undefined {
    return this.options.mix ? undefined : this.#shards?.groups;
  }

  #identity(): PlanIdentity {
    const o = this.options;
    return {
      seed: o.seed ?? 0, rank: o.rank ?? 0, worldSize: o.worldSize ?? 1, shuffle: o.shuffle ?? true, batchSize: o.batchSize, dropLast: o.dropLast ?? false, pad: o.pad ?? false,
      ...(o.rankShards ? { rankShards: true } : {}),
    };
  }

  /**
   * Where the loader stands, as a small JSON-able value for a checkpoint: the epoch in progress
   * and a bitmap over its plan of the samples handed over so far (once an epoch's iteration
   * has ended, the next epoch with none). `new Loader({ …, resume: state })` continues there.
   * Take it between batches: a batch counts as handed over once the loop has it.
   *
   * On another number of ranks, a run resumes from every rank's state merged, `mergeStates`
   * (each new rank given the same merged state): the epoch's samples no rank handed over are
   * strided over the new ranks, and later epochs planned for them as usual (NOTE [ Elastic
   * resume ], src/schedule/resume.ts). One rank's state alone is refused there
   * (ERR_PARTIAL_STATE): it does not say what the others handed over.
   */
  state(): LoaderState {
    const h = this.#handed;
    if (!h && this.#resume) return this.#resume;
    const e = h ? (h.finished ? h.epoch + 1 : h.epoch) : this.#elastic?.epoch ?? 0;
    if (h && !h.finished) return h.state(this.#identity());
    return new HandedOver(e, this.#planOf(e).ids, this.#whole(e)).state(this.#identity());
  }

  /** The source, opened on first use (with its decoding, hedging and retries). */
  source(): Promise<Source<Sample>> {
    return this.#read.source();
  }

  /**
   * Samples of epoch `epoch` given up on after their retries so far (`onError: "skip"`):
   * unlike `stats().errors`, not mixed with the next epoch's read-ahead.
   */
  skipped(epoch: number): number {
    return this.#stats.skippedIn(epoch);
  }

  /**
   * Which samples of epoch `epoch` were given up on (`onError: "skip"`), with the error's
   * message: the first 1 000 of them (`skipped(epoch)` counts them all).
   */
  skippedSamples(epoch: number): SkippedSample[] {
    return this.#stats.skippedSamples(epoch);
  }

  /** Figures for everything read so far. */
  stats(): LoaderStats {
    return this.#stats.summary(this.#read.counters(), this.#schedule.prefetch());
  }

  /** Stops reading, closes what the loader opened. Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#schedule.close(new CassetteError("ERR_INVALID_OPTION", "Cannot read on: the loader was closed"));
    await this.#read.close();
  }

  /** Closes the loader, as `close()` does, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** An epoch's batches, each recorded as handed over as it leaves (and its `repeats` marked, with pad); the record ends with them. */
async function* tracked<T>(run: AsyncIterable<Batch<T>>, handed: HandedOver, repeats?: ReadonlySet<string>): AsyncGenerator<Batch<T>, undefined> {
  for await (const b of run) {
    handed.mark(b.ids);
    if (repeats) b.padded = Uint8Array.from(b.ids, (id) => (repeats.has(id) ? 1 : 0));
    yield b;
  }
  handed.finished = true;
  return undefined;
}
