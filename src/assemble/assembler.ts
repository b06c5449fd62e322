/**
 * Forms batches from the samples of one epoch as they become ready.
 *
 * NOTE [ Ready-order assembly ]: a batch is formed from whichever samples are ready — fetched
 * and transformed — not from a fixed list of ids. A slow connection or a slow decode delays
 * only its own samples, which join a later batch, so the consumer waits for the *fastest*
 * `batchSize` of the outstanding samples rather than for the slowest of a fixed set. This one
 * mechanism gives "Hiding Latencies…" (arXiv:2503.22643)'s out-of-order incremental prefetching and
 * MINATOLoader's fast/slow queues. `strict` order builds batch k from plan positions
 * k·B … (k+1)·B − 1.
 *
 *   ready:   arrivals ─► [ a f c | b e … ] ─► batch of the first B to arrive
 *   strict:  slots by plan position [0 1 2 | 3 4 5 | …] ─► batch k once its B slots are in
 *
 * Samples given up on (skipped) still held window slots; `take` says how many slots each call
 * frees, so the scheduler's count of outstanding samples stays exact.
 */
import type { Fetched } from "../source/source.ts";
import { type Batch, type Pack, packBatch } from "./batch.ts";

export interface Taken<T> {
  /** The next batch, when one is ready. */
  batch?: Batch<T>;
  /** Window slots freed: the batch's samples and the skipped ones it passed. */
  freed: number;
}

export class Assembler<T, S extends Fetched = Fetched> {
  readonly #epoch: number;
  readonly #B: number;
  readonly #size: number;
  readonly #strict: boolean;
  /** Hand over the raw bytes packed in one buffer (no transform gave items of their own), and what a release gives back: Pack. */
  readonly #pack: Pack<S>;
  #ready: { s: S; item: T }[] = []; // ready order: arrival order
  readonly #atPos: ({ s: S; item: T } | undefined)[]; // strict order: by plan position
  readonly #skipped: Uint8Array; // strict order: positions given up on
  #skippedHeld = 0; // ready order: skipped samples whose window slots are not yet freed
  #batchIndex = 0;

  constructor(epoch: number, size: number, batchSize: number, strict: boolean, pack: Pack<S>) {
    this.#epoch = epoch;
    this.#size = size;
    this.#B = batchSize;
    this.#strict = strict;
    this.#pack = pack;
    this.#atPos = strict ? new Array(size) : [];
    this.#skipped = new Uint8Array(strict ? size : 0);
  }

  /** Sample at plan position `pos` is ready. */
  add(pos: number, s: S, item: T): void {
    if (this.#strict) this.#atPos[pos] = { s, item };
    else this.#ready.push({ s, item });
  }

  /** Sample at plan position `pos` was given up on. */
  skip(pos: number): void {
    if (this.#strict) this.#skipped[pos] = 1;
    else this.#skippedHeld++;
  }

  /** The next batch if one is ready; `allIn`: nothing more will arrive this epoch. */
  take(allIn: boolean): Taken<T> {
    if (!this.#strict) {
      // Skipped samples free their window slots as soon as a batch is taken.
      if (this.#ready.length >= this.#B || (allIn && this.#ready.length > 0)) {
        const part = this.#ready.splice(0, this.#B);
        const freed = part.length + this.#skippedHeld;
        this.#skippedHeld = 0;
        return { batch: packBatch(this.#epoch, this.#batchIndex++, part, this.#pack), freed };
      }
      const freed = allIn ? this.#skippedHeld : 0;
      if (allIn) this.#skippedHeld = 0;
      return { freed };
    }
    let freed = 0;
    for (;;) {
      const start = this.#batchIndex * this.#B;
      if (start >= this.#size) return { freed };
      const end = Math.min(start + this.#B, this.#size);
      for (let p = start; p < end; p++) if (!this.#atPos[p] && !this.#skipped[p]) return { freed };
      const part: { s: S; item: T }[] = [];
      for (let p = start; p < end; p++) {
        const a = this.#atPos[p];
        if (a) part.push(a), this.#atPos[p] = undefined;
      }
      freed += end - start;
      this.#batchIndex++;
      // A batch of nothing but skipped samples: hand over nothing, move on.
      if (part.length > 0) return { batch: packBatch(this.#epoch, this.#batchIndex - 1, part, this.#pack), freed };
    }
  }
}
