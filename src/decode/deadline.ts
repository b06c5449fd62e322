/**
 * The slow lane's deadline (NOTE [ Slow lane ], src/decode/pool.ts), learned online from the
 * CPU stage's job times: the decode pool learns it on the thread that sends its jobs, and each
 * read worker (src/read/read_worker.ts) learns its own from the samples it decodes, for the
 * loader's thread to compare with the start of the job it runs. One rule, two places.
 *
 * @example
 * ```ts
 * import { Deadline } from "./deadline.ts";
 * const d = new Deadline();
 * for (let i = 0; i < 64; i++) d.observe(i % 8 === 0 ? 40 : 2);
 * console.log(d.ms); // 4: twice the median, as the p75 is a fast job's time
 * ```
 */

const WINDOW = 256, WARMUP = 32;

export class Deadline {
  /** The deadline now, in ms (Infinity while learning: every job is assumed fast at first). */
  ms = Infinity;
  /** The percentile it is taken at: 75, or 90 after the fallback. */
  percentile: 75 | 90 = 75;
  /** Jobs that ran past the deadline, over the deadline's life. */
  slow = 0;
  readonly #times = new Float64Array(WINDOW);
  #n = 0;
  #moved = 0;
  #movedFalse = 0;
  readonly #floor: number;
  /** Jobs and their ms since the deadline was last learned. */
  #since = 0;
  #sinceMs = 0;

  /** `floorMs`: the deadline is never under it (default 1: the pool's check runs on a timer). */
  constructor(floorMs = 1) {
    this.#floor = floorMs;
  }

  /** Jobs observed so far. */
  get jobs(): number {
    return this.#n;
  }

  /** A job took `ms`; `moved`: it ran past the deadline (its worker took the slow lane). */
  observe(ms: number, moved = ms > this.ms): void {
    this.#times[this.#n++ % WINDOW] = ms;
    if (moved) {
      this.slow++;
      this.#moved++;
      if (ms < 2 * this.ms) this.#movedFalse++;
      this.#adjust();
    }
    this.#since++;
    this.#sinceMs += ms;
    if (this.#n < WARMUP) return;
    // Re-learned every 16 jobs and 20 ms of them: a sort of 256 numbers (~10 µs) is cheap at
    // that rate, and would cost a 7 µs decode more than itself if done every 16.
    if ((this.#since < 16 || this.#sinceMs < 20) && Number.isFinite(this.ms)) return;
    this.ms = this.#at(this.percentile);
    this.#since = this.#sinceMs = 0;
  }

  /** Job time p50/p99/max over the last 256 jobs, in ms. */
  jobMs(): { p50: number; p99: number; max: number } {
    const sorted = this.#recent();
    const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] : 0);
    return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
  }

  /** The percentile `p` of recent job times, never under twice their median nor under the floor. */
  #at(p: number): number {
    const sorted = this.#recent();
    if (sorted.length === 0) return this.#floor;
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * q) / 100))];
    return Math.max(this.#floor, at(p), 2 * at(50));
  }

  #recent(): Float64Array {
    return this.#times.slice(0, Math.min(this.#n, WINDOW)).sort();
  }

  /** The paper's fallback: p90 while most samples moved to the slow lane were not really slow. */
  #adjust(): void {
    if (this.#moved < 16) return;
    const falseShare = this.#movedFalse / this.#moved;
    const p = this.percentile === 75 && falseShare > 0.5 ? 90 : this.percentile === 90 && falseShare < 0.2 ? 75 : this.percentile;
    if (p !== this.percentile) {
      this.percentile = p;
      this.#moved = this.#movedFalse = 0;
      this.ms = this.#at(p);
      this.#since = this.#sinceMs = 0;
    }
  }
}
