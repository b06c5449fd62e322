/**
 * Splits from metadata ("Scaling DL data management with Cassandra DB" (IEEE BigData 2021), §4.1,
 * the list manager), done with care:
 *
 *   1. rows of metadata_by_nat are grouped by the chosen columns (e.g. patient_id): a group
 *      never lands in two splits, so nothing leaks from train to test;
 *   2. targets per split and class come from the ratios, the class balance ("data": as in the
 *      data; "equal"; or explicit weights) and an optional total, shrunk to what the rarest
 *      weighted class allows;
 *   3. groups, largest first (ties in seeded order), go to the split where they overflow the
 *      targets least, preferring the split that needs them most; every split with a
 *      non-zero ratio gets a group before any gets two;
 *   4. within a split, rows are taken round-robin across its groups per class (diversity)
 *      until the targets are met. With a balance ("equal" or weights), a class that its
 *      groups cannot fill cuts the split's other classes in proportion, so the balance holds
 *      in every split ("data" takes what there is).
 * Deterministic for a seed. A split is only a list of ids: any store can serve it.
 */
import { CassetteError } from "../errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { hash32, rng, shuffle } from "../plan/rng.ts";
import { column, type DatasetSpec, specHash } from "./spec.ts";
import type { NatRow } from "./store.ts";

/** How `createSplits` divides a dataset: the ratios, names, grouping columns, class balance, total and seed. */
export interface SplitParams {
  /** Relative sizes, e.g. [7, 2, 1]. */
  ratios: number[];
  /** Split names; default train,test / train,val,test / split0… */
  names?: string[];
  /** Columns whose values form a group; default: each sample is its own group. */
  groupBy?: string[];
  /** Class weights: "data" (as in the data, default), "equal", or one weight per label in ascending label order. */
  balance?: "data" | "equal" | number[];
  /** Total samples over all splits (default: as many as the targets allow). */
  max?: number;
  /** Seed of the random choices (which rows, in which order; default 0): the same seed gives the same splits. */
  seed?: number;
}

/** One split of a dataset: its name, the groups it holds, and its samples' ids. */
export interface Split {
  /** The split's name (train, test, …). */
  name: string;
  /** Group keys (JSON arrays of the group columns' values). */
  groups: string[];
  /** The ids of the split's samples. */
  ids: string[];
  /** Samples per label. */
  counts: Record<number, number>;
}

/** The splits of one dataset as `saveSplits` writes them to a JSON file, with the parameters and the spec's hash they were made with. */
export interface SplitFile {
  /** The file format's version, 1. */
  version: 1;
  /** The dataset the splits were made from. */
  dataset: string;
  /** The parameters the splits were made with, and the hash of the dataset's spec at the time; `folds` for k-fold splits (createFolds). */
  params: Required<Omit<SplitParams, "max">> & { max: number | null; specHash: string; folds?: number };
  /** The splits, in the order of `params.names`. */
  splits: Split[];
}

/** k-fold cross-validation splits (createFolds). */
export interface FoldParams {
  /** How many folds (≥ 2). */
  folds: number;
  /** Columns whose values form a group; a group's samples all go to one fold. */
  groupBy?: string[];
  /** Seed (default 0): the same seed gives the same folds. */
  seed?: number;
}

export function defaultNames(n: number): string[] {
  return n === 2 ? ["train", "test"] : n === 3 ? ["train", "val", "test"] : Array.from({ length: n }, (_, i) => `split${i}`);
}

/** Divides a dataset's samples (the rows of `store.scanNat`) into splits by the ratios, never putting one group in two splits; deterministic for a seed. */
export function createSplits(spec: DatasetSpec, rows: readonly NatRow[], params: SplitParams): SplitFile {
  const p = checkParams(spec, rows, params);
  const g = groupRows(rows, p);
  const target = targets(g, p, rows.length);
  const splits = g.ungrouped ? cutUngrouped(g, target, p) : takeRows(g, assignGroups(g, target, p), target, p);
  const { ratios, names, groupBy, balance, seed } = p;
  return { version: 1, dataset: spec.name, params: { ratios, names, groupBy, balance, max: params.max ?? null, seed, specHash: specHash(spec) }, splits };
}

