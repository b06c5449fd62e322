/**
 * The epoch plan: which ids this rank reads in epoch `e`, and in which order. A pure value of
 * (ids, seed, epoch, rank, worldSize): every rank computes the same permutation and takes its
 * own stride of it, with no coordinator ("Scaling DL data management with Cassandra DB" (IEEE
 * BigData 2021), §6.2) and no mutable epoch state (the `set_epoch` trap of torch's
 * DistributedSampler).
 *
 *   permutation of the split (seed, epoch):  a b c d e f g h i j
 *   rank 0 of 3 takes positions 0, 3, 6, 9:  a       d       g       j
 *   rank 1 of 3 takes positions 1, 4, 7:       b       e       h
 * The ranks' shards partition the epoch: every id is read by exactly one rank.
 *
 * With `groups` (the ids of each tar shard, in the order the shard holds them: a WebDataset
 * source's `shards()`), the permutation is shard-aware, as webdataset's shard shuffle followed
 * by its shuffle buffer, so a reader streams a few shards at a time and keeps few samples
 * that arrived before they were asked for:
 *
 *   shards (seed, epoch):   F C H A | E B D G        shuffled, then cut into blocks of k (4)
 *   block 0, merged:        f0 c0 f1 h0 a0 c1 a1 …  a random interleaving that keeps each
 *                                                    shard's own order (each one is streamed)
 *   shuffle buffer of b:    c0 f1 f0 a0 h0 …         a sample moves about b places at most
 *   the plan:               block 0's samples, then block 1's, …; ranks stride as above
 * Ids not in any group come last, shuffled, as one more block.
 *
 * With `before` (an elastic resume: src/schedule/resume.ts), the samples of the epoch's order
 * that an earlier run's ranks handed over are left out, and the rest of the same order is
 * strided over this run's ranks, so that a job that stopped on N ranks finishes the epoch on M:
 *
 *   the epoch's order:        a b c d e f g h i j      (seed, epoch: the same on any world size)
 *   handed over on 4 ranks:   a b   d e     h          (`before`, the ranks' states merged)
 *   the rest, over 3 ranks:       c     f g   i j  →  rank 0: c i, rank 1: f j, rank 2: g
 */
import type { MixOptions } from "./mix.ts";
import { CassetteError } from "../errors.ts";
import { type Rng, rng, shuffle } from "./rng.ts";

/** What fixes an epoch's plan: seed, epoch, rank and world size, batch size, and shards to read together. */
export interface EpochPlanOptions {
  /** Seed of the permutation (a Loader's default 0): the same seed, epoch and ids give the same plan on every rank. */
  seed: number;
  /** The epoch: each one has its own permutation. */
  epoch: number;
  /** This process's rank among `worldSize` (default 0): it takes positions rank, rank + worldSize, … of each epoch's permutation. */
  rank?: number;
  /** Processes reading the split together (default 1); their shares partition each epoch. */
  worldSize?: number;
  /** Permute the ids (default true); false keeps the split's order. */
  shuffle?: boolean;
  /** Samples per batch (an epoch's last batch may hold fewer, unless `dropLast`). */
  batchSize: number;
  /**
   * Drop samples so that every rank has the same whole number of batches (ranks of a
   * data-parallel job must take the same number of steps). Default false: every id of the
   * rank's stride is planned, so the last batch may be short.
   */
  dropLast?: boolean;
  /**
   * Repeat samples from the start of the epoch's order so that every rank has the same number
   * of samples, ⌈n / worldSize⌉ (as PyTorch's DistributedSampler pads): the repeats are the last
   * ones of a rank's plan (paddedFrom), and a Loader's batches mark them in `padded`, so that
   * metrics can leave them out. Default false. Not with dropLast.
   */
  pad?: boolean;
  /**
   * The ids by shard, each group in its shard's stream order: plans shard by shard (see the
   * file's doc). Ids of a group that are not in `ids` are left out. Default: no shards.
   */
  groups?: readonly (readonly string[])[];
  /** With `groups`: shards whose samples are interleaved, read at once (default 4). */
  shardBlock?: number;
  /** With `groups`: samples of the shuffle buffer that reorders a block's merge (default 256; 1: none). */
  shuffleBuffer?: number;
  /**
   * Samples of the epoch handed over before this plan was drawn (an elastic resume): a bitmap
   * over the epoch's order (`epochSequence`; bit i: byte i >> 3, bit i & 7). They are left out,
   * and the rest of the order is strided over the ranks, with dropLast and pad applied to that
   * rest. Default: none.
   */
  before?: Uint8Array;
  /**
   * With `groups` and several ranks: each rank streams its own shards, not every shard for its
   * stride (default false). The shards, shuffled by (seed, epoch) so that they rotate over the
   * ranks from epoch to epoch, are laid end to end and cut into `worldSize` runs of ⌊n / worldSize⌋
   * or ⌈n / worldSize⌉ samples (balanced within one sample): rank r takes run r, whose end shards
   * it may share with its neighbours, and plans it shard-aware on its own (blocks of
   * `shardBlock` merged, the shuffle buffer). dropLast cuts every run to the same whole batches;
   * pad gives a short run one repeat, the next run's first sample. Not with `before`.
   */
  rankShards?: boolean;
}

