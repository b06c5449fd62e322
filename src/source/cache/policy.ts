/**
 * Which cached sample to give up when a local cache is over its byte budget.
 *
 * A data loader knows its future: an epoch's order is a pure function of the seed
 * (src/plan/epoch.ts), so the Loader can tell the cache the order of the next epochs' requests.
 * With it the cache can evict the sample whose next use is furthest away, Belady's optimal
 * policy ("A study of replacement algorithms for a virtual-storage computer", IBM Systems
 * Journal 5(2), 1966), which caches that cannot see the future only approximate. A sample that
 * will be needed later than every cached one is not admitted at all (Belady with bypass): it
 * would push out something needed sooner. LRU is kept beside it, as the baseline the bench
 * compares with and for sources whose order nobody announces.
 *
 * NOTE [ Next use ]
 * Positions are `epoch × 2³² + index in the epoch's announced order`. `touch(id)` consumes the
 * id's earliest pending position (the request being made now). A re-ask (a hedge, a retry)
 * consumes the next one too early, which only makes that sample look needed later: the cost is
 * a possible miss, never a wrong answer. Positions of epochs older than the newest announced
 * minus one are dropped, so that a sample skipped on resume does not look needed forever.
 */

/** An id's uses, in announced order. */
const STRIDE = 2 ** 32;

/** The policy's side of a cache: what it is told, and what it answers. */
export interface CachePolicy {
  readonly name: "belady" | "lru";
  /** The order in which the ids of `epoch` will be asked for (the epoch's plan for this rank). */
  plan(epoch: number, ids: readonly string[]): void;
  /** `id` is being asked for now (a hit or a miss). */
  touch(id: string): void;
  /** `id` entered the cache. */
  added(id: string): void;
  /** `id` left the cache. */
  removed(id: string): void;
  /** The cached id to give up first; undefined when nothing is cached. */
  victim(): string | undefined;
  /** Whether `id`, just missed, should enter a full cache rather than keep `victim`. */
  admit(id: string, victim: string): boolean;
}

/** Least recently used: the baseline. */
export class LruPolicy implements CachePolicy {
  readonly name = "lru";
  readonly #order = new Set<string>();

