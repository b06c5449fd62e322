/**
 * Where a Loader stands, as a small value a checkpoint can keep (`Loader.state()`), and how a
 * new Loader continues from it (`resume`).
 *
 * What was handed over is a bitmap over the epoch's plan positions, not a list of ids: one bit
 * a sample (60 000 samples: 7.5 kB), and it holds whatever subset ready order delivered, not
 * only a prefix. The plan is a pure value of (ids, seed, epoch, rank, worldSize, shuffle,
 * batchSize, dropLast) (src/plan/epoch.ts), so the state keeps those options and a digest of
 * the plan itself: a resume with other ids or options is refused by name, instead of skipping
 * the wrong samples.
 *
 * NOTE [ Elastic resume ]: a job stopped on N ranks may go on on M. No rank's state says what
 * the others handed over, so a state alone resumes only on its own world size; `mergeStates`
 * folds all N ranks' states of an epoch into one bitmap over the epoch's whole order (every
 * rank's plan is cut from that one order, src/plan/epoch.ts: rank r's position k is the order's
 * r + k·N, of what an earlier resume left), and returns it as the state of one rank with the rest
 * of the epoch to read (worldSize 1). Resumed on M ranks, the rest is strided over them (the
 * plan's `before`), with dropLast and pad applied to that rest; the epochs after it are planned
 * for M ranks as usual. Their states carry the same `before`, so they merge again. Samples handed
 * over as pad's repeats count as handed over: they are not read again.
 */
import { CassetteError, type ErrorCode } from "../errors.ts";
import { bitSet, leftCount, planLength } from "../plan/epoch.ts";

/** The options a state must agree on to apply to a loader: what decides the plan. */
export interface PlanIdentity {
  /** The loader's seed. */
  seed: number;
  /** The loader's rank. */
  rank: number;
  /** The loader's world size. */
  worldSize: number;
  /** Whether the loader shuffles. */
  shuffle: boolean;
  /** The loader's batch size. */
  batchSize: number;
  /** Whether the loader drops short batches. */
  dropLast: boolean;
  /** Whether the loader pads ranks to the same length (states taken before `pad` existed have none: false). */
  pad?: boolean;
  /** Whether each rank streams its own shards (`rankShards`; states taken before it existed have none: false). */
  rankShards?: boolean;
}

/** Where a Loader stands (`Loader.state()`), as JSON a checkpoint can keep: the epoch, the plan's options and digest, and which samples were handed over; give it as `resume` to continue. */
export interface LoaderState extends PlanIdentity {
  /** Tells a loader state from other JSON. */
  format: "cassette-loader-state";
  /** The format's version, 1. */
  version: 1;
  /** The epoch to continue (the one in progress, or the next once an epoch has ended). */
  epoch: number;
  /** Samples in this rank's plan of `epoch`. */
  planned: number;
  /** A 64-bit digest (hex) of the plan's ids in order (`planDigest`). */
  plan: string;
  /** Samples of `epoch` handed over so far. */
  handed: number;
  /** Base64 of a bitmap over the plan's positions: bit i (byte i >> 3, bit i & 7) set = handed over. */
  bitmap: string;
  /** Samples in the epoch's whole order, every rank's (`epochSequence`). States taken before elastic resume have none. */
  samples?: number;
  /** A 64-bit digest (hex) of the epoch's whole order, the same on every rank: what a merged state is checked by. States taken before elastic resume have none. */
  order?: string;
  /**
   * Base64 of a bitmap over the epoch's whole order: the samples handed over before this rank's
   * plan was drawn (an elastic resume, NOTE [ Elastic resume ]); this rank's plan is the rest of
   * the order strided over `worldSize`. Absent: none.
   */
  before?: string;
}

/** What a state says of the epoch's whole order, every rank's: its length, its digest (made when first asked), and what was handed over before this plan was drawn. */
export interface WholeOrder {
  samples: number;
  digest: () => string;
  before?: Uint8Array;
}

/** A digest of the plan's ids in order: 64 bits as two 32-bit lanes, no BigInt. */
export function planDigest(plan: readonly string[]): string {
  // FNV-1a, and beside it a second stream with another offset and a shift-xor per step, so a
  // collision needs both to collide. Ids are separated by a newline (10).
  let a = 0x811c9dc5, b = 0x050c5d1f;
  for (const id of plan) {
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000193);
      b ^= b >>> 15;
    }
    a = Math.imul(a ^ 10, 0x01000193);
    b = Math.imul(b ^ 10, 0x01000193);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/**
 * Which plan positions of one epoch were handed over, recorded as batches leave the loader.
 * A batch is only kept by reference when it leaves; the id → position map and the bits are made
 * when a state is asked for, so a loader nobody checkpoints pays nothing per epoch.
 */
