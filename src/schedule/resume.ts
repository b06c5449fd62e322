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
 */
import { CassetteError } from "../errors.ts";

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

  constructor(epoch: number, plan: readonly string[], bits?: Uint8Array) {
    this.epoch = epoch;
    this.#plan = plan;
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
    return {
      format: "cassette-loader-state", version: 1, epoch: this.epoch, ...identity,
      planned: this.#plan.length, plan: planDigest(this.#plan), handed: this.#count, bitmap: toBase64(this.#bits),
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
  for (const k of ["seed", "rank", "worldSize", "shuffle", "batchSize", "dropLast", "pad"] as const) {
    const was = st[k] ?? (k === "pad" ? false : undefined), is = identity[k] ?? (k === "pad" ? false : undefined);
    if (was !== is) bad(`it was taken with ${k} ${JSON.stringify(was)}: this loader has ${k} ${JSON.stringify(is)}`);
  }
  return st;
}

/** The recorder for the state's epoch, once its plan is known; refuses a plan other than the state's. */
export function resumed(st: LoaderState, plan: readonly string[]): HandedOver {
  if (plan.length !== st.planned || planDigest(plan) !== st.plan) {
    throw new CassetteError(
      "ERR_INVALID_OPTION",
      `Cannot resume epoch ${st.epoch} from the given state as its plan differs: the state's has ${st.planned} samples (digest ${st.plan}), this loader's ${plan.length} (digest ${planDigest(plan)}); were the ids, or the split, changed?`,
    );
  }
  const bits = fromBase64(st.bitmap);
  if (bits.length !== (plan.length + 7) >> 3) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume epoch ${st.epoch} from the given state as its bitmap holds ${bits.length} bytes: ${plan.length} samples need ${(plan.length + 7) >> 3}`);
  }
  return new HandedOver(st.epoch, plan, bits);
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
