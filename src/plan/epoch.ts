/**
 * The epoch plan: which ids this rank reads in epoch `e`, and in which order. A pure value of
 * (ids, seed, epoch, rank, worldSize): every rank computes the same permutation and takes its
 * own stride of it, with no coordinator (2021 paper §6.2) and no mutable epoch state (the
 * `set_epoch` trap of torch's DistributedSampler).
 *
 *   permutation of the split (seed, epoch):  a b c d e f g h i j
 *   rank 0 of 3 takes positions 0, 3, 6, 9:  a       d       g       j
 *   rank 1 of 3 takes positions 1, 4, 7:       b       e       h
 * The ranks' shards partition the epoch: every id is read by exactly one rank.
 */
import { CassetteError } from "../errors.ts";
import { rng, shuffle } from "./rng.ts";

export interface EpochPlanOptions {
  seed: number;
  epoch: number;
  rank?: number;
  worldSize?: number;
  /** Permute the ids (default true); false keeps the split's order. */
  shuffle?: boolean;
  batchSize: number;
  /**
   * Drop samples so that every rank has the same whole number of batches (ranks of a
   * data-parallel job must take the same number of steps). Default false: every id of the
   * rank's stride is planned, so the last batch may be short.
   */
  dropLast?: boolean;
}

export function epochPlan(ids: readonly string[], o: EpochPlanOptions): string[] {
  const rank = o.rank ?? 0, world = o.worldSize ?? 1;
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot plan the epoch as ${why}`);
  };
  if (!Number.isInteger(world) || world < 1) bad(`'worldSize' must be a positive integer: current value is ${world}`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= world) bad(`'rank' must be in 0..${world - 1}: current value is ${rank}`);
  if (!Number.isInteger(o.batchSize) || o.batchSize < 1) bad(`'batchSize' must be a positive integer: current value is ${o.batchSize}`);
  // A value is shown short: an array passed by mistake would otherwise fill the screen.
  if (!Number.isInteger(o.epoch) || o.epoch < 0) bad(`'epoch' must be a non-negative integer: current value is ${String(o.epoch).slice(0, 40)}`);
  const order = ids.slice();
  if (o.shuffle ?? true) shuffle(order, rng(o.seed, o.epoch));
  const mine: string[] = [];
  for (let i = rank; i < order.length; i += world) mine.push(order[i]);
  if (o.dropLast) {
    const perRank = Math.floor(order.length / world);
    mine.length = Math.floor(perRank / o.batchSize) * o.batchSize;
  }
  return mine;
}
