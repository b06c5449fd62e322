/**
 * How many samples may be outstanding (requested but not yet handed to the consumer): the
 * prefetch window, reached by a ramp (2025 paper §3.4). The window starts at `start` batches
 * and grows by one batch for every four consumed — "request 5 for every 4 consumed" — until it
 * holds `prefetch` batches, so a start never floods the network and the burst stays ≤ 25 %
 * above the steady state.
 *
 *   consumed batches:  0  4  8  12 …
 *   window (batches):  2  3  4  5 … prefetch
 */
export class Window {
  readonly batchSize: number;
  readonly prefetch: number;
  readonly start: number;
  #consumed = 0;

  constructor(batchSize: number, prefetch: number, start = 2) {
    this.batchSize = batchSize;
    this.prefetch = prefetch;
    this.start = Math.min(start, prefetch);
  }

  /** The consumer took one batch. */
  consumed(): void {
    this.#consumed++;
  }

  /** Batches the window holds now. */
  batches(): number {
    return Math.min(this.prefetch, this.start + Math.floor(this.#consumed / 4));
  }

  /** Samples that may be outstanding now. */
  samples(): number {
    return this.batches() * this.batchSize;
  }
}
