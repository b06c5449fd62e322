/**
 * NOTE [ Worker scaling ] (src/decode/pool.ts) as one rule, apart from the workers it sizes:
 * each period a pool says how busy its workers were and whether work waited for them; the
 * scaler adds the consumer's waits (`demand`) and the machine's idle cores, and answers the
 * number of workers wanted (one more, one fewer, or as many). It keeps the periods it saw, so
 * that `stats()` can show why.
 *
 * @example
 * ```ts
 * import { Scaler } from "./scaler.ts";
 * const scaler = new Scaler({ min: 1, max: 4 });
 * scaler.demand(40); // the consumer waited 40 ms for batches this period
 * const next = scaler.period({ workers: 2, busyMs: 500, backlog: true, periodMs: 250 });
 * console.log(next >= 2 && next <= 3); // true (3 where half a core was idle)
 * ```
 */
import { runtime } from "../../runtime-adapters/index.ts";
import type { Clock } from "../util/clock.ts";

/** One scaling period: what the rule saw (NOTE [ Worker scaling ]) and what it did. */
export interface ScalePeriod {
  /** ms since the scaler started. */
  t: number;
  /** Serving workers wanted before the period. */
  workers: number;
  /** Serving workers wanted after the period. */
  to: number;
  /** Work waited for a worker (queued, or behind another job in one) at half the period's answers or more. */
  backlog: boolean;
  /** The consumer's share of the period spent waiting for batches (1 when no consumer reports). */
  waited: number;
  /** The machine's cores' worth of time idle during the period (Infinity when the runtime cannot say). */
  idleCores: number;
  /** Serving workers' worth of time not spent on jobs. */
  idleWorkers: number;
  /** A consumer reports its waits (`demand`). */
  consumer: boolean;
  /** The fewest workers the period could shrink to: min, or two while the slow lane was used lately. */
  floor: number;
}

/** How long after a job took the slow lane the scaler keeps a second worker for it (NOTE [ Worker scaling ]). */
const LANE_HOLD_MS = 4000;

export class Scaler {
  readonly min: number;
  readonly max: number;
  /** The last periods (at most 400). */
  readonly periods: ScalePeriod[] = [];
  readonly #now: () => number;
  readonly #base: number;
  #cpu: { cores: number; idleMs: number; totalMs: number };
  #waitMs = 0;
  #consumer = false;
  #idle = 0;
  #starved = 0;
  #laneAt = -Infinity;

  readonly #cpuTimes: () => { cores: number; idleMs: number; totalMs: number };

  /**
   * `cpuTimes`: the machine's CPU times (default runtime.cpuTimes), and `clock` the time the
   * slow lane's hold and the periods are read on (default the runtime adapter's `now()`): a test
   * gives its own.
   */
  constructor(o: { min: number; max: number; cpuTimes?: () => { cores: number; idleMs: number; totalMs: number }; clock?: Pick<Clock, "now"> }) {
    this.min = o.min;
    this.max = o.max;
    const clock = o.clock;
    this.#now = clock ? () => clock.now() : () => runtime.now();
    this.#base = this.#now();
    this.#cpuTimes = o.cpuTimes ?? runtime.cpuTimes;
    this.#cpu = this.#cpuTimes();
  }

  /** The consumer waited `waitMs` for a batch (the loader reports each hand-over). */
  demand(waitMs: number): void {
    this.#consumer = true;
    this.#waitMs += waitMs;
  }

  /** A job took the slow lane: a second worker is kept for a while. */
  laneUsed(): void {
    this.#laneAt = this.#now();
  }

  /** A new first period starts now (the pool was idle: what the cores did meanwhile is not the pool's). */
  restart(): void {
    this.#cpu = this.#cpuTimes();
    this.#waitMs = 0;
  }

  /**
   * A period of `periodMs` ended with `workers` wanted (`serving` of them serving: the others
   * are starting, or in the slow lane), `busyMs` of their time spent on jobs and work waiting
   * for them (`backlog`): the number of serving workers wanted now.
   */
  period(o: { workers: number; serving?: number; busyMs: number; backlog: boolean; periodMs: number }): number {
    const cpu = this.#cpuTimes();
    const total = cpu.totalMs - this.#cpu.totalMs;
    const idleCores = total > 0 ? (cpu.cores * (cpu.idleMs - this.#cpu.idleMs)) / total : Infinity;
    const periodMs = Math.max(1, o.periodMs);
    // A long job is counted whole in the period it ends in: clamped, its excess is not idleness elsewhere.
    const idleWorkers = Math.max(0, (o.serving ?? o.workers) - o.busyMs / periodMs);
    const waited = this.#consumer ? this.#waitMs / periodMs : 1;
    this.#idle = idleWorkers > 1 ? this.#idle + 1 : 0;
    this.#starved = idleCores < 0.25 && this.#consumer && waited < 0.01 && idleWorkers >= 0.5 ? this.#starved + 1 : 0;
    const now = this.#now();
    const floor = now - this.#laneAt < LANE_HOLD_MS ? Math.min(this.max, Math.max(this.min, 2)) : this.min;
    let to = o.workers;
    if (o.backlog && waited > 0.05 && idleCores >= 0.5 && o.workers < this.max) to = o.workers + 1;
    else if (o.workers > floor && (this.#idle >= 4 || this.#starved >= 4)) {
      this.#idle = this.#starved = 0;
      to = o.workers - 1;
    }
    this.periods.push({
      t: Math.round(now - this.#base), workers: o.workers, to, backlog: o.backlog, waited: round3(waited),
      idleCores: round3(Math.min(idleCores, cpu.cores)), idleWorkers: round3(idleWorkers), consumer: this.#consumer, floor,
    });
    if (this.periods.length > 400) this.periods.splice(0, 200);
    this.#cpu = cpu;
    this.#waitMs = 0;
    return to;
  }
}

function round3(x: number): number {
  return Number.isFinite(x) ? Math.round(x * 1000) / 1000 : x;
}
