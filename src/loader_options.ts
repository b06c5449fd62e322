/**
 * A Loader's options, grouped by purpose (as MosaicML's StreamingDataset documents its
 * arguments by group: https://docs.mosaicml.com/projects/streaming/en/stable/api_reference/generated/streaming.StreamingDataset.html):
 *
 *   what to read   store, dataset, ids                      (top level: they say what, not how)
 *   plan           which samples, in which order, per rank  (src/plan/epoch.ts PlanOptions)
 *   window         how much is in flight, and in what order (src/schedule/epochs.ts WindowOptions)
 *   faults         what a failing or lagging sample costs   (src/read/read_path.ts FaultOptions)
 *   cpu            where reading, decoding, transforms run  (src/read/open.ts CpuOptions)
 *   lifecycle      where a run starts and what stops it     (LifecycleOptions, here)
 *   source         the source's own settings                (src/source/kinds.ts SourceSettings)
 *
 * Each group's type is declared once, in the room that reads it, and `open()`'s options share
 * the cpu and source groups. Every option is also accepted under its flat name, as before
 * (`{ prefetch: 8 }` is `{ window: { prefetch: 8 } }`): the flat names are the groups' fields
 * themselves, so no option is declared twice. `OPTION_GROUPS` lists them: one row per option,
 * and a typecheck fails where a group's type has a field without its row.
 * `resolveLoaderOptions` merges both forms once, in the Loader's constructor; the rest of the
 * Loader reads only what it returns.
 */
import { CassetteError } from "./errors.ts";
import type { PlanOptions } from "./plan/epoch.ts";
import type { WindowOptions } from "./schedule/epochs.ts";
import type { LoaderState } from "./schedule/resume.ts";
import type { FaultOptions } from "./read/read_path.ts";
import type { CpuOptions } from "./read/open.ts";
import type { Sample } from "./read/sample.ts";
import type { SourceSettings, } from "./source/kinds.ts";
import type { Source } from "./source/source.ts";
import type { Store } from "./dataset/store.ts";
import type { TransformModule } from "./decode/transform.ts";

export type { CpuOptions, FaultOptions, PlanOptions, SourceSettings, WindowOptions };

/** Where a Loader's run starts, and what stops it. */
export interface LifecycleOptions {
  /**
   * Continue from `loader.state()` of an earlier run with the same ids and plan options: the
   * first `epoch(state.epoch)` reads only the samples not handed over then (whatever order
   * they left in); a state from other ids, seed, rank or batch options is refused by name.
   */
  resume?: LoaderState;
  /** Aborting it stops the epoch being read: its iterator throws a CassetteError. */
  signal?: AbortSignal;
}

/** A transform a Loader takes: a module (run where samples are decoded) or a function (run on the loader's thread). */
export type LoaderTransform<T = Sample> = ((s: Sample) => T | Promise<T>) | TransformModule;

/** A Loader's option groups, by name. */
export interface LoaderGroups<T = Sample> {
  /** Which samples, in which order, per rank: batch size, shuffle, seed, ranks, dropLast, pad, rankShards, mix. */
  plan: PlanOptions;
  /** How much is in flight, and in what order batches leave: prefetch, its bounds, the ramp, order, read-ahead. */
  window: WindowOptions;
  /** What a failing or lagging sample costs: retries, onError, hedging, the tail's re-asks. */
  faults: FaultOptions;
  /** Where reading, decoding and transforms run: read workers, decode, the decode pool, transform, the slow lane. */
  cpu: CpuOptions<LoaderTransform<T>>;
  /** Where a run starts and what stops it: resume, signal. */
  lifecycle: LifecycleOptions;
  /** The source's own settings: balance, requests in flight, the local cache. */
  source: SourceSettings;
}

