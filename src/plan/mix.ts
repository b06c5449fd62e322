/**
 * Mixing several datasets (or splits, or stores) in one epoch, by weight or by count: which
 * ids of each part an epoch takes, and how they are interleaved. Pure values of (parts, seed,
 * epoch), like the epoch plan they feed (plan/epoch.ts strides the mixed order across ranks).
 *
 * NOTE [ Mixing ]
 * - **Counts.** A part with `count` gives that many samples an epoch; parts with `weight` share
 *   the rest of the epoch (`samples`, by default the largest epoch in which no weighted part
 *   repeats a sample: min over them of size / share) in proportion, rounded by largest
 *   remainder, the seed breaking ties. The counts are the same every epoch, as MosaicML
 *   Streaming's stream proportions are; a part is never asked for more samples an epoch than
 *   it holds (an epoch holds each id once: the ledger's exactly-once is per id).
 * - **Which samples.** A part's samples come from its own seeded permutations, one per cycle:
 *   a cycle is cut into ⌊size / count⌋ chunks of `count`, epoch e takes chunk e mod that of
 *   cycle ⌊e / that⌋. Within a cycle no sample repeats; the `size mod count` left over are other
 *   samples each cycle.
 * - **Interleaving.** Sample j of a part's n gets the key (j + u) / n, u uniform, and the epoch
 *   is every part's samples by key: each part is spread evenly over the epoch (stratified,
 *   jittered), so every stretch of it — a batch, a rank's share — holds the parts close to
 *   their proportions, closer than drawing each position's part at random would. Over several
 *   ranks the keys order runs of `worldSize` samples of one part (each rank takes one of each
 *   run), so each rank's stride is stratified too; a mix's order therefore depends on the world
 *   size, and a mixed epoch resumes only on its own.
 */
import { CassetteError } from "../errors.ts";
import { rng, shuffle } from "./rng.ts";

/** One part of a mix: its ids, and either its weight or its fixed count per epoch. */
export interface MixPart {
  /** A name for messages and per-part figures (e.g. the dataset's). */
  name?: string;
  /** The part's sample ids (a split's, a dataset's). */
  ids: readonly string[];
  /** Relative share of the epoch beside the other weighted parts (default 1 when no count). */
  weight?: number;
  /** Samples of this part each epoch, whatever the weights (at most its size). */
  count?: number;
}

/** A Loader's `mix`: the parts, and the epoch's length (default: the longest that repeats no sample of a weighted part). */
export interface MixOptions {
  /** The parts, each with its ids and a weight or a count. */
  parts: readonly MixPart[];
  /** Samples an epoch (default: the longest that repeats no sample of a weighted part). */
  samples?: number;
}

/** Names a bad mix before anything is read: bad counts or weights, an id in two parts, or a part's id not among the split's `ids`. */
export function checkMix(mix: MixOptions, ids: readonly string[], seed: number): void {
  if (typeof mix !== "object" || mix === null || !Array.isArray(mix.parts)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot mix the datasets as 'mix' must be { parts: [{ ids, weight | count }, …] }: current value is ${mix}`);
  }
  mixCounts(mix.parts, seed, mix.samples);
  const all = new Set(ids);
  for (const [id, k] of partIndex(mix.parts)) {
    if (!all.has(id)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot mix the datasets as sample ${id} of ${mix.parts[k].name ?? `part ${k}`} is not among the loader's 'ids'`);
  }
}

/** Salt of the mix's PRNG streams: they draw apart from the epoch permutation's. */
const MIX = 0x4d49;

/**
 * Which part holds each id; an id found in two parts is named (an epoch reads an id once, so
 * the parts must not share one).
 */