/** A Loader's `plan` options: what fixes each epoch's plan, the epoch aside (src/loader_options.ts). */
export type PlanOptions = Partial<Pick<EpochPlanOptions, "batchSize" | "shuffle" | "seed" | "rank" | "worldSize" | "dropLast" | "pad" | "rankShards">> & {
  /**
   * Mix parts (datasets, splits, stores) in every epoch by weight or by count (src/plan/mix.ts,
   * NOTE [ Mixing ]): each epoch takes every part's share from that part's own seeded cycles
   * (no sample twice within a cycle) and interleaves them so that every batch in strict order,
   * and every rank's stride, holds the parts in proportion (ready order takes what arrives
   * first: over the epoch the counts hold). `ids` must hold every part's ids, and the store serve
   * them (one store, or a `MixSource` over several). Not with `shuffle: false` or `rankShards`.
   */
  mix?: MixOptions;
};

/** Salt of the shard-aware plan's PRNG stream: it draws differently from the flat permutation. */
const SHARD_PLAN = 0x5a4d;

/** The ids rank `rank` reads in epoch `epoch`, in order: a seeded permutation (or a shard-aware plan with `groups`), strided across ranks. */
export function epochPlan(ids: readonly string[], o: EpochPlanOptions): string[] {
  if (!o.groups) {
    const order = epochOrder(ids.length, o);
    const plan = new Array<string>(order.length);
    for (let i = 0; i < order.length; i++) plan[i] = ids[order[i]];
    return plan;
  }
  if (o.rankShards && (o.worldSize ?? 1) > 1) return rankShardPlan(ids, o);
  const order = left(epochSequence(ids, o), o.before);
  return rankShare(order, o, []);
}

/** A rank's plan with `rankShards`: its run of the shards laid end to end (the option's doc). */
function rankShardPlan(ids: readonly string[], o: EpochPlanOptions): string[] {
  const bad = checker(o);
  if (o.before) {
    throw new CassetteError("ERR_UNSUPPORTED", "Cannot plan the epoch as 'rankShards' plans do not resume on another number of ranks (their 'before'): resume on the same ranks");
  }
  const k = o.shardBlock ?? 4, b = o.shuffleBuffer ?? 256, shuffled = o.shuffle ?? true;
  const shards = shardSets(ids, o.groups!, k, b, bad);
  if (shuffled) shuffle(shards, rng(o.seed, o.epoch, SHARD_PLAN));
  const rank = o.rank ?? 0, world = o.worldSize ?? 1;
  const n = shards.reduce((a, s) => a + s.length, 0), q = Math.floor(n / world), more = n % world;
  const start = rank * q + Math.min(rank, more), end = start + q + (rank < more ? 1 : 0);
  const mine: string[][] = [];
  let at = 0, next: string | undefined;
  for (const s of shards) {
    const a = Math.max(start, at), z = Math.min(end, at + s.length);
    if (a < z) mine.push(s.slice(a - at, z - at));
    if (n > 0 && end % n >= at && end % n < at + s.length) next = s[end % n - at];
    at += s.length;
  }
  const out = shuffled ? blockOrder(mine, k, b, rng(o.seed, o.epoch, SHARD_PLAN, rank + 1)) : mine.flat();
  if (o.dropLast) out.length = Math.floor(q / o.batchSize) * o.batchSize;
  else if (o.pad && out.length < Math.ceil(n / world) && next !== undefined) out.push(next);
  return out;
}

/**
 * The epoch's order of all its samples, before `before` leaves some out and the ranks stride
 * it: what every rank's plan, on any world size, is cut from (`rank`, `worldSize`, `dropLast`,
 * `pad` and `before` play no part).
 */