/** The parameters checked, with their defaults, and how to refuse them. */
interface Params {
  ratios: number[];
  names: string[];
  groupBy: string[];
  balance: "data" | "equal" | number[];
  max?: number;
  seed: number;
  /** The split indices with a non-zero ratio. */
  active: number[];
  bad: (why: string) => never;
}

function checkParams(spec: DatasetSpec, rows: readonly NatRow[], params: SplitParams): Params {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot make splits of '${spec.name}' as ${why}`);
  };
  const ratios = params.ratios;
  if (ratios.length === 0 || ratios.some((r) => !(r >= 0) || !Number.isFinite(r)) || !ratios.some((r) => r > 0)) {
    bad(`'ratios' must be non-negative numbers, at least one positive: current value is ${JSON.stringify(ratios)}`);
  }
  const names = params.names ?? defaultNames(ratios.length);
  if (names.length !== ratios.length) bad(`there are ${ratios.length} ratios but ${names.length} names`);
  if (new Set(names).size !== names.length) bad(`split names repeat: ${names.join(",")}`);
  const groupBy = params.groupBy ?? [];
  for (const g of groupBy) column(spec, g);
  if (params.max !== undefined && !(Number.isInteger(params.max) && params.max > 0)) bad(`'max' must be a positive integer: current value is ${params.max}`);
  if (rows.length === 0) bad("the dataset has no rows");
  const active = ratios.map((r, s) => [r, s]).filter(([r]) => r > 0).map(([, s]) => s);
  return { ratios, names, groupBy, balance: params.balance ?? "data", max: params.max, seed: params.seed ?? 0, active, bad };
}

/** Step 1: the rows by group, each group's ids per class in a seeded order. */
interface Grouped {
  /** The labels present, ascending; a class is an index into them. */
  labels: number[];
  /** Group key → ids per class. Without group columns one pseudo-group, "", holds every sample. */
  groups: Map<string, string[][]>;
  /** The group keys, sorted. */
  keys: string[];
  ungrouped: boolean;
}

function groupRows(rows: readonly NatRow[], p: Params): Grouped {
  const labels = [...new Set(rows.map((r) => r.label))].sort((a, b) => a - b);
  const li = new Map(labels.map((l, i) => [l, i]));
  const groups = new Map<string, string[][]>();
  const ungrouped = p.groupBy.length === 0;
  for (const r of rows) {
    const key = ungrouped ? "" : JSON.stringify(p.groupBy.map((g) => r.meta[g] ?? null));
    let g = groups.get(key);
    if (!g) groups.set(key, (g = Array.from({ length: labels.length }, () => [])));
    g[li.get(r.label)!].push(r.id);
  }
  const keys = [...groups.keys()].sort();
  for (const k of keys) for (const ids of groups.get(k)!) shuffle(ids.sort(), rng(p.seed, hash32(k)));
  const groupCount = ungrouped ? rows.length : keys.length;
  if (p.active.length > groupCount) {
    p.bad(`${p.active.length} splits need at least ${p.active.length} groups and ${p.groupBy.length ? `'${p.groupBy.join(",")}' gives` : "there are"} ${groupCount}`);
  }
  return { labels, groups, keys, ungrouped };
}

/** Step 2: samples wanted per split and class, from the ratios, the balance and the total. */
function targets(g: Grouped, p: Params, rowCount: number): number[][] {
  const { labels } = g, K = labels.length;
  const avail = labels.map((_, c) => g.keys.reduce((n, k) => n + g.groups.get(k)![c].length, 0));
  let w: number[];
  if (p.balance === "data") w = avail.slice();
  else if (p.balance === "equal") w = labels.map(() => 1);
  else {
    if (p.balance.length !== K || p.balance.some((x) => !(x >= 0))) {
      p.bad(`'balance' needs one non-negative weight per label (${K}: labels ${labels.join(",")}): current value is ${p.balance.join(",")}`);
    }
    w = p.balance.slice();
  }
  const wSum = w.reduce((a, b) => a + b, 0);
  if (!(wSum > 0)) p.bad("the balance weights are all zero");
  w = w.map((x) => x / wSum);
  let total = Math.min(p.max ?? Infinity, ...labels.map((_, c) => (w[c] > 0 ? avail[c] / w[c] : Infinity)));
  if (!Number.isFinite(total)) total = rowCount;
  const rSum = p.ratios.reduce((a, b) => a + b, 0);
  return p.ratios.map((r) => w.map((wc) => Math.floor((total * r * wc) / rSum + 1e-9)));
}

/**
 * Step 3: each group to a split, largest first (ties in seeded order), where it overflows the
 * targets least, then where it is needed most; every active split gets one group first, the
 * biggest splits the biggest groups. Answers each split's group keys.
 */
function assignGroups(g: Grouped, target: number[][], p: Params): string[][] {
  const K = g.labels.length;
  const order = shuffle(g.keys.slice(), rng(p.seed, 0x5eed));
  const size = (k: string) => g.groups.get(k)!.reduce((n, ids) => n + ids.length, 0);
  order.sort((a, b) => size(b) - size(a)); // stable: ties keep the seeded order
  const have = p.ratios.map(() => new Array(K).fill(0));
  const members: string[][] = p.ratios.map(() => []);
  const tie = rng(p.seed, 0x7e);
  const give = (k: string, s: number) => {
    members[s].push(k);
    g.groups.get(k)!.forEach((ids, c) => (have[s][c] += ids.length));
  };
  const bySize = p.active.slice().sort((a, b) => p.ratios[b] - p.ratios[a] || a - b);
  order.slice(0, p.active.length).forEach((k, i) => give(k, bySize[i]));
  for (const k of order.slice(p.active.length)) {
    const ids = g.groups.get(k)!;
    let best = -1, bestOver = Infinity, bestNeed = -Infinity, bestTie = 0;
    for (const s of p.active) {
      let over = 0, need = 0;
      const tSum = target[s].reduce((a, b) => a + b, 0) || 1;
      for (let c = 0; c < K; c++) {
        over += Math.max(0, have[s][c] + ids[c].length - target[s][c]);
        need += Math.max(0, target[s][c] - have[s][c]) / tSum;
      }
      const t = tie.next();
      if (over < bestOver || (over === bestOver && (need > bestNeed || (need === bestNeed && t > bestTie)))) {
        best = s, bestOver = over, bestNeed = need, bestTie = t;
      }
    }
    give(k, best);
  }
  return members;
}

/** Step 4: within each split, rows round-robin across its groups, per class, up to the (balanced) targets. */
function takeRows(g: Grouped, members: string[][], target: number[][], p: Params): Split[] {
  const { labels, groups } = g, K = labels.length;
  return p.names.map((name, s) => {
    const gs = shuffle(members[s].slice().sort(), rng(p.seed, s, 0x77));
    const ids: string[] = [];
    const counts: Record<number, number> = {};
    const used = new Set<number>();
    const held = (c: number) => gs.reduce((n, k) => n + groups.get(k)![c].length, 0);
    const want = p.balance === "data" ? target[s] : balanced(target[s], held);
    if (p.ratios[s] > 0 && want.every((x) => x === 0) && target[s].some((x) => x > 0)) emptySplit(name, target[s], held, labels, p);
    for (let c = 0; c < K; c++) {
      const cursors = gs.map(() => 0);
      let taken = 0;
      for (let progress = true; taken < want[c] && progress;) {
        progress = false;
        for (let j = 0; j < gs.length && taken < want[c]; j++) {
          const list = groups.get(gs[j])![c];
          if (cursors[j] < list.length) {
            ids.push(list[cursors[j]++]);
            used.add(j);
            taken++;
            progress = true;
          }
        }
      }
      if (taken) counts[labels[c]] = taken;
    }
    // Only groups that gave rows: a group assigned but not needed (targets met) stays free.
    return { name, groups: gs.filter((_, j) => used.has(j)), ids, counts };
  });
}

/** A balanced split its groups cannot fill at all: refused, naming the class that is missing or too scarce. */
function emptySplit(name: string, target: number[], held: (c: number) => number, labels: number[], p: Params): never {
  const missing = labels.filter((_, c) => target[c] > 0 && held(c) === 0);
  // Else the scarcest class has some, too few for one of it beside the others' shares.
  const ratio = (c: number) => held(c) / target[c];
  const least = Math.min(...labels.map((_, c) => (target[c] > 0 ? ratio(c) : Infinity)));
  const scarce = labels.filter((_, c) => target[c] > 0 && ratio(c) === least);
  const why = missing.length ? `no samples of label ${missing.join(", ")}` : `too few samples of label ${scarce.join(", ")} to keep one of every class at its share`;
  return p.bad(`split '${name}' would be empty: its groups hold ${why}, and the balance keeps every class at its share (use other ratios or seed, fewer splits, or --balance data)`);
}

/** Targets cut by the scarcest class's shortfall (what its groups hold ÷ its target), so their proportions hold. */
function balanced(t: number[], held: (c: number) => number): number[] {
  let f = 1;
  for (let c = 0; c < t.length; c++) if (t[c] > 0) f = Math.min(f, held(c) / t[c]);
  if (f >= 1) return t;
  const cut = t.map((x) => Math.floor(x * f + 1e-9));
  // A class cut below one sample while another keeps some (weights 1:2:1 cut to 0/1/0): the
  // balance cannot hold at this size, and the split is empty rather than unbalanced.
  return t.some((x, c) => x > 0 && cut[c] === 0) ? t.map(() => 0) : cut;
}

/** Without groups: each class's shuffled ids are cut into consecutive runs per split. */
function cutUngrouped(g: Grouped, target: number[][], p: Params): Split[] {
  const perClass = g.groups.get("")!;
  const cursor = perClass.map(() => 0);
  return p.names.map((name, s) => {
    const ids: string[] = [];
    const counts: Record<number, number> = {};
    perClass.forEach((list, c) => {
      const take = Math.min(target[s][c], list.length - cursor[c]);
      for (let k = 0; k < take; k++) ids.push(list[cursor[c]++]);
      if (take > 0) counts[g.labels[c]] = take;
    });
    return { name, groups: [], ids: shuffle(ids, rng(p.seed, s, 0x77)), counts };
  });
}

/**
 * k-fold cross-validation: `folds` splits named fold0…, every sample in exactly one of them
 * (so each is the validation fold of one round, and the others its training set: loadSplit's
 * `FILE:!fold2`). Groups never straddle two folds; classes are spread over the folds as they
 * are in the data (stratified): without groups, each class's shuffled ids are dealt in turn, so
 * fold sizes differ by at most one; with groups, groups go largest first to the fold they
 * overflow least (createSplits' step 3) and bring all their samples. Deterministic for a seed.
 */
export function createFolds(spec: DatasetSpec, rows: readonly NatRow[], params: FoldParams): SplitFile {
  const k = params.folds;
  if (!Number.isInteger(k) || k < 2) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot make folds of '${spec.name}' as 'folds' must be an integer ≥ 2: current value is ${k}`);
  }
  const names = Array.from({ length: k }, (_, i) => `fold${i}`);
  const p = checkParams(spec, rows, { ratios: names.map(() => 1), names, groupBy: params.groupBy, seed: params.seed });
  const g = groupRows(rows, p);
  const splits = g.ungrouped ? dealUngrouped(g, p) : everyRow(g, assignGroups(g, targets(g, p, rows.length), p), p);
  return {
    version: 1, dataset: spec.name,
    params: { ratios: p.ratios, names, groupBy: p.groupBy, balance: "data", max: null, seed: p.seed, specHash: specHash(spec), folds: k },
    splits,
  };
}

