/**
 * A clock: the time in ms and timers on it. What reads the time to decide something (the
 * hedger's deadlines) takes one, so that its tests can run on a clock they move themselves
 * (test/_support/clock.ts's `ManualClock`: exact, no sleeps; STYLE.md habit 13) while the
 * library runs on the system's. Policies that only compare times are given the times instead
 * (src/schedule/depth.ts's `answered(ms, now)`, src/decode/deadline.ts's `observe(ms)`).
 *
 * @example
 * ```ts
 * import { systemClock } from "./clock.ts";
 * const t0 = systemClock.now();
 * const waited = await new Promise<number>((r) => systemClock.setTimeout(() => r(systemClock.now() - t0), 5));
 * console.log(waited >= 0); // true
 * ```
 */

/** A timer's handle, as its clock's `setTimeout` returned it. */
export type ClockTimer = unknown;

/** The time in ms (from any origin, only differences count) and timers on that time. */
export interface Clock {
  /** Now, in ms. */
  now(): number;
  /** Calls `fn` once `ms` have passed on this clock. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  /** Cancels a timer of this clock's (a fired or cancelled one: nothing). */
  clearTimeout(timer: ClockTimer): void;
}

/** The system's timers, with `now` for the time (the runtime adapter's `now`, where a room may import it). */
export function timersWith(now: () => number): Clock {
  return {
    now,
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
  };
}

/** `performance.now()` and the system's timers. */
export const systemClock: Clock = timersWith(() => performance.now());
