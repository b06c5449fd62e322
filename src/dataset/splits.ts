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
  seed?: number;
}

export interface Split {
  name: string;
  /** Group keys (JSON arrays of the group columns' values). */
  groups: string[];
  ids: string[];
  /** Samples per label. */
  counts: Record<number, number>;
}

export interface SplitFile {
  version: 1;
  dataset: string;
  params: Required<Omit<SplitParams, "max">> & { max: number | null; specHash: string };
  splits: Split[];
}

export function defaultNames(n: number): string[] {
  return n === 2 ? ["train", "test"] : n === 3 ? ["train", "val", "test"] : Array.from({ length: n }, (_, i) => `split${i}`);
}

export function createSplits(spec: DatasetSpec, rows: readonly NatRow[], params: SplitParams): SplitFile {
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
  const seed = params.seed ?? 0;
  if (params.max !== undefined && !(Number.isInteger(params.max) && params.max > 0)) bad(`'max' must be a positive integer: current value is ${params.max}`);
  if (rows.length === 0) bad("the dataset has no rows");

  // 1. Groups, with their ids per class in a seeded order. Without group columns every
  // sample is its own group: one pseudo-group per class holds them, and step 3 cuts it.
  const labels = [...new Set(rows.map((r) => r.label))].sort((a, b) => a - b);
  const li = new Map(labels.map((l, i) => [l, i]));
  const K = labels.length;
  const groups = new Map<string, string[][]>();
  const ungrouped = groupBy.length === 0;
  for (const r of rows) {
    const key = ungrouped ? "" : JSON.stringify(groupBy.map((g) => r.meta[g] ?? null));
    let g = groups.get(key);
    if (!g) groups.set(key, (g = Array.from({ length: K }, () => [])));
    g[li.get(r.label)!].push(r.id);
  }
  const gKeys = [...groups.keys()].sort();
  for (const k of gKeys) for (const ids of groups.get(k)!) shuffle(ids.sort(), rng(seed, hash32(k)));
  const active = ratios.map((r, s) => [r, s]).filter(([r]) => r > 0).map(([, s]) => s);
  const groupCount = ungrouped ? rows.length : gKeys.length;
  if (active.length > groupCount) {
    bad(`${active.length} splits need at least ${active.length} groups and ${groupBy.length ? `'${groupBy.join(",")}' gives` : "there are"} ${groupCount}`);
  }

  // 2. Targets per split and class.
  const avail = labels.map((_, c) => gKeys.reduce((n, k) => n + groups.get(k)![c].length, 0));
  const balance = params.balance ?? "data";
  let w: number[];
  if (balance === "data") w = avail.slice();
  else if (balance === "equal") w = labels.map(() => 1);
  else {
    if (balance.length !== K || balance.some((x) => !(x >= 0))) {
      bad(`'balance' needs one non-negative weight per label (${K}: labels ${labels.join(",")}): current value is ${balance.join(",")}`);
    }
    w = balance.slice();
  }
  const wSum = w.reduce((a, b) => a + b, 0);
  if (!(wSum > 0)) bad("the balance weights are all zero");
  w = w.map((x) => x / wSum);
  let total = Math.min(params.max ?? Infinity, ...labels.map((_, c) => (w[c] > 0 ? avail[c] / w[c] : Infinity)));
  if (!Number.isFinite(total)) total = rows.length;
  const rSum = ratios.reduce((a, b) => a + b, 0);
  const target = ratios.map((r) => w.map((wc) => Math.floor((total * r * wc) / rSum + 1e-9)));

  if (ungrouped) return result(cutUngrouped(groups.get("")!, target, names));

  // 3. Assign groups.
  const order = shuffle(gKeys.slice(), rng(seed, 0x5eed));
  const size = (k: string) => groups.get(k)!.reduce((n, ids) => n + ids.length, 0);
  order.sort((a, b) => size(b) - size(a)); // stable: ties keep the seeded order
  const have = ratios.map(() => new Array(K).fill(0));
  const members: string[][] = ratios.map(() => []);
  const tie = rng(seed, 0x7e);
  const give = (k: string, s: number) => {
    members[s].push(k);
    groups.get(k)!.forEach((ids, c) => (have[s][c] += ids.length));
  };
  // Every active split first gets one group, the biggest splits the biggest groups.
  const bySize = active.slice().sort((a, b) => ratios[b] - ratios[a] || a - b);
  order.slice(0, active.length).forEach((k, i) => give(k, bySize[i]));
  for (const k of order.slice(active.length)) {
    const g = groups.get(k)!;
    let best = -1, bestOver = Infinity, bestNeed = -Infinity, bestTie = 0;
    for (const s of active) {
      let over = 0, need = 0;
      const tSum = target[s].reduce((a, b) => a + b, 0) || 1;
      for (let c = 0; c < K; c++) {
        over += Math.max(0, have[s][c] + g[c].length - target[s][c]);
        need += Math.max(0, target[s][c] - have[s][c]) / tSum;
      }
      const t = tie.next();
      if (over < bestOver || (over === bestOver && (need > bestNeed || (need === bestNeed && t > bestTie)))) {
        best = s; bestOver = over; bestNeed = need; bestTie = t;
      }
    }
    give(k, best);
  }

  // 4. Take rows round-robin across each split's groups, per class.
  const splits: Split[] = names.map((name, s) => {
    const gs = shuffle(members[s].slice().sort(), rng(seed, s, 0x77));
    const ids: string[] = [];
    const counts: Record<number, number> = {};
    const used = new Set<number>();
    const held = (c: number) => gs.reduce((n, k) => n + groups.get(k)![c].length, 0);
    const want = balance === "data" ? target[s] : balanced(target[s], held);
    if (ratios[s] > 0 && want.every((x) => x === 0) && target[s].some((x) => x > 0)) {
      const missing = labels.filter((_, c) => target[s][c] > 0 && held(c) === 0);
      // Else the scarcest class has some, too few for one of it beside the others' shares.
      const ratio = (c: number) => held(c) / target[s][c];
      const least = Math.min(...labels.map((_, c) => (target[s][c] > 0 ? ratio(c) : Infinity)));
      const scarce = labels.filter((_, c) => target[s][c] > 0 && ratio(c) === least);
      const why = missing.length ? `no samples of label ${missing.join(", ")}` : `too few samples of label ${scarce.join(", ")} to keep one of every class at its share`;
      bad(`split '${name}' would be empty: its groups hold ${why}, and the balance keeps every class at its share (use other ratios or seed, fewer splits, or --balance data)`);
    }
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

  return result(splits);

  /** Targets cut by the scarcest class's shortfall (what its groups hold ÷ its target), so their proportions hold. */
  function balanced(t: number[], held: (c: number) => number): number[] {
    let f = 1;
    for (let c = 0; c < K; c++) if (t[c] > 0) f = Math.min(f, held(c) / t[c]);
    if (f >= 1) return t;
    const cut = t.map((x) => Math.floor(x * f + 1e-9));
    // A class cut below one sample while another keeps some (weights 1:2:1 cut to 0/1/0): the
    // balance cannot hold at this size, and the split is empty rather than unbalanced.
    return t.some((x, c) => x > 0 && cut[c] === 0) ? t.map(() => 0) : cut;
  }

  function result(splits: Split[]): SplitFile {
    return {
      version: 1,
      dataset: spec.name,
      params: { ratios, names, groupBy, balance, max: params.max ?? null, seed, specHash: specHash(spec) },
      splits,
    };
  }

  /** Without groups: each class's shuffled ids are cut into consecutive runs per split. */
  function cutUngrouped(perClass: string[][], target: number[][], names: string[]): Split[] {
    const cursor = perClass.map(() => 0);
    return names.map((name, s) => {
      const ids: string[] = [];
      const counts: Record<number, number> = {};
      perClass.forEach((list, c) => {
        const take = Math.min(target[s][c], list.length - cursor[c]);
        for (let k = 0; k < take; k++) ids.push(list[cursor[c]++]);
        if (take > 0) counts[labels[c]] = take;
      });
      return { name, groups: [], ids: shuffle(ids, rng(seed, s, 0x77)), counts };
    });
  }
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

/** One split of a file by `FILE:INDEX` or `FILE:NAME` (default: the first). */
export async function loadSplit(ref: string): Promise<{ file: SplitFile; split: Split }> {
  const m = /^(.*?)(?::([^:/\\]+))?$/.exec(ref)!;
  const file = await loadSplits(m[1]);
  const sel = m[2];
  const split = sel === undefined ? file.splits[0] : /^\d+$/.test(sel) ? file.splits[Number(sel)] : file.splits.find((s) => s.name === sel);
  if (!split) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot use split '${sel}' of '${m[1]}': it has ${file.splits.map((s, i) => `${i}:${s.name}`).join(", ")}`);
  }
  return { file, split };
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
