/**
 * The exactly-once ledger of one epoch (shard): every planned id is requested, then either
 * delivered or skipped, exactly once, whatever the order of arrival, retries or duplicates
 * (a hedged or retried request that answers twice is counted once and dropped).
 */
import { CassetteError } from "../errors.ts";

const PLANNED = 0, REQUESTED = 1, DELIVERED = 2, SKIPPED = 3;

export class Ledger {
  readonly #state = new Map<string, number>();
  #delivered = 0;
  #skipped = 0;
  #duplicates = 0;

  constructor(ids: readonly string[]) {
    for (const id of ids) {
      if (this.#state.has(id)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot plan an epoch with sample ${id} twice in the split`);
      this.#state.set(id, PLANNED);
    }
  }

  requested(id: string): void {
    if (this.#state.get(id) !== PLANNED) throw new Error(`ledger: ${id} requested twice or not planned`);
    this.#state.set(id, REQUESTED);
  }

  /** True the first time `id` arrives; false for a duplicate (dropped, counted). */
  deliver(id: string): boolean {
    const s = this.#state.get(id);
    if (s === REQUESTED) {
      this.#state.set(id, DELIVERED);
      this.#delivered++;
      return true;
    }
    if (s === undefined) throw new Error(`ledger: ${id} arrived but was never planned`);
    this.#duplicates++;
    return false;
  }

  skip(id: string): boolean {
    if (this.#state.get(id) !== REQUESTED) return false;
    this.#state.set(id, SKIPPED);
    this.#skipped++;
    return true;
  }

  get size(): number {
    return this.#state.size;
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
  /** Every planned id has been delivered or skipped. */
  complete(): boolean {
    return this.#delivered + this.#skipped === this.#state.size;
  }
}