/** Folds without groups: each class's shuffled ids dealt to the folds in turn, continuing where the last class stopped. */
function dealUngrouped(g: Grouped, p: Params): Split[] {
  const k = p.names.length;
  const ids: string[][] = p.names.map(() => []);
  const counts: Record<number, number>[] = p.names.map(() => ({}));
  let next = 0;
  g.groups.get("")!.forEach((list, c) => {
    for (const id of list) {
      ids[next].push(id);
      counts[next][g.labels[c]] = (counts[next][g.labels[c]] ?? 0) + 1;
      next = (next + 1) % k;
    }
  });
  return p.names.map((name, s) => ({ name, groups: [], ids: shuffle(ids[s], rng(p.seed, s, 0x77)), counts: counts[s] }));
}

/** Every row of each split's groups, round-robin across its groups per class (takeRows without targets). */
function everyRow(g: Grouped, members: string[][], p: Params): Split[] {
  const all = g.labels.map((_, c) => g.keys.reduce((n, key) => n + g.groups.get(key)![c].length, 0));
  return takeRows(g, members, p.names.map(() => all), { ...p, balance: "data" });
}

/** Writes a split file (JSON). */
export async function saveSplits(path: string, file: SplitFile): Promise<void> {
  await runtime.writeFile(path, new TextEncoder().encode(JSON.stringify(file)));
}

