/**
 * The exactly-once ledger of one epoch (shard): every planned sample is requested, then either
 * delivered or skipped, exactly once, whatever the order of arrival, retries or duplicates
 * (a hedged or retried request that answers twice is counted once and dropped).
 *
 * Samples are known by their position in the epoch's plan, not by id: one byte each, no hashing.
 * The loader's thread feeds the GPU, and a Map of ids cost it ~1.5 µs a sample (Node's profiler,
 * bench/RESULTS.md "Packets", earlier figures). That the plan names each id once is checked where
 * the ids come in (the Loader's constructor: `assertUnique`).
 */
import { CassetteError } from "../errors.ts";

const PLANNED = 0, REQUESTED = 1, DELIVERED = 2, SKIPPED = 3;

export class Ledger {
  readonly #state: Uint8Array;
  #delivered = 0;
  #skipped = 0;
  #duplicates = 0;

  constructor(size: number) {
    this.#state = new Uint8Array(size);
  }

  requested(pos: number): void {
    if (this.#state[pos] !== PLANNED) throw new Error(`ledger: plan position ${pos} requested twice or not planned`);
    this.#state[pos] = REQUESTED;
  }

  /** Positions from … to − 1 requested at once (a read worker's packet read). */
  requestRange(from: number, to: number): void {
    for (let pos = from; pos < to; pos++) if (this.#state[pos] !== PLANNED) throw new Error(`ledger: plan position ${pos} requested twice or not planned`);
    this.#state.fill(REQUESTED, from, to);
  }

  /** Requested and neither delivered nor given up on: in flight. */
  isPending(pos: number): boolean {
    return this.#state[pos] === REQUESTED;
  }

  /** True the first time position `pos` arrives; false for a duplicate (dropped, counted). */
  deliver(pos: number): boolean {
    const s = this.#state[pos];
    if (s === REQUESTED) {
      this.#state[pos] = DELIVERED;
      this.#delivered++;
      return true;
    }
    if (s === undefined || s === PLANNED) throw new Error(`ledger: plan position ${pos} arrived but was never requested`);
    this.#duplicates++;
    return false;
  }

  /** Gives up on `pos`: still in flight, or arrived and then failed its transform (a decode). */
  skip(pos: number): boolean {
    const s = this.#state[pos];
    if (s === DELIVERED) this.#delivered--;
    else if (s !== REQUESTED) return false;
    this.#state[pos] = SKIPPED;
    this.#skipped++;
    return true;
  }

  isSkipped(pos: number): boolean {
    return this.#state[pos] === SKIPPED;
  }

  get size(): number {
    return this.#state.length;
  }
  get delivered(): number {
    return this.#delivered;
  }
  get skipped(): number {
    return this.#skipped;
  }
  get duplicates(): number {
    return this.#duplicates;
  }
  /** Every planned sample has been delivered or skipped. */
  complete(): boolean {
    return this.#delivered + this.#skipped === this.#state.length;
  }
}

/** Throws naming the first id that `ids` holds twice (a split must name each sample once). */
export function assertUnique(ids: readonly string[], what: string): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw new CassetteError("ERR_INVALID_OPTION", `${what} as sample ${id} is in 'ids' twice`);
    seen.add(id);
  }
}