  plan(): void {}
  touch(id: string): void {
    if (this.#order.delete(id)) this.#order.add(id);
  }
  added(id: string): void {
    this.#order.add(id);
  }
  removed(id: string): void {
    this.#order.delete(id);
  }
  victim(): string | undefined {
    for (const id of this.#order) return id;
    return undefined;
  }
  admit(): boolean {
    return true;
  }
}

/** Furthest next use first, with bypass (NOTE [ Next use ]). */
export class BeladyPolicy implements CachePolicy {
  readonly name = "belady";
  /** Each id's pending positions, ascending (a few at most: one per announced epoch). */
  readonly #uses = new Map<string, number[]>();
  readonly #planned = new Set<number>();
  readonly #cached = new Set<string>();
  /** Positions below this are stale (epochs long gone). */
  #floor = 0;
  /** A max-heap of [next use, id]; entries whose key is no longer the id's are skipped lazily. */
  #heap: [number, string][] = [];

  plan(epoch: number, ids: readonly string[]): void {
    if (this.#planned.has(epoch)) return;
    this.#planned.add(epoch);
    const newest = Math.max(...this.#planned);
    this.#floor = Math.max(this.#floor, (newest - 1) * STRIDE);
    for (let i = 0; i < ids.length; i++) {
      const uses = this.#uses.get(ids[i]);
      const pos = epoch * STRIDE + i;
      if (!uses) this.#uses.set(ids[i], [pos]);
      else if (uses.length === 0 || uses[uses.length - 1] < pos) uses.push(pos);
      else uses.splice(uses.findIndex((p) => p > pos), 0, pos); // announced out of order: rare
    }
    this.#rebuild(); // every cached id's next use may have moved
  }

  /** The id's next use, or Infinity where no announced epoch asks for it again. */
  nextUse(id: string): number {
    const uses = this.#uses.get(id);
    if (!uses) return Infinity;
    while (uses.length && uses[0] < this.#floor) uses.shift();
    return uses.length ? uses[0] : Infinity;
  }

  touch(id: string): void {
    const uses = this.#uses.get(id);
    if (!uses) return;
    this.nextUse(id); // drops stale positions
    if (uses.length) uses.shift();
    if (uses.length === 0) this.#uses.delete(id);
    if (this.#cached.has(id)) this.#push(id);
  }

  added(id: string): void {
    this.#cached.add(id);
    this.#push(id);
  }

  removed(id: string): void {
    this.#cached.delete(id);
  }

  victim(): string | undefined {
    const heap = this.#heap;
    while (heap.length) {
      const [key, id] = heap[0];
      if (this.#cached.has(id) && this.nextUse(id) === key) return id;
      this.#pop();
    }
    return undefined;
  }

  admit(id: string, victim: string): boolean {
    return this.nextUse(id) < this.nextUse(victim);
  }

  #rebuild(): void {
    this.#heap = [];
    for (const id of this.#cached) this.#push(id);
  }

  #push(id: string): void {
    const heap = this.#heap;
    heap.push([this.nextUse(id), id]);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p][0] >= heap[i][0]) break;
      [heap[p], heap[i]] = [heap[i], heap[p]];
      i = p;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (!heap.length) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < heap.length && heap[l][0] > heap[m][0]) m = l;
      if (r < heap.length && heap[r][0] > heap[m][0]) m = r;
      if (m === i) break;
      [heap[m], heap[i]] = [heap[i], heap[m]];
      i = m;
    }
  }
}

/** A policy by name. */
export function cachePolicy(name: "belady" | "lru"): CachePolicy {
  return name === "lru" ? new LruPolicy() : new BeladyPolicy();
}

/** What a cache holds, by id and size, within its budget, as its policy decides. */
export class CacheBook {
  readonly policy: CachePolicy;
  readonly budget: number;
  readonly #size = new Map<string, number>();
  #used = 0;

  constructor(policy: CachePolicy, budget: number) {
    this.policy = policy;
    this.budget = budget;
  }
  get used(): number {
    return this.#used;
  }
  has(id: string): boolean {
    return this.#size.has(id);
  }
  /** The ids held, in the order they came. */
  ids(): IterableIterator<string> {
    return this.#size.keys();
  }

  /**
   * Makes room for `id` of `size` bytes and records it, or answers false when it is not kept:
   * it exceeds the whole budget, or the samples the policy would give up for it (those it
   * ranks below `id`: for Belady, the ones needed later) do not hold enough bytes. `drop` is
   * told each id given up.
   */
  keep(id: string, size: number, drop: (id: string) => void): boolean {
    if (this.#size.has(id)) return true;
    if (size > this.budget) return false;
    const victims: string[] = [];
    let free = this.budget - this.#used;
    while (free < size) {
      const v = this.policy.victim();
      if (v === undefined || !this.policy.admit(id, v)) break;
      this.policy.removed(v); // out of the policy's ranking while the next one is looked at
      victims.push(v);
      free += this.#size.get(v)!;
    }
    if (free < size) {
      for (const v of victims) this.policy.added(v); // not worth it: everything stays
      return false;
    }
    for (const v of victims) {
      this.#used -= this.#size.get(v)!;
      this.#size.delete(v);
      drop(v);
    }
    this.#size.set(id, size);
    this.#used += size;
    this.policy.added(id);
    return true;
  }

  /** `id` is no longer held. */
  forget(id: string): void {
    const size = this.#size.get(id);
    if (size === undefined) return;
    this.#size.delete(id);
    this.#used -= size;
    this.policy.removed(id);
  }
}

/**
 * The hits per epoch (and what it holds at the end) a cache of `budget` bytes makes over `epochs` (each epoch's ids in request
 * order, each id with its size) under `policy`, one request after another, cold at the start,
 * each epoch's order and the next one's announced at its start as the Loader does: with Belady
 * it is the bound the live cache is measured against (the bench; the test that the cache
 * reaches it when requests come in plan order). With `read`, only the first `read` epochs are
 * read (the one after them still announced).
 */
export function simulateCache(
  policy: CachePolicy,
  epochs: readonly (readonly string[])[],
  size: (id: string) => number,
  budget: number,
  read = epochs.length,
): { hits: number[]; held: string[] } {
  const book = new CacheBook(policy, budget);
  const hits = epochs.slice(0, read).map((order, e) => {
    policy.plan(e, order);
    if (e + 1 < epochs.length) policy.plan(e + 1, epochs[e + 1]);
    let hits = 0;
    for (const id of order) {
      policy.touch(id);
      if (book.has(id)) hits++;
      else book.keep(id, size(id), () => {});
    }
    return hits;
  });
  return { hits, held: [...book.ids()] };
}