export class HandedOver {
  readonly epoch: number;
  readonly #plan: readonly string[];
  #positions?: Map<string, number>;
  readonly #bits: Uint8Array;
  #count = 0;
  /** Batches' ids handed over since the bits were last brought up to date. */
  #pending: (readonly string[])[] = [];
  /** The epoch's iteration ended (every sample handed over or given up on). */
  finished = false;

  readonly #whole: WholeOrder;
  #digest?: string;

  constructor(epoch: number, plan: readonly string[], whole: WholeOrder, bits?: Uint8Array) {
    this.epoch = epoch;
    this.#plan = plan;
    this.#whole = whole;
    this.#bits = new Uint8Array((plan.length + 7) >> 3);
    if (bits) {
      this.#bits.set(bits);
      for (let i = 0; i < plan.length; i++) if (this.#has(i)) this.#count++;
    }
  }

  #has(pos: number): boolean {
    return (this.#bits[pos >> 3] & (1 << (pos & 7))) !== 0;
  }

  /** The ids of a batch just handed over. */
  mark(ids: readonly string[]): void {
    this.#pending.push(ids);
  }

  /** Sets the bits of the batches handed over since the last call. */
  #fold(): void {
    if (this.#pending.length === 0) return;
    const at = this.#positions ??= new Map(this.#plan.map((id, i) => [id, i]));
    for (const ids of this.#pending) {
      for (const id of ids) {
        const pos = at.get(id);
        if (pos === undefined || this.#has(pos)) continue;
        this.#bits[pos >> 3] |= 1 << (pos & 7);
        this.#count++;
      }
    }
    this.#pending = [];
  }

  /** The ids handed over, for the epoch run to leave out. */
  ids(): Set<string> {
    this.#fold();
    const out = new Set<string>();
    for (let i = 0; i < this.#plan.length; i++) if (this.#has(i)) out.add(this.#plan[i]);
    return out;
  }

  state(identity: PlanIdentity): LoaderState {
    this.#fold();
    const w = this.#whole;
    return {
      format: "cassette-loader-state", version: 1, epoch: this.epoch, ...identity,
      planned: this.#plan.length, plan: this.#digest ??= planDigest(this.#plan), handed: this.#count, bitmap: toBase64(this.#bits),
      samples: w.samples, order: w.digest(), ...(w.before ? { before: toBase64(w.before) } : {}),
    };
  }
}

/** Checks a state given as `resume` against the loader's options; names the first that differs. */
export function checkResumeState(s: unknown, identity: PlanIdentity): LoaderState {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume the Loader from the given state as ${why}`);
  };
  const st = s as LoaderState;
  if (typeof s !== "object" || s === null || st.format !== "cassette-loader-state") bad(`it is not a cassette-loader-state (from Loader.state()): current value is ${JSON.stringify(s)?.slice(0, 80)}`);
  if (st.version !== 1) bad(`its version is ${st.version}: this cassette reads version 1`);
  if (!Number.isInteger(st.epoch) || st.epoch < 0) bad(`its 'epoch' must be an integer ≥ 0: current value is ${st.epoch}`);
  if (!Number.isInteger(st.planned) || st.planned < 0 || typeof st.bitmap !== "string" || typeof st.plan !== "string") bad("its 'planned', 'plan' or 'bitmap' is missing");
  if (st.samples !== undefined && !(Number.isInteger(st.samples) && st.samples >= 0)) bad(`its 'samples' must be an integer ≥ 0: current value is ${st.samples}`);
  if ((st.order !== undefined && typeof st.order !== "string") || (st.before !== undefined && typeof st.before !== "string")) bad("its 'order' and 'before' must be strings");
  // Another world size: only a state that covers every rank (one of a single rank, or merged) says what is left.
  const elastic = st.worldSize !== identity.worldSize;
  if (elastic && (st.rankShards || identity.rankShards)) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot resume the Loader on ${identity.worldSize} ranks from a state taken on ${st.worldSize} as a plan with 'rankShards' resumes only on its own number of ranks`);
  }
  if (elastic && st.worldSize !== 1) {
    throw new CassetteError(
      "ERR_PARTIAL_STATE",
      `Cannot resume the Loader on ${identity.worldSize} ranks from rank ${st.rank}'s state alone, taken on ${st.worldSize} ranks: it does not say what the other ranks handed over. ` +
        `Merge the states of all ${st.worldSize} ranks with mergeStates(states) and resume every rank from the result (NOTE [ Elastic resume ])`,
    );
  }
  for (const k of ["seed", "rank", "worldSize", "shuffle", "batchSize", "dropLast", "pad", "rankShards"] as const) {
    if (elastic && (k === "rank" || k === "worldSize")) continue;
    const optional = k === "pad" || k === "rankShards"; // false in states from before the option
    const was = st[k] ?? (optional ? false : undefined), is = identity[k] ?? (optional ? false : undefined);
    if (was !== is) bad(`it was taken with ${k} ${JSON.stringify(was)}: this loader has ${k} ${JSON.stringify(is)}`);
  }
  return st;
}

/**
 * Every rank's `Loader.state()` of one job merged into one state that resumes on any number of
 * ranks (NOTE [ Elastic resume ]): give it as `resume` to each of the new ranks, and between
 * them they hand over every sample of the epoch that no rank handed over, once. Ranks may be in
 * the epoch or just past it (a rank whose iteration ended names the next epoch, with nothing
 * handed over). Refused by name: a rank missing or twice, states of other jobs (seed, options,
 * plan), of epochs further apart, or taken before elastic resume existed.
 *
 * @example
 * ```ts
 * import { Loader, mergeStates, openStore, ingest } from "cassette";
 * const store = await openStore("sqlite:.tmp/merge-states-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 40 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * // Two ranks each hand over one batch of epoch 0, then stop.
 * const states = [];
 * for (const rank of [0, 1]) {
 *   const l = new Loader({ store, dataset: "fm", ids, batchSize: 5, seed: 3, rank, worldSize: 2 });
 *   for await (const _ of l.epoch(0)) break;
 *   states.push(l.state());
 *   await l.close();
 * }
 * // Three ranks read the rest of the epoch between them.
 * let rest = 0;
 * for (const rank of [0, 1, 2]) {
 *   const l = new Loader({ store, dataset: "fm", ids, batchSize: 5, seed: 3, rank, worldSize: 3, resume: mergeStates(states) });
 *   for await (const b of l.epoch(0)) rest += b.ids.length;
 *   await l.close();
 * }
 * console.log(rest); // 70 (of 80: 40 of train, 40 of t10k)
 * await store.close();
 * ```
 */
export function mergeStates(states: readonly LoaderState[]): LoaderState {
  const bad = (why: string, code: ErrorCode = "ERR_INVALID_OPTION"): never => {
    throw new CassetteError(code, `Cannot merge the loader states as ${why}`);
  };
  if (!Array.isArray(states) || states.length === 0) bad("none were given: give every rank's Loader.state()");
  const first = states[0];
  for (const s of states) {
    checkResumeState(s, s); // its shape
    if (s.rankShards) bad(`rank ${s.rank}'s plan has 'rankShards', which resumes only on its own number of ranks`, "ERR_UNSUPPORTED");
    if (s.samples === undefined || s.order === undefined) bad(`rank ${s.rank}'s state was taken before elastic resume existed (it has no 'samples' or 'order'): it resumes only on its own ${s.worldSize} ranks`);
    for (const k of ["seed", "worldSize", "shuffle", "batchSize", "dropLast", "pad", "samples"] as const) {
      if ((s[k] ?? false) !== (first[k] ?? false)) bad(`rank ${s.rank}'s has ${k} ${JSON.stringify(s[k])}, rank ${first.rank}'s ${JSON.stringify(first[k])}: they are not one job's`);
    }
  }
  const world = first.worldSize, epoch = Math.min(...states.map((s) => s.epoch));
  const seen = new Array<boolean>(world).fill(false);
  for (const s of states) {
    if (s.epoch !== epoch && !ended(s, epoch)) bad(`the ranks are in different epochs: rank ${s.rank} in epoch ${s.epoch} (${s.handed} handed over), another in epoch ${epoch}`);
    if (seen[s.rank]) bad(`rank ${s.rank} of ${world} is given twice`);
    seen[s.rank] = true;
  }
  const missing = seen.flatMap((x, r) => (x ? [] : [r]));
  if (missing.length) bad(`the states of rank${missing.length > 1 ? "s" : ""} ${missing.join(", ")} of ${world} are missing: what they handed over is not known`, "ERR_PARTIAL_STATE");
  // The ranks still in the epoch tell its order and what was left out before (the same for all).
  const live = states.filter((s) => s.epoch === epoch);
  for (const s of live) if (s.order !== live[0].order || s.before !== live[0].before) bad(`rank ${s.rank}'s plan of epoch ${epoch} differs from rank ${live[0].rank}'s (order digest ${s.order} vs ${live[0].order}): they are not one job's`);
  const n = first.samples!;
  const handed = handedInOrder(states, epoch, n, live[0].before);
  const o = { ...first, rank: 0, worldSize: 1 };
  const planned = planLength(leftCount(n, handed), o);
  return {
    format: "cassette-loader-state", version: 1, epoch,
    seed: o.seed, rank: 0, worldSize: 1, shuffle: o.shuffle, batchSize: o.batchSize, dropLast: o.dropLast, pad: o.pad ?? false,
    // One rank with the rest of the epoch to read has no plan of its own yet: it is checked by the whole order's digest.
    planned, plan: live[0].order!, handed: 0, bitmap: toBase64(new Uint8Array((planned + 7) >> 3)),
    samples: n, order: live[0].order, before: toBase64(handed),
  };
}

/** A rank whose iteration of `epoch` ended: its state names the next epoch, nothing of it handed over. */
function ended(s: LoaderState, epoch: number): boolean {
  return s.epoch === epoch + 1 && s.handed === 0 && s.before === undefined;
}

/** A bitmap over the epoch's order of `n` of what every rank handed over, and what was before their plans. */
function handedInOrder(states: readonly LoaderState[], epoch: number, n: number, before: string | undefined): Uint8Array {
  const out = new Uint8Array((n + 7) >> 3);
  if (before !== undefined) {
    const b = fromBase64(before);
    if (b.length !== out.length) throw new CassetteError("ERR_INVALID_OPTION", `Cannot merge the loader states as their 'before' holds ${b.length} bytes: ${n} samples need ${out.length}`);
    out.set(b);
  }
  // The order's positions left to the ranks' plans: rank r's position k is rest[(r + k·N) mod rest.length].
  const rest = new Int32Array(leftCount(n, out));
  for (let i = 0, j = 0; i < n; i++) if (!bitSet(out, i)) rest[j++] = i;
  const mark = (i: number) => (out[i >> 3] |= 1 << (i & 7));
  for (const s of states) {
    const len = planLength(rest.length, s);
    if (s.epoch !== epoch) {
      for (let k = 0; k < len; k++) mark(rest[(s.rank + k * s.worldSize) % rest.length]);
      continue;
    }
    const bits = fromBase64(s.bitmap);
    if (s.planned !== len || bits.length !== (len + 7) >> 3) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot merge the loader states as rank ${s.rank}'s plan of epoch ${epoch} holds ${s.planned} samples (a bitmap of ${bits.length} bytes), where its share of ${rest.length} is ${len}`);
    }
    for (let k = 0; k < len; k++) if (bitSet(bits, k)) mark(rest[(s.rank + k * s.worldSize) % rest.length]);
  }
  return out;
}