/**
 * Reads a split file, checking its shape; errors name the file and what is wrong.
 *
 * @example
 * ```ts
 * import { loadSplits } from "cassette";
 * try {
 *   await loadSplits(".tmp/no-such-splits.json");
 * } catch (e) {
 *   console.log((e as { code: string }).code); // ERR_INVALID_OPTION
 * }
 * ```
 */
export async function loadSplits(path: string): Promise<SplitFile> {
  let text: string;
  try {
    text = new TextDecoder().decode(await runtime.readFile(path));
  } catch {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot read split file '${path}': it does not exist or cannot be read`);
  }
  let f: SplitFile;
  try {
    f = JSON.parse(text);
  } catch (e) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read split file '${path}' as it is not JSON: ${(e as Error).message}`);
  }
  if (f?.version !== 1) throw new CassetteError("ERR_UNSUPPORTED", `Cannot read split file '${path}' as its version is ${f?.version}: this cassette reads version 1`);
  if (typeof f.dataset !== "string" || !Array.isArray(f.splits) || f.splits.some((s) => typeof s?.name !== "string" || !Array.isArray(s.ids))) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read split file '${path}' as it lacks 'dataset' or 'splits' with a name and ids each`);
  }
  return f;
}

/**
 * One split of a file by `FILE:INDEX` or `FILE:NAME` (default: the first), or every split but
 * one by `FILE:!INDEX` or `FILE:!NAME` (a k-fold round's training set: createFolds), their ids
 * in the file's order.
 */
export async function loadSplit(ref: string): Promise<{ file: SplitFile; split: Split }> {
  const m = /^(.*?)(?::(!?)([^:/\\]+))?$/.exec(ref)!;
  const file = await loadSplits(m[1]);
  const sel = m[3];
  const split = sel === undefined ? file.splits[0] : /^\d+$/.test(sel) ? file.splits[Number(sel)] : file.splits.find((s) => s.name === sel);
  if (!split) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot use split '${m[2]}${sel}' of '${m[1]}': it has ${file.splits.map((s, i) => `${i}:${s.name}`).join(", ")}`);
  }
  if (!m[2]) return { file, split };
  const rest = file.splits.filter((s) => s !== split);
  const counts: Record<number, number> = {};
  for (const s of rest) for (const [label, n] of Object.entries(s.counts)) counts[Number(label)] = (counts[Number(label)] ?? 0) + n;
  return { file, split: { name: `!${split.name}`, groups: rest.flatMap((s) => s.groups), ids: rest.flatMap((s) => s.ids), counts } };
}

/** The summary table: rows are splits, columns classes, plus group counts when the splits were grouped. */
export function formatSplits(file: SplitFile, classes?: string[]): string {
  const labels = [...new Set(file.splits.flatMap((s) => Object.keys(s.counts).map(Number)))].sort((a, b) => a - b);
  // Without a group-by every split reads "groups 0": the column is left out.
  const grouped = (file.params.groupBy?.length ?? 0) > 0;
  const head = ["split", ...labels.map((l) => classes?.[l] ?? String(l)), "total", ...(grouped ? ["groups"] : [])];
  const body = file.splits.map((s) => [s.name, ...labels.map((l) => String(s.counts[l] ?? 0)), String(s.ids.length), ...(grouped ? [String(s.groups.length)] : [])]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  return [head, ...body].map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ")).join("\n");
}
