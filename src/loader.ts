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
import { hedgeOptions } from "./read/hedge.ts";
import { checkReadOptions } from "./read/open.ts";

/** The ids by shard a Loader plans by, set once known; `loading` while the read path opens a shard set. */
interface ShardGroups {
  groups?: string[][];
  loading?: Promise<void>;
}
import { ReadPath } from "./read/read_path.ts";
import { readWorkers, workerScale } from "./read/worker_source.ts";
import type { Sample } from "./read/sample.ts";
import { checkDecodeOptions, readDecodeOptions } from "./decode/decoder.ts";
import { type LoaderStats, type SkippedSample, StatsRecorder } from "./observe/stats.ts";
import { isTransformModule } from "./decode/transform.ts";
import {
  type CpuOptions, type FaultOptions, type FlatLoaderOptions, type LifecycleOptions, type LoaderTarget, type LoaderGroups, type LoaderOptions, type LoaderTransform, type PlanOptions,
  resolveLoaderOptions, type ResolvedLoaderOptions, type SourceSettings, type WindowOptions,
} from "./loader_options.ts";

export type { LoaderState, LoaderStats, PlanIdentity, SkippedSample };
export { mergeStates } from "./schedule/resume.ts";
export type { CpuOptions, FaultOptions, FlatLoaderOptions, LifecycleOptions, LoaderGroups, LoaderOptions, LoaderTarget, LoaderTransform, PlanOptions, SourceSettings, WindowOptions };

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

  /**
   * Checks the options (a bad one is a CassetteError naming it) and merges their grouped and
   * flat forms into the one value the loader reads (src/loader_options.ts); the store is opened
   * when first read.
   */
  constructor(options: LoaderOptions<T>) {
    const o = this.#o = resolveLoaderOptions(options);
    checkOptions(o);
    const { cpu, window: w, faults, plan } = o;
    const module = isTransformModule(cpu.transform) ? cpu.transform : undefined;
    const workers = readWorkers(o.store, { ...cpu, cache: o.source.cache, rankShards: o.plan.rankShards }); // a cache, or a rank's shards, read in this thread
    // A bad address fails here too, not at the first batch; parsed once, passed on to the read path.
    const at = this.#at = typeof o.store === "string" ? locate(o.store) : undefined;
    checkReadOptions(at ?? o.store, { ...cpu, ...o.source, dataset: o.dataset, transform: module, workers }, "Cannot create a Loader");
    if (cpu.decode !== undefined && typeof cpu.decode !== "boolean") checkDecodeOptions(readDecodeOptions(cpu.decode)!); // a bad option is named now, not as every sample's decode error
    assertUnique(o.ids, "Cannot create a Loader");
    if (plan.mix !== undefined) {
      if (plan.shuffle === false || plan.rankShards) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot create a Loader as 'mix' draws its own order of every part: not with ${plan.rankShards ? "'rankShards'" : "'shuffle: false'"}`);
      }
      checkMix(plan.mix, o.ids, plan.seed ?? 0);
    }
    if (typeof faults.hedge === "object" && faults.hedge !== null) hedgeOptions(faults.hedge, "a Loader's requests");
    this.options = options;
    const st = o.lifecycle.resume;
    if (st !== undefined && plan.mix && st?.worldSize !== (plan.worldSize ?? 1)) {
      // A mix's order is cut in runs of the world size (plan/mix.ts): another one is another order.
      throw new CassetteError("ERR_UNSUPPORTED", `Cannot resume the Loader on ${plan.worldSize ?? 1} ranks from a state taken on ${st.worldSize} as a plan with 'mix' resumes only on its own number of ranks`);
    }
    if (st !== undefined) this.#resumeFrom(checkResumeState(st, this.#identity()));
    this.#read = new ReadPath(
      {
        store: at ?? o.store, dataset: o.dataset, seed: plan.seed, source: o.source, faults,
        cpu: { ...cpu, transform: module, workers, scaleWorkers: workerScale(workers, cpu.workers) },
      },
      () => this.#schedule.drained(),
    );
    this.#schedule = new EpochScheduler<Sample, T>(
      {
        batchSize: plan.batchSize, strict: w.order === "strict", skipErrors: faults.onError === "skip", signal: o.lifecycle.signal,
        transform: typeof cpu.transform === "function" ? cpu.transform : undefined,
        recycle: (s) => this.#read.recycle(s),
        prefetch: w.prefetch ?? "auto", maxPrefetch: w.maxPrefetch ?? 64, rampStart: w.rampStart ?? 2, readAhead: w.readAhead ?? "auto",
        maxPrefetchBytes: w.maxPrefetchBytes,
      },
      this.#read,
      (epoch) => this.#planOf(epoch),
      this.#stats,
    );
  }
  /** The options, both forms merged: what the loader reads (`options` is what it was given). */
  readonly #o: ResolvedLoaderOptions<T>;

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
      const repeats = this.#o.plan.pad ? new Set(plan.slice(paddedFrom(whole.samples, { ...this.#identity(), before: whole.before }))) : undefined;
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
    const store = this.#o.store, out: ShardGroups = {};
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
    const elastic = st.worldSize !== (this.#o.plan.worldSize ?? 1);
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
    else if (this.#o.plan.mix) plan = { ids: epochPlan(ids, o) }; // each epoch its own ids: no split for the workers to keep
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
    const mix = this.#o.plan.mix;
    if (!mix) return this.#o.ids;
    const hit = this.#mixed.find((m) => m.epoch === epoch);
    if (hit) return hit.ids;
    const ids = mixOrder(mix.parts, { seed: this.#o.plan.seed ?? 0, epoch, samples: mix.samples, ranks: this.#o.plan.worldSize ?? 1 });
    this.#mixed = [{ epoch, ids }, ...this.#mixed.slice(0, 1)]; // the last two, as #plans: an epoch and the one read ahead
    return ids;
  }
  #mixed: { epoch: number; ids: readonly string[] }[] = [];

  /** The plan's options: the identity, with a mix's order taken as it is drawn (it is shuffled already). */
  #orderOptions(): PlanIdentity {
    return this.#o.plan.mix ? { ...this.#identity(), shuffle: false } : this.#identity();
  }

  /** The shard groups the plan follows: none under a mix, whose order is its own. */
  #groups(): string[][] | undefined {
    return this.#o.plan.mix ? undefined : this.#shards?.groups;
  }

  /**
   * The options that fix each epoch's plan, defaults applied, whichever form they were given
   * in (`plan: { seed }` or `seed`): with the ids and an epoch, `epochPlan`'s arguments for the
   * plan this loader reads (without a shard set's groups).
   */
  planIdentity(): PlanIdentity {
    return this.#identity();
  }

  #identity(): PlanIdentity {
    const o = this.#o.plan;
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

/** The option values the Loader checks itself (the read path's are checked by `checkReadOptions`, the resume state by `checkResumeState`). */
function checkOptions<T>(o: ResolvedLoaderOptions<T>): void {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot create a Loader as ${why}`);
  };
  const { plan: p, window: w, faults: f, cpu: c, source: s } = o;
  if (!Number.isInteger(p.batchSize) || p.batchSize < 1) bad(`'batchSize' must be a positive integer: current value is ${p.batchSize}`);
  if (w.maxPrefetchBytes !== undefined && !(Number.isFinite(w.maxPrefetchBytes) && w.maxPrefetchBytes > 0)) {
    bad(`'maxPrefetchBytes' must be a positive number of bytes: current value is ${w.maxPrefetchBytes}`);
  }
  if (w.prefetch !== undefined && w.prefetch !== "auto" && !(Number.isInteger(w.prefetch) && w.prefetch >= 1)) {
    bad(`'prefetch' must be a positive integer or "auto": current value is ${w.prefetch}`);
  }
  if (w.order !== undefined && w.order !== "ready" && w.order !== "strict") bad(`'order' must be "ready" or "strict": current value is ${w.order}`);
  if (p.pad !== undefined && typeof p.pad !== "boolean") bad(`'pad' must be true or false: current value is ${p.pad}`);
  if (p.rankShards !== undefined && typeof p.rankShards !== "boolean") bad(`'rankShards' must be true or false: current value is ${p.rankShards}`);
  if (p.pad && p.dropLast) bad("'pad' and 'dropLast' ask for opposite things (repeat samples, or drop them): give one");
  if (s.balance !== undefined && s.balance !== "rate" && s.balance !== "driver") bad(`'balance' must be "rate" or "driver": current value is ${s.balance}`);
  if (w.readAhead !== undefined && typeof w.readAhead !== "boolean" && w.readAhead !== "auto") bad(`'readAhead' must be true, false or "auto": current value is ${w.readAhead}`);
  if (f.onError !== undefined && f.onError !== "throw" && f.onError !== "skip") bad(`'onError' must be "throw" or "skip": current value is ${f.onError}`);
  if (c.transform !== undefined && typeof c.transform !== "function" && !isTransformModule(c.transform)) {
    bad(`'transform' must be a function or { module, options }: current value is ${typeof c.transform}`);
  }
  if (c.workers !== undefined && c.workers !== "auto" && !(Number.isInteger(c.workers) && c.workers >= 0)) bad(`'workers' must be a whole number or "auto": current value is ${c.workers}`);
  if (c.decode !== undefined && typeof c.decode !== "boolean" && c.decode !== "hybrid" && c.decode !== "gpu" && (typeof c.decode !== "object" || c.decode === null)) {
    bad(`'decode' must be true, false, "hybrid", "gpu" or the decoder's options: current value is ${c.decode}`);
  }
  if (!Array.isArray(o.ids)) bad("'ids' must be an array of sample ids");
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
