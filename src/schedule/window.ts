/**
 * How many samples may be outstanding (requested but not yet handed to the consumer): the
 * prefetch window, reached by a ramp ("Hiding Latencies…" (arXiv:2503.22643), §3.4). The window
 * starts at `start` batches and grows by one batch for every four consumed — "request 5 for every 4
 * consumed" — until it holds `prefetch` batches, so a start never floods the network and the burst
 * stays ≤ 25 % above the steady state.
 *
 *   consumed batches:  0  4  8  12 …
 *   window (batches):  2  3  4  5 … prefetch
 *
 * On a link whose answers show no queue, only distance, the window grows faster (see the
 * constructor's `unqueued`): two batches per batch consumed.
 *
 * Adaptive depth (`maxPrefetch` > `prefetch`): when the consumer finds nothing ready while the
 * window is full, the window may be too shallow for this link, so its ceiling grows (up to
 * `maxPrefetch`), and the window follows at the ramp's pace. A hand-set depth that suits RTT 0
 * starves at 150 ms. Whether to deepen, and by how much, is the Loader's call
 * (DepthPolicy in depth.ts: latency × rate, then probes that must pay).
 */
/**
 * Ramp credit (quarter batches) per batch consumed while answers show no queue: 8, two batches
 * more for each one taken, so the window triples per round trip, near the startup gain of
 * BBR (2/ln 2 ≈ 2.89 per round trip; Cardwell et al., "BBR: Congestion-Based Congestion
 * Control", ACM Queue 14(5), 2016). Doubling, as TCP's slow start does, left a 150 ms link's
 * first epoch short of its rate for ~5 round trips.
 */
const UNQUEUED_CREDIT = 8;

export class Window {
  readonly batchSize: number;
  readonly maxPrefetch: number;
  #start: number;
  #prefetch: number;
  /** What widen() raised, while it may still be undone. */
  #unwidened?: { start: number; prefetch: number };
  /** Ramp credit, in quarter batches: one per batch consumed, UNQUEUED_CREDIT while `unqueued` holds. */
  #credit = 0;
  readonly #unqueued?: () => boolean;

  /**
   * `unqueued`: whether answers come back as fast as the fastest one seen (no queue anywhere on
   * the path, only distance). While it holds, a batch consumed adds two batches to the window,
   * so the window triples per round trip instead of growing by a quarter: a far link (150 ms)
   * is filled in ~3–4 round trips rather than ~14, and the first sign of a queue (answers
   * slower than the fastest) brings back the gentle ramp.
   */
  constructor(batchSize: number, prefetch: number, start = 2, maxPrefetch = prefetch, unqueued?: () => boolean) {
    this.batchSize = batchSize;
    this.#prefetch = prefetch;
    this.maxPrefetch = Math.max(prefetch, maxPrefetch);
    this.#start = Math.min(start, prefetch);
    this.#unqueued = unqueued;
    // batches() counts from `start`: a window created at full depth is full at once.
  }

  /** Batches the window started from (before the ramp's credit). */
  get start(): number {
    return this.#start;
  }

  /**
   * Starts the window from `batches` instead (never lower than now), the ceiling raised with it
   * as far as `maxPrefetch` allows: the first answers showed a far link with no queue, and how
   * many samples a first window's bytes hold (NOTE [ First window in bytes ], epochs.ts).
   */
  widen(batches: number): void {
    this.#unwidened ??= { start: this.#start, prefetch: this.#prefetch };
    this.#prefetch = Math.max(this.#prefetch, Math.min(this.maxPrefetch, batches));
    this.#start = Math.max(this.#start, Math.min(this.#prefetch, batches));
  }

  /** Undoes widen(): the link proved near. Requests already out drain as batches are taken. */
  unwiden(): void {
    if (!this.#unwidened) return;
    ({ start: this.#start, prefetch: this.#prefetch } = this.#unwidened);
    this.#unwidened = undefined;
  }

  /** The ceiling now (grows from `prefetch` toward `maxPrefetch` when starved). */
  get prefetch(): number {
    return this.#prefetch;
  }

  /** The consumer waited while the window was full: deepen it by `step` batches (if adaptive). True if it grew. */
  starved(step = 1): boolean {
    if (this.#prefetch >= this.maxPrefetch || this.batches() < this.#prefetch) return false;
    this.#prefetch = Math.min(this.maxPrefetch, this.#prefetch + step);
    return true;
  }

  /** The consumer took one batch. */
  consumed(): void {
    this.#credit += this.#unqueued?.() ? UNQUEUED_CREDIT : 1;
  }

  /** Batches the window holds now. */
  batches(): number {
    return Math.min(this.#prefetch, this.#start + Math.floor(this.#credit / 4));
  }

  /** Samples that may be outstanding now. */
  samples(): number {
    return this.batches() * this.batchSize;
  }
}
