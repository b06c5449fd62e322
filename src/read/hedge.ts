/**
 * Hedged requests for stragglers (Dean and Barroso, "The Tail at Scale", CACM 56(2), 2013,
 * "hedged requests"): a Source → Source wrapper, so every store gets it and none holds it. When a request has not answered by a tail-latency deadline, the same id is asked
 * again; the inner source sends it where it can (undici's pool: a connection that is not busy;
 * the Cassandra driver: another connection or replica). The first answer wins and is passed
 * on; the other is dropped when it comes. Each `fetch` is answered exactly once.
 *
 * The deadline is a high quantile (p95) of recently observed latencies × a factor (2), never
 * under a floor (10 ms), so only the slowest few percent are hedged, and a fixed `delayMs` can
 * replace it. A budget caps hedges at a share of requests (5 %): a store that is slow for
 * everyone is not asked twice for everything, and none goes out before `warmup` latencies
 * have been seen. A hedge is sent even when the inner source says it is full: a loader keeps
 * it full, so waiting for room would mean never hedging, and the budget bounds the excess.
 *
 *   in flight, in start order:   r17 ─ r18 ─ r19 ─ …     one timer, at r17.start + deadline
 *   timer fires: every request past the deadline is hedged (within the budget) or left alone,
 *   and leaves the queue; the timer is set again for the new head.
 *
 * A second trigger, for the end of an epoch: while a consumer waits for the last samples,
 * `urge(true)` asks again, once and outside the budget, for every request pending far longer
 * than usual: 3 × the median latency, and at least 100 ms more (past a retry's first backoffs).
 * The tail is bounded by what is in flight, so no budget is needed; hedging by quantile can be
 * off (`budget: 0`) with the tail trigger on. A request is asked for at most twice in all.
 *
 * @example
 * ```ts
 * import { HedgeSource } from "./hedge.ts";
 * import { open } from "./open.ts";
 * import { openStore } from "../source/open.ts";
 * import { ingest } from "../dataset/ingest.ts";
 * const store = await openStore("sqlite:.tmp/hedge-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 4 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * await store.close();
 * const source = new HedgeSource(await open("sqlite:.tmp/hedge-example.sqlite", { mode: "read", dataset: "fm" }), { delayMs: 50 });
 * const got = await Promise.all(ids.map((id) => new Promise((resolve) => source.fetch(id, (e, s) => resolve(s?.id)))));
 * console.log(got.length, source.hedged <= 0.05 * source.requests); // 8 true
 * await source.close();
 * ```
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { timersWith, type Clock, type ClockTimer } from "../util/clock.ts";
export type { Clock, ClockTimer };
import type { FetchCallback, Fetched, Source } from "../source/source.ts";

/** How `HedgeSource` decides to ask a slow request again: the latency quantile and factor of its deadline, a floor or fixed delay, a budget, and a warm-up. */
export interface HedgeOptions {
  /** The quantile of recent latencies the deadline is taken from (default 0.95). */
  quantile?: number;
  /** The deadline is that quantile × `factor` (default 2). */
  factor?: number;
  /** Never hedge sooner than this, in ms (default 10): jitter is not a straggler. */
  minDelayMs?: number;
  /** A fixed deadline in ms instead of the quantile (then no warm-up is needed). */
  delayMs?: number;
  /** Most hedges as a share of requests made (default 0.05). */
  budget?: number;
  /** Latencies remembered for the quantile (default 512). */
  history?: number;
  /**
   * Latencies seen before the first hedge (default 8). Small on purpose: in strict order a
   * straggler in the first batch stops the window, so only the first window's answers
   * (rampStart × batch size) ever arrive to warm up from.
   */
  warmup?: number;
  /**
   * The clock its deadlines are read and its timers set on (default the runtime adapter's
   * `now()` and the system's timers): tests give one they move themselves.
   */
  clock?: Clock;
  /** @deprecated Use `clock`: the time alone, in ms (the timers stay the system's). */
  now?: () => number;
}

/**
 * `o` with its defaults, checked; errors say "Cannot hedge SUBJECT as 'OPTION' must be …:
 * current value is …" (the Loader checks its `hedge` option with it before opening anything).
 */