/** What a Loader reads: the store and the split's ids. */
export interface LoaderTarget {
  /**
   * A store address (`sqlite:PATH`, `cassandra://…`, `http(s)://HOST/PREFIX`, `s3://…`, `file:DIR`, `wds:…`,
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
}

/** Every grouped option under its flat name too (`prefetch` for `window.prefetch`): the same fields, not declared again. */
export type FlatLoaderOptions<T = Sample> = PlanOptions & WindowOptions & FaultOptions & CpuOptions<LoaderTransform<T>> & LifecycleOptions & SourceSettings;

/**
 * Everything a `Loader` needs: what to read (store, dataset, ids), and how, in groups — `plan`,
 * `window`, `faults`, `cpu`, `lifecycle`, `source` — or under the options' flat names. The
 * batch size is needed, as `batchSize` or `plan.batchSize`.
 */
export type LoaderOptions<T = Sample> =
  & LoaderTarget
  & Partial<LoaderGroups<T>>
  & FlatLoaderOptions<T>
  & ({ batchSize: number } | { plan: PlanOptions & { batchSize: number } });

/**
 * Each group's options: one row per option, the group's field and its flat alias alike. The
 * type makes a row necessary for every field of a group's type (a new option without one does
 * not typecheck), and test/loader/options.test.ts checks each row both ways.
 */
export const OPTION_GROUPS = {
  plan: { batchSize: true, shuffle: true, seed: true, rank: true, worldSize: true, dropLast: true, pad: true, rankShards: true, mix: true },
  window: { prefetch: true, maxPrefetch: true, maxPrefetchBytes: true, rampStart: true, order: true, readAhead: true },
  faults: { retries: true, onError: true, hedge: true, reaskTail: true },
  cpu: { workers: true, decode: true, decodeWorkers: true, transform: true, slowLane: true },
  lifecycle: { resume: true, signal: true },
  source: { balance: true, maxInFlight: true, cache: true },
} as const satisfies { readonly [G in keyof LoaderGroups]: { readonly [K in keyof LoaderGroups[G]]-?: true } };

/** A Loader's options with both forms merged: every group present, each option where it belongs (undefined where neither form gave it). */
export interface ResolvedLoaderOptions<T = Sample> extends LoaderTarget, LoaderGroups<T> {
  plan: PlanOptions & { batchSize: number };
}

/**
 * Merges the grouped and the flat forms, once. A group that is not an object, an option that
 * is not its group's, and an option given both ways with different values are named errors
 * (ERR_INVALID_OPTION); the values themselves are checked by the Loader.
 */
export function resolveLoaderOptions<T>(options: LoaderOptions<T>, what = "Cannot create a Loader"): ResolvedLoaderOptions<T> {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `${what} as ${why}`);
  };
  if (typeof options !== "object" || options === null) bad(`its options must be an object: current value is ${options}`);
  const given = options as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = { store: options.store, dataset: options.dataset, ids: options.ids };
  for (const [group, rows] of Object.entries(OPTION_GROUPS)) {
    const inGroup = given[group];
    if (inGroup !== undefined && (typeof inGroup !== "object" || inGroup === null || Array.isArray(inGroup))) {
      bad(`'${group}' must be an object of options: current value is ${show(inGroup)}`);
    }
    const grouped = (inGroup ?? {}) as Record<string, unknown>;
    for (const name of Object.keys(grouped)) {
      if (!(name in rows)) bad(`'${group}.${name}' is not an option of '${group}': its options are ${Object.keys(rows).join(", ")}${home(name)}`);
    }
    const merged: Record<string, unknown> = {};
    for (const name of Object.keys(rows)) {
      const flat = given[name], inside = grouped[name];
      if (flat !== undefined && inside !== undefined && !same(flat, inside)) {
        bad(`'${name}' (${show(flat)}) and '${group}.${name}' (${show(inside)}) disagree: give one`);
      }
      merged[name] = inside ?? flat;
    }
    out[group] = merged;
  }
  return out as unknown as ResolvedLoaderOptions<T>;
}

/** ", 'x' is an option of 'g'" where a misplaced option has a group. */
function home(name: string): string {
  const group = Object.entries(OPTION_GROUPS).find(([, rows]) => name in rows)?.[0];
  return group ? ` ('${name}' is an option of '${group}')` : "";
}

/** The same value: the same thing, or plain data of the same content (a `hedge` or `decode` object written twice). */
function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (!isPlain(a) || !isPlain(b)) return false;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
}

function isPlain(x: unknown): boolean {
  if (typeof x !== "object" || x === null) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null || Array.isArray(x);
}

function show(x: unknown): string {
  if (typeof x === "function") return "a function";
  if (typeof x === "string") return JSON.stringify(x);
  if (isPlain(x)) {
    try {
      return JSON.stringify(x);
    } catch { /* a cycle: named by its type below */ }
  }
  return typeof x === "object" && x !== null ? `a ${x.constructor?.name ?? "object"}` : String(x);
}