/** The epoch's whole order's samples handed over that a state leaves out of the plan: its `before` with, on another world size, what it handed over itself. */
export function stateBefore(st: LoaderState, elastic: boolean): Uint8Array | undefined {
  if (elastic) return fromBase64(mergeStates([st]).before ?? "");
  return st.before === undefined ? undefined : fromBase64(st.before);
}

/**
 * Checks that a state's epoch is the one this loader plans: by the whole order's digest where
 * the state has one (every state since elastic resume), else by the plan's.
 */
export function checkPlan(st: LoaderState, plan: readonly string[], whole: WholeOrder): void {
  const differs = (what: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume epoch ${st.epoch} from the given state as its plan differs: ${what}; were the ids, or the split, changed?`);
  };
  if (st.order !== undefined) {
    if (st.samples !== whole.samples || st.order !== whole.digest()) differs(`the state's has ${st.samples} samples (order digest ${st.order}), this loader's ${whole.samples} (order digest ${whole.digest()})`);
  } else if (plan.length !== st.planned || planDigest(plan) !== st.plan) {
    differs(`the state's has ${st.planned} samples (digest ${st.plan}), this loader's ${plan.length} (digest ${planDigest(plan)})`);
  }
}

/** The recorder for the state's epoch, once its plan is known; refuses a plan other than the state's. */
export function resumed(st: LoaderState, plan: readonly string[], whole: WholeOrder): HandedOver {
  checkPlan(st, plan, whole);
  if (plan.length !== st.planned) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume epoch ${st.epoch} from the given state as its plan holds ${st.planned} samples: this loader's holds ${plan.length}`);
  }
  const bits = fromBase64(st.bitmap);
  if (bits.length !== (plan.length + 7) >> 3) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume epoch ${st.epoch} from the given state as its bitmap holds ${bits.length} bytes: ${plan.length} samples need ${(plan.length + 7) >> 3}`);
  }
  return new HandedOver(st.epoch, plan, whole, bits);
}

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  let s: string;
  try {
    s = atob(text);
  } catch {
    throw new CassetteError("ERR_INVALID_OPTION", "Cannot resume the Loader from the given state as its bitmap is not base64");
  }
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
