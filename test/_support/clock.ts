/**
 * A clock that moves only when a test moves it (src/util/clock.ts's `Clock`; STYLE.md habit 13,
 * as std's FakeTime): timers fire in the order of their times, each at its own time, so what a
 * component decides on time (a hedge's deadline, a tail re-ask) is checked exactly, with no
 * sleep and whatever the machine's load.
 *
 *   const clock = new ManualClock();
 *   clock.setTimeout(() => log.push(clock.now()), 20);
 *   clock.advance(50); // log: [20], clock.now(): 50
 */
import type { Clock, ClockTimer } from "../../src/util/clock.ts";

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

export class ManualClock implements Clock {
  #t: number;
  #seq = 0;
  readonly #timers = new Set<Timer>();

  constructor(start = 0) {
    this.#t = start;
  }

  now(): number {
    return this.#t;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const timer: Timer = { at: this.#t + Math.max(0, ms || 0), seq: this.#seq++, fn };
    this.#timers.add(timer);
    return timer;
  }

  clearTimeout(timer: ClockTimer): void {
    this.#timers.delete(timer as Timer);
  }

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** When the next timer is due (undefined: none). */
  next(): number | undefined {
    return this.#first()?.at;
  }

  /** Moves to `to` (never back), firing every timer due by then, the earliest first, each at its own time (timers they set included). */
  advanceTo(to: number): void {
    let fired = 0;
    for (let t = this.#first(); t && t.at <= to; t = this.#first()) {
      // A timer that sets itself again at the same time would spin here forever: fail instead.
      if (++fired > 100_000) throw new Error(`ManualClock: over 100 000 timers fired moving to ${to} ms (stuck at ${t.at} ms): a timer loop`);
      this.#timers.delete(t);
      this.#t = Math.max(this.#t, t.at);
      t.fn();
    }
    this.#t = Math.max(this.#t, to);
  }

  /** `advanceTo(now + ms)`. */
  advance(ms: number): void {
    this.advanceTo(this.#t + ms);
  }

  #first(): Timer | undefined {
    let first: Timer | undefined;
    for (const t of this.#timers) if (!first || t.at < first.at || (t.at === first.at && t.seq < first.seq)) first = t;
    return first;
  }
}