export function partIndex(parts: readonly { name?: string; ids: readonly string[] }[]): Map<string, number> {
  const seen = new Map<string, number>();
  parts.forEach((p, k) => {
    for (const id of p.ids) {
      const other = seen.get(id);
      if (other !== undefined && other !== k) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot mix the datasets as sample ${id} is in ${parts[other].name ?? `part ${other}`} and in ${p.name ?? `part ${k}`}: the parts must not share ids`);
      }
      seen.set(id, k);
    }
  });
  return seen;
}

/** Samples each part gives every epoch (NOTE [ Mixing ]); `samples` sets the epoch's length. */
export function mixCounts(parts: readonly MixPart[], seed: number, samples?: number): number[] {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot mix the datasets as ${why}`);
  };
  if (!Array.isArray(parts) || parts.length === 0) bad("'mix' must list at least one part");
  const name = (i: number) => parts[i].name ?? `part ${i}`;
  parts.forEach((p, i) => {
    if (p.count !== undefined && p.weight !== undefined) bad(`${name(i)} gives both 'count' and 'weight': give one`);
    if (p.count !== undefined && !(Number.isInteger(p.count) && p.count >= 0 && p.count <= p.ids.length)) {
      bad(`${name(i)}'s 'count' must be a whole number from 0 to its ${p.ids.length} samples: current value is ${p.count}`);
    }
    if (p.weight !== undefined && !(Number.isFinite(p.weight) && p.weight > 0)) bad(`${name(i)}'s 'weight' must be a positive number: current value is ${p.weight}`);
  });
  const fixed = parts.reduce((n, p) => n + (p.count ?? 0), 0);
  const weighted = parts.map((p, i) => (p.count === undefined ? i : -1)).filter((i) => i >= 0);
  const w = (i: number) => parts[i].weight ?? 1;
  const total = weighted.reduce((s, i) => s + w(i), 0);
  // The largest epoch in which no weighted part repeats: each part's size over its share.
  const fits = weighted.length ? Math.floor(Math.min(...weighted.map((i) => parts[i].ids.length / (w(i) / total)))) : 0;
  const rest = samples === undefined ? fits : samples - fixed;
  if (samples !== undefined && !(Number.isInteger(samples) && samples >= fixed)) bad(`'samples' must be a whole number of at least the parts' counts (${fixed}): current value is ${samples}`);
  const counts = parts.map((p) => p.count ?? 0);
  if (!weighted.length) return counts;
  const exact = weighted.map((i) => (rest * w(i)) / total);
  weighted.forEach((i, k) => (counts[i] = Math.floor(exact[k])));
  // Largest remainder, ties in the seed's order.
  const r = rng(seed, MIX);
  const order = weighted.map((i, k) => ({ i, frac: exact[k] - Math.floor(exact[k]), tie: r.next() })).sort((a, b) => b.frac - a.frac || a.tie - b.tie);
  let left = rest - weighted.reduce((n, i) => n + counts[i], 0);
  for (const { i } of order) if (left-- > 0) counts[i]++;
  weighted.forEach((i) => {
    if (counts[i] > parts[i].ids.length) bad(`${name(i)} would give ${counts[i]} samples an epoch of its ${parts[i].ids.length} (an epoch reads an id once): lower 'samples' (at most ${fixed + fits}) or its weight`);
  });
  return counts;
}

/** The ids part `k` gives epoch `epoch`: its chunk of the cycle's permutation (NOTE [ Mixing ]). */
export function partShare(part: MixPart, k: number, count: number, seed: number, epoch: number): string[] {
  if (count === 0) return [];
  const n = part.ids.length;
  const perCycle = Math.floor(n / count);
  const cycle = Math.floor(epoch / perCycle), chunk = epoch % perCycle;
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  shuffle(order, rng(seed, MIX, k, cycle));
  return Array.from(order.subarray(chunk * count, (chunk + 1) * count), (i) => part.ids[i]);
}

/**
 * Epoch `epoch` of the mix, before ranks take their stride: every part's share, interleaved
 * in proportion (NOTE [ Mixing ]). With `ranks`, a part's samples go in runs of `ranks`
 * consecutive positions, so that each rank's stride meets the parts as the whole order does
 * (interleaved one by one, a stride of 2 over "a b b a a b" could take only a's); the runs a
 * part cannot fill close the epoch. The same parts, seed, epoch and ranks give the same order.
 */
export function mixOrder(parts: readonly MixPart[], o: { seed: number; epoch: number; samples?: number; ranks?: number }): string[] {
  const counts = mixCounts(parts, o.seed, o.samples);
  const ranks = o.ranks ?? 1;
  const r = rng(o.seed, o.epoch, MIX);
  const runs: { ids: string[]; key: number }[] = [];
  const tail: { ids: string[]; key: number }[] = [];
  parts.forEach((p, k) => {
    const share = partShare(p, k, counts[k], o.seed, o.epoch);
    const full = Math.floor(share.length / ranks);
    for (let j = 0; j < full; j++) runs.push({ ids: share.slice(j * ranks, (j + 1) * ranks), key: (j + r.next()) / full });
    const left = share.slice(full * ranks);
    left.forEach((id, j) => tail.push({ ids: [id], key: (j + r.next()) / left.length }));
  });
  const byKey = (a: { key: number }, b: { key: number }) => a.key - b.key;
  return [...runs.sort(byKey), ...tail.sort(byKey)].flatMap((x) => x.ids);
}
