/**
 * Buffers given back for reuse, so that a steady stream of copies of similar sizes stops
 * allocating (a new ArrayBuffer each time costs its page faults and zero-filling, and in a
 * worker's heap counts as new memory): at most `keep` kept, the smallest dropped past that,
 * none larger than `maxBytes`; `take` hands out the smallest that fits.
 */
export class SpareBuffers {
  readonly #free: ArrayBuffer[] = [];
  readonly #keep: number;
  readonly #maxBytes: number;

  constructor(keep: number, maxBytes = Infinity) {
    this.#keep = keep;
    this.#maxBytes = maxBytes;
  }

  give(buf: ArrayBuffer): void {
    if (buf.byteLength > this.#maxBytes) return;
    this.#free.push(buf);
    if (this.#free.length > this.#keep) this.#free.splice(this.#smallest(0), 1);
  }

  /** The smallest buffer kept of at least `bytes`, or undefined. */
  take(bytes: number): ArrayBuffer | undefined {
    const i = this.#smallest(bytes);
    return i < 0 ? undefined : this.#free.splice(i, 1)[0];
  }

  #smallest(atLeast: number): number {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const b = this.#free[i].byteLength;
      if (b >= atLeast && (best < 0 || b < this.#free[best].byteLength)) best = i;
    }
    return best;
  }
}