export function epochSequence(ids: readonly string[], o: EpochPlanOptions): string[] {
  const bad = checker(o);
  if (o.groups) return shardOrder(ids, o.groups, o.shuffle ?? true, o.shardBlock ?? 4, o.shuffleBuffer ?? 256, rng(o.seed, o.epoch, SHARD_PLAN), bad);
  const order = wholeOrder(ids.length, o);
  const out = new Array<string>(order.length);
  for (let i = 0; i < order.length; i++) out[i] = ids[order[i]];
  return out;
}

/** The flat permutation of n split positions (seed, epoch). */
function wholeOrder(n: number, o: Omit<EpochPlanOptions, "groups">): Int32Array<ArrayBuffer> {
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  if (o.shuffle ?? true) shuffle(order, rng(o.seed, o.epoch));
  return order;
}

/** Whether bit `i` of a bitmap is set (bit i: byte i >> 3, bit i & 7). */
export function bitSet(bits: Uint8Array, i: number): boolean {
  return (bits[i >> 3] & (1 << (i & 7))) !== 0;
}

/** How many of an order's `n` samples `before` leaves to plan. */
export function leftCount(n: number, before?: Uint8Array): number {
  if (!before) return n;
  let k = 0;
  for (let i = 0; i < n; i++) if (!bitSet(before, i)) k++;
  return k;
}

/** An order without the samples `before` marks (the same array when nothing is marked). */
function left<A extends { length: number; [i: number]: T; filter(f: (x: T, i: number) => boolean): A }, T>(order: A, before?: Uint8Array): A {
  return before ? order.filter((_, i) => !bitSet(before, i)) : order;
}

/**
 * The same plan as `epochPlan` without shards, as positions in the split (`n` ids): the plan's
 * sample k is `ids[order[k]]`. A reader that holds the split already (a read worker) is told an
 * epoch in 4 bytes a sample, not its ids again.
 *
 * @example
 * ```ts
 * import { epochOrder, epochPlan } from "cassette";
 * const ids = ["a", "b", "c", "d", "e"];
 * const o = { seed: 1, epoch: 2, batchSize: 2 };
 * console.log(Array.from(epochOrder(ids.length, o), (i) => ids[i]).join() === epochPlan(ids, o).join()); // true
 * ```
 */
export function epochOrder(n: number, o: Omit<EpochPlanOptions, "groups">): Int32Array<ArrayBuffer> {
  checker(o);
  const order = left(wholeOrder(n, o), o.before);
  const mine = rankShare(order, o, new Int32Array(Math.ceil(order.length / (o.worldSize ?? 1))));
  return mine instanceof Int32Array ? mine : Int32Array.from(mine);
}

/**
 * Where a rank's plan of `n` samples turns to repeats with `pad` (its length without them):
 * position k of rank r is the epoch order's r + k·worldSize (of what `before` leaves of it), a
 * repeat past the end.
 */
export function paddedFrom(n: number, o: Pick<EpochPlanOptions, "rank" | "worldSize" | "before">): number {
  const rank = o.rank ?? 0, world = o.worldSize ?? 1;
  return Math.max(0, Math.ceil((leftCount(n, o.before) - rank) / world));
}

/**
 * How many samples rank `rank` plans when `n` are strided over the ranks (what is left after
 * `before`): ⌈(n − rank) / worldSize⌉, the same whole batches on every rank with dropLast,
 * ⌈n / worldSize⌉ with pad. Its position k is the strided order's (rank + k·worldSize) mod n.
 */
export function planLength(n: number, o: Pick<EpochPlanOptions, "rank" | "worldSize" | "batchSize" | "dropLast" | "pad">): number {
  const rank = o.rank ?? 0, world = o.worldSize ?? 1;
  if (o.dropLast) return Math.floor(Math.floor(n / world) / o.batchSize) * o.batchSize;
  if (o.pad) return n === 0 ? 0 : Math.ceil(n / world);
  return Math.max(0, Math.ceil((n - rank) / world));
}

/** This rank's stride of the epoch's order, cut to whole batches with dropLast, or made ⌈n / worldSize⌉ long with pad. */
function rankShare<A extends { length: number; [i: number]: T }, T>(order: A, o: EpochPlanOptions, out: A): A {
  const rank = o.rank ?? 0, world = o.worldSize ?? 1;
  let k = 0;
  // Padded, the order goes on from its start (order[i − n]) up to a multiple of worldSize.
  const end = o.pad ? Math.ceil(order.length / world) * world : order.length;
  for (let i = rank; i < end; i += world) out[k++] = order[i % order.length];
  let len = k;
  if (o.dropLast) len = Math.floor(Math.floor(order.length / world) / o.batchSize) * o.batchSize;
  if (Array.isArray(out)) {
    out.length = len;
    return out;
  }
  return (out as unknown as Int32Array).subarray(0, len) as unknown as A;
}

