/**
 * How deep the prefetch window should be (`prefetch: "auto"`), learned from what the link and
 * the consumer do, and carried from one epoch to the next.
 *
 * When the consumer finds nothing ready with the window full:
 * - Below twice what the link holds at the rate batches are taken (rate × fastest request
 *   time, as BBR estimates a path) the window is too shallow for the latency: grow.
 * - Beyond that, depth only pays through cheaper per-request work (fuller writes, fewer
 *   wake-ups): probe 25 % deeper, and go on only while the rate taken rises ≥ 5 % over the
 *   next 16 batches. A consumer short of CPU rather than data stops after one probe.
 */
import type { Window } from "./window.ts";

/** A link this far (fastest answer, ms) may ramp fast while it shows no queue. */
const FAR_MS = 10;
/** Hand-overs the rate is measured over, and a probe is judged on. */
const RATE_WINDOW = 16;

export class DepthPolicy {
  readonly #batchSize: number;
  readonly #configured?: number;
  /** Fastest request → answer time seen (ms): with the delivered rate, what the link holds. */
  #minLatencyMs = Infinity;
  /** Answer times, smoothed (1/8 per answer, as TCP smooths its RTT). */
  #recentMs?: number;
  #lastMs = Infinity;
  #answers = 0;
  /** When the first answer came; the answers to requests sent after it, and the fastest of them. */
  #firstAnswerAt?: number;
  #later = 0;
  #laterFastestMs = Infinity;
  /** Answers before the fastest one is trusted: the very first come slow (a cold start, timers). */
  readonly #trustAfter: number;
  readonly #handOvers: [number, number][] = []; // [time, samples] of the last RATE_WINDOW hand-overs: the rate taken
  /** The last depth probe beyond what latency asks: the rate before it, and when (batches). */
  #probe?: { rate: number; at: number };
  #plateau = false;
  #learned?: number;
  #rampedUp = false;

  /** `prefetch`: the hand-set depth, or undefined for "auto" (which starts at 8). */
  constructor(batchSize: number, prefetch?: number) {
    this.#batchSize = batchSize;
    this.#configured = prefetch;
    // One batch of answers: waiting for the whole first window cost a far link a round trip of
    // gentle ramp. A cold start that slows those answers can only make a near link look far,
    // whose fast ramp is over in milliseconds anyway.
    this.#trustAfter = batchSize;
  }

  /** The depth an epoch starts from: what earlier epochs learned, else the configured one. */
  depth(): number {
    return this.#learned ?? this.#configured ?? 8;
  }

  /** An epoch ended this deep: the next starts there. */
  learned(depth: number): void {
    this.#learned = depth;
  }

  /** Whether an earlier epoch already ramped this link up (the ramp guards only the first start). */
  rampedUp(): boolean {
    const was = this.#rampedUp;
    this.#rampedUp = true;
    return was;
  }

  /** A request was answered after `ms`, at `now`. */
  answered(ms: number, now: number): void {
    if (ms < this.#minLatencyMs) this.#minLatencyMs = ms;
    if (this.#firstAnswerAt === undefined) this.#firstAnswerAt = now;
    else if (now - ms >= this.#firstAnswerAt) {
      this.#later++;
      if (ms < this.#laterFastestMs) this.#laterFastestMs = ms;
    }
    this.#answers++;
    this.#recentMs = this.#recentMs === undefined ? ms : this.#recentMs + (ms - this.#recentMs) / 8;
    this.#lastMs = ms;
  }

  /**
   * Whether answers come as fast as the fastest one (the latest and the smoothed time, each
   * within 25 %): the path has no queue, only distance, and the ramp may double the window per
   * round trip (Window's `unqueued`). One slow answer is enough to stop it: a queue slows every
   * answer at once. Only on a far link (≥ FAR_MS): near, the ramp is over in a few
   * milliseconds anyway, and timers' and the event loop's delays there look like a queue. And
   * only after the first batch's answers, which a cold start slows.
   */
  unqueued(): boolean {
    const most = 1.25 * this.#minLatencyMs;
    return this.#answers > this.#trustAfter && this.#minLatencyMs >= FAR_MS && this.#lastMs <= most && (this.#recentMs ?? Infinity) <= most;
  }

  /** The fastest request → answer time seen (ms; Infinity before the first). */
  fastestMs(): number {
    return this.#minLatencyMs;
  }

  /**
   * Whether the link is at least `ms` away: a batch of answers to requests sent once answers
   * were coming back took that long at the least, and answers show no queue. Only those: a
   * cold start (a source opening, code not yet compiled, a loaded machine) slows the first
   * answers alone, and a near link would look far.
   */
  farAtLeast(ms: number): boolean {
    return this.#later >= this.#batchSize && this.#laterFastestMs >= ms && this.unqueued();
  }

  /** `samples` were handed over at `now`. */
  handedOver(now: number, samples: number): void {
    this.#handOvers.push([now, samples]);
    if (this.#handOvers.length > RATE_WINDOW) this.#handOvers.shift();
  }

  /** Rates are measured within an epoch: the boundary is no sample of them. */
  epochStarted(): void {
    this.#handOvers.length = 0;
  }

  /** The consumer found nothing ready with `window` full, after `batches` batches in all: deepen it, if that pays. */
  starved(window: Window, batches: number): void {
    const h = this.#handOvers;
    if (!Number.isFinite(this.#minLatencyMs) || h.length < 2) return; // nothing measured yet
    let n = 0;
    for (let i = 1; i < h.length; i++) n += h[i][1];
    const samplesPerMs = n / Math.max(1e-3, h[h.length - 1][0] - h[0][0]);
    if (window.samples() < 2 * samplesPerMs * this.#minLatencyMs + this.#batchSize) {
      if (window.starved()) this.#probe = undefined;
      return;
    }
    // A probe is judged on RATE_WINDOW hand-overs of one epoch, all at the new depth.
    if (this.#plateau || h.length < RATE_WINDOW || (this.#probe && batches - this.#probe.at < RATE_WINDOW)) return;
    if (this.#probe && samplesPerMs < this.#probe.rate * 1.05) {
      this.#plateau = true;
      return;
    }
    if (window.starved(Math.max(1, Math.round(window.prefetch / 4)))) this.#probe = { rate: samplesPerMs, at: batches };
  }
}