export function hedgeOptions(o: HedgeOptions, subject = "requests"): Required<Omit<HedgeOptions, "delayMs" | "now" | "clock">> & Pick<HedgeOptions, "delayMs"> {
  const bad = (name: string, why: string, v: unknown): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot hedge ${subject} as '${name}' must be ${why}: current value is ${v}`);
  };
  const q = o.quantile ?? 0.95, factor = o.factor ?? 2, floor = o.minDelayMs ?? 10, budget = o.budget ?? 0.05;
  const history = o.history ?? 512, warmup = o.warmup ?? 8;
  if (!(q > 0 && q <= 1)) bad("quantile", "in (0, 1]", q);
  if (!(factor > 0 && Number.isFinite(factor))) bad("factor", "a positive number", factor);
  if (!(floor >= 0 && Number.isFinite(floor))) bad("minDelayMs", "a number ≥ 0", floor);
  if (o.delayMs !== undefined && !(o.delayMs >= 0 && Number.isFinite(o.delayMs))) bad("delayMs", "a number ≥ 0", o.delayMs);
  if (!(budget >= 0 && budget <= 1)) bad("budget", "in [0, 1]", budget);
  if (!(Number.isInteger(history) && history >= 1)) bad("history", "a positive integer", history);
  if (!(Number.isInteger(warmup) && warmup >= 0)) bad("warmup", "an integer ≥ 0", warmup);
  return { quantile: q, factor, minDelayMs: floor, budget, history, warmup, delayMs: o.delayMs };
}

interface Request {
  id: string;
  /** The epoch it was asked in (Source.fetch), for the asks again. */
  epoch?: number;
  done: FetchCallback;
  start: number;
  /** Attempts sent and not yet answered. */
  pending: number;
  settled: boolean;
  /** Why it was asked for a second time, if it was. */
  again?: "hedge" | "tail";
  error?: Error;
}

/**
 * Recomputing the quantile (a sort of `history` latencies) on every answer would cost more than
 * the answer itself on a fast store; every this many answers follows a change well enough.
 */
const REQUANTILE_EVERY = 64;

/** Wraps a Source so that a request slower than a tail-latency deadline is asked again, and the first answer wins (hedged requests). */
export class HedgeSource implements Source {
  /** The inner source's name. */
  readonly name: string;
  /** The dataset the inner source reads, when it knows. */
  readonly dataset?: string;
  /** Every sample id the inner source can serve, where it can list them. */
  readonly ids?: () => string[] | Promise<string[]>;
  /** The inner source's plan hook (Source.plan: a cache plans with it), where it has one. */
  readonly plan?: (epoch: number, ids: readonly string[]) => void;
  readonly #inner: Source;
  readonly #clock: Clock;
  readonly #q: number;
  readonly #factor: number;
  readonly #floor: number;
  readonly #fixed?: number;
  readonly #budget: number;
  readonly #warmup: number;
  readonly #latency: Float64Array;
  #seen = 0; // latencies observed (the ring holds the last `history`)
  #sinceQuantile = 0;
  #deadline?: number;
  #requests = 0;
  #hedged = 0;
  #wins = 0;
  #reasked = 0;
  #reaskWins = 0;
  #closed = false;
  /** Requests not yet considered for a hedge, in start order (a Set keeps insertion order). */
  readonly #waiting = new Set<Request>();
  /** Requests not yet answered, in start order (the tail trigger's queue). */
  readonly #open = new Set<Request>();
  #timer?: ClockTimer;
  #urged = false;
  #tailTimer?: ClockTimer;

  /** Wraps `inner`; a bad option is a CassetteError naming it. */
  constructor(inner: Source, o: HedgeOptions = {}) {
    const { quantile: q, factor, minDelayMs: floor, budget, history, warmup } = hedgeOptions(o, `requests to ${inner.name}`);
    this.#inner = inner;
    this.name = inner.name;
    if (inner.dataset !== undefined) this.dataset = inner.dataset;
    if (inner.ids) this.ids = () => inner.ids!();
    if (inner.plan) this.plan = (epoch, ids) => inner.plan!(epoch, ids);
    this.#clock = o.clock ?? timersWith(o.now ?? (() => runtime.now()));
    this.#q = q;
    this.#factor = factor;
    this.#floor = floor;
    this.#fixed = o.delayMs;
    this.#budget = budget;
    this.#warmup = Math.min(warmup, history);
    this.#latency = new Float64Array(history);
  }

  /** Requests made (not counting hedges). */
  get requests(): number {
    return this.#requests;
  }
  /** Hedges sent. */
  get hedged(): number {
    return this.#hedged;
  }
  /** Requests whose hedge answered first. */
  get hedgeWins(): number {
    return this.#wins;
  }
  /** Requests asked for again by the tail trigger (`urge`). */
  get reasked(): number {
    return this.#reasked;
  }
  /** Of those, how many got their answer from the second request. */
  get reaskWins(): number {
    return this.#reaskWins;
  }

  /**
   * The tail trigger's deadline now, in ms: 3 × the median of recent latencies, and at least
   * 100 ms over it (150 ms before any answer).
   */
  tailDeadline(): number {
    const n = Math.min(this.#seen, this.#latency.length);
    const p50 = n ? this.#latency.slice(0, n).sort()[n >> 1] : 50;
    return Math.max(3 * p50, p50 + 100);
  }

  /**
   * `true`: a consumer is waiting for what is still in flight (the end of an epoch), so ask
   * again for each request that passes the tail deadline; `false`: stop doing so.
   */
  urge(on: boolean): void {
    this.#urged = on;
    if (on) return this.#armTail();
    if (this.#tailTimer !== undefined) this.#clock.clearTimeout(this.#tailTimer);
    this.#tailTimer = undefined;
  }
  /** The deadline now, in ms (undefined while warming up). */
  deadline(): number | undefined {
    if (this.#fixed !== undefined) return this.#fixed;
    const n = Math.min(this.#seen, this.#latency.length);
    if (n < this.#warmup || n === 0) return undefined;
    if (this.#deadline === undefined || this.#sinceQuantile >= REQUANTILE_EVERY) {
      const sorted = this.#latency.slice(0, n).sort();
      const q = sorted[Math.min(n - 1, Math.floor(this.#q * n))];
      this.#deadline = Math.max(this.#floor, q * this.#factor);
      this.#sinceQuantile = 0;
    }
    return this.#deadline;
  }

  /** Fetches `id`, asking again past the deadline; `done` is called exactly once. Returns false when the inner source is saturated. */
  fetch(id: string, done: FetchCallback, epoch?: number): boolean {
    this.#requests++;
    const r: Request = { id, epoch, done, start: this.#clock.now(), pending: 1, settled: false };
    if (this.#budget > 0) this.#waiting.add(r); // with no hedge budget only the tail trigger looks
    this.#open.add(r);
    const more = this.#inner.fetch(id, (e, s) => this.#answer(r, false, r.start, e, s), epoch);
    this.#arm();
    if (this.#urged) this.#armTail();
    return more;
  }

  #answer(r: Request, hedge: boolean, start: number, err: Error | null, s?: Fetched): void {
    r.pending--;
    if (!err) this.#observe(this.#clock.now() - start);
    if (r.settled) return; // the loser: dropped
    if (err && r.pending > 0) {
      r.error = err; // the other attempt may still answer
      return;
    }
    r.settled = true;
    this.#waiting.delete(r);
    this.#open.delete(r);
    if (!err && hedge) {
      if (r.again === "tail") this.#reaskWins++;
      else this.#wins++;
    }
    r.done(err, s);
  }

  #observe(ms: number): void {
    this.#latency[this.#seen++ % this.#latency.length] = ms;
    this.#sinceQuantile++;
    this.#arm(); // the first deadline can be known only after the warm-up
  }

  /** Sets the one timer for the oldest request still waiting. */
  #arm(): void {
    if (this.#timer !== undefined || this.#closed || this.#budget === 0) return;
    const head = this.#waiting.values().next();
    if (head.done) return;
    const d = this.deadline();
    if (d === undefined) return;
    this.#timer = this.#clock.setTimeout(() => this.#fire(), Math.max(0, head.value.start + d - this.#clock.now()));
  }

  #fire(): void {
    this.#timer = undefined;
    const d = this.deadline();
    if (d === undefined || this.#closed) return;
    const now = this.#clock.now();
    for (const r of this.#waiting) {
      if (r.start + d > now) break; // start order: the rest are younger
      this.#waiting.delete(r);
      if (r.again || this.#hedged + 1 > this.#budget * this.#requests) continue; // over budget: it just waits
      this.#hedged++;
      this.#askAgain(r, "hedge");
    }
    this.#arm();
  }

  #askAgain(r: Request, why: "hedge" | "tail"): void {
    r.again = why;
    r.pending++;
    const at = this.#clock.now();
    this.#inner.fetch(r.id, (e, s) => this.#answer(r, true, at, e, s), r.epoch);
  }

  /** While urged: one timer, for the oldest request asked for only once. */
  #armTail(): void {
    if (!this.#urged || this.#tailTimer !== undefined || this.#closed) return;
    let oldest: Request | undefined;
    for (const r of this.#open) {
      if (!r.again) {
        oldest = r;
        break;
      }
    }
    if (!oldest) return;
    const d = this.tailDeadline();
    this.#tailTimer = this.#clock.setTimeout(() => {
      this.#tailTimer = undefined;
      if (!this.#urged || this.#closed) return;
      const now = this.#clock.now();
      for (const r of this.#open) {
        if (r.start + d > now) break; // start order: the rest are younger
        if (r.again) continue;
        this.#reasked++;
        this.#askAgain(r, "tail");
      }
      this.#armTail();
    }, Math.max(0, oldest.start + d - this.#clock.now()));
  }

  /** Called when the inner source can take requests again. */
  onDrain(listener: () => void): void {
    this.#inner.onDrain(listener);
  }
  /** Requests started and not yet answered, as the inner source counts them. */
  inFlight(): number {
    return this.#inner.inFlight();
  }
  /** Stops hedging and closes the inner source. */
  close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.urge(false);
    this.#waiting.clear();
    this.#open.clear();
    return this.#inner.close();
  }
}