/** Checks the options; answers the shard plan's error-naming function. */
function checker(o: EpochPlanOptions): (why: string) => never {
  const rank = o.rank ?? 0, world = o.worldSize ?? 1;
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot plan the epoch as ${why}`);
  };
  if (!Number.isInteger(world) || world < 1) bad(`'worldSize' must be a positive integer: current value is ${world}`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= world) bad(`'rank' must be in 0..${world - 1}: current value is ${rank}`);
  if (!Number.isInteger(o.batchSize) || o.batchSize < 1) bad(`'batchSize' must be a positive integer: current value is ${o.batchSize}`);
  // A value is shown short: an array passed by mistake would otherwise fill the screen.
  if (!Number.isInteger(o.epoch) || o.epoch < 0) bad(`'epoch' must be a non-negative integer: current value is ${String(o.epoch).slice(0, 40)}`);
  if (o.pad && o.dropLast) bad("'pad' and 'dropLast' ask for opposite things (repeat samples, or drop them): give one");
  return bad;
}

/** The shard-aware permutation of `ids` (the file's doc); `shuffled` false keeps the groups' order. */
function shardOrder(ids: readonly string[], groups: readonly (readonly string[])[], shuffled: boolean, k: number, b: number, r: Rng, bad: (why: string) => never): string[] {
  const shards = shardSets(ids, groups, k, b, bad);
  // The ids in no group come last, as one more block.
  const rest = shards.at(-1)?.rest ? shards.pop()! : [];
  if (!shuffled) return [...shards.flat(), ...rest];
  shuffle(shards, r);
  const out = blockOrder(shards, k, b, r);
  for (const id of shuffle(rest, r)) out.push(id);
  return out;
}

/** The groups' ids that are in `ids` (each once, in its first group), and last the ids in no group (marked `rest`). */
function shardSets(ids: readonly string[], groups: readonly (readonly string[])[], k: number, b: number, bad: (why: string) => never): (string[] & { rest?: true })[] {
  if (!Number.isInteger(k) || k < 1) bad(`'shardBlock' must be a positive integer: current value is ${k}`);
  if (!Number.isInteger(b) || b < 1) bad(`'shuffleBuffer' must be a positive integer: current value is ${b}`);
  const wanted = new Set(ids);
  const placed = new Set<string>();
  const shards: (string[] & { rest?: true })[] = [];
  for (const g of groups) {
    const mine = g.filter((id) => wanted.has(id) && !placed.has(id));
    for (const id of mine) placed.add(id);
    if (mine.length) shards.push(mine);
  }
  const rest: string[] & { rest?: true } = ids.filter((id) => !placed.has(id));
  rest.rest = true;
  if (rest.length) shards.push(rest);
  return shards;
}

/** Shards in blocks of k, each block's shards merged and passed through the shuffle buffer. */
function blockOrder(shards: string[][], k: number, b: number, r: Rng): string[] {
  const out: string[] = [];
  // Pushed one by one: a spread of a large array overflows the stack.
  for (let s = 0; s < shards.length; s += k) for (const id of buffered(merge(shards.slice(s, s + k), r), b, r)) out.push(id);
  return out;
}

/** A uniformly random interleaving of `seqs` that keeps each one's order: the next id comes from a shard with probability ∝ what it has left. */
function merge(seqs: string[][], r: Rng): string[] {
  const at = seqs.map(() => 0);
  let left = seqs.reduce((n, q) => n + q.length, 0);
  const out: string[] = [];
  while (left > 0) {
    let pick = r.int(left);
    let i = 0;
    while (pick >= seqs[i].length - at[i]) pick -= seqs[i].length - at[i], i++;
    out.push(seqs[i][at[i]++]);
    left--;
  }
  return out;
}

/** webdataset's shuffle buffer: keep `b` samples, hand on a random one as each new one comes, the rest shuffled at the end. */
function buffered(seq: string[], b: number, r: Rng): string[] {
  if (b <= 1) return seq;
  const buf: string[] = [];
  const out: string[] = [];
  for (const id of seq) {
    if (buf.length < b) {
      buf.push(id);
      continue;
    }
    const j = r.int(b);
    out.push(buf[j]);
    buf[j] = id;
  }
  return out.concat(shuffle(buf, r));
}
