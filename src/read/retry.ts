/**
 * Retries a Source's failed requests with exponential backoff and jitter (a Source → Source
 * wrapper, so every store gets it and none holds it). Which errors are retried is the error's own `retryable` flag,
 * set by the source that made it (retryable.ts): a missing sample, an HTTP 403, a bad query
 * are passed on at once; a 503, a timeout, a reset connection are tried again. With several
 * Cassandra hosts the driver's own retry and load-balancing policies send the next attempt to
 * another replica.
 */
import type { CassetteError } from "../errors.ts";
import { isRetryable, storeError } from "../source/retryable.ts";
import type { FetchCallback, Source } from "../source/source.ts";

/** How `RetrySource` retries: attempts, backoff bounds, and the longest Retry-After it waits. */
export interface RetryOptions {
  /** Attempts after the first (default 3). */
  retries?: number;
  /** First backoff in ms (default 50), doubled each attempt up to `maxDelayMs` (2000). */
  baseDelayMs?: number;
  /** Longest backoff in ms (default 2000). */
  maxDelayMs?: number;
  /**
   * Longest wait a server's Retry-After may ask for, in ms (default 30 000): the attempt waits
   * at least what the server asked, up to this (a longer wait looks like a hang).
   */
  maxRetryAfterMs?: number;
}

/** Wraps a Source so that a request failing with a retryable error (a timeout, a 503, a reset) is tried again after an exponential backoff with jitter. */
export class RetrySource implements Source {
  /** The inner source's name. */
  readonly name: string;
  /** The inner source's plan hook (Source.plan: a cache plans with it), where it has one. */
  readonly plan?: (epoch: number, ids: readonly string[]) => void;
  readonly #inner: Source;
  readonly #retries: number;
  readonly #base: number;
  readonly #max: number;
  readonly #maxAfter: number;
  #count = 0;
  #closed = false;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();

  /** Wraps `inner` with the retry policy of `o`. */
  constructor(inner: Source, o: RetryOptions = {}) {
    this.#inner = inner;
    this.name = inner.name;
    if (inner.plan) this.plan = (epoch, ids) => inner.plan!(epoch, ids);
    this.#retries = o.retries ?? 3;
    this.#base = o.baseDelayMs ?? 50;
    this.#max = o.maxDelayMs ?? 2000;
    this.#maxAfter = o.maxRetryAfterMs ?? 30_000;
  }

  /** Retries made so far. */
  get retries(): number {
    return this.#count;
  }

  /** Fetches `id`, trying again on a retryable error; `done` is called once, with the last error if every attempt failed. Returns false when the inner source is saturated. */
  fetch(id: string, done: FetchCallback, epoch?: number): boolean {
    return this.#attempt(id, done, 0, epoch);
  }

  #attempt(id: string, done: FetchCallback, n: number, epoch: number | undefined): boolean {
    return this.#inner.fetch(id, (err, s) => {
      if (!err) return done(null, s);
      const again = isRetryable(err);
      // Once closed, the inner source aborts what is in flight: those errors are final.
      if (n >= this.#retries || !again || this.#closed) {
        return done(n > 0 ? storeError(cassetteCode(err), `${err.message} (after ${n + 1} attempts)`, again, { cause: err }) : err);
      }
      this.#count++;
      const asked = (err as { retryAfterMs?: unknown }).retryAfterMs;
      const backoff = Math.min(this.#max, this.#base * 2 ** n) * (0.5 + Math.random() / 2);
      const delay = typeof asked === "number" && asked > 0 ? Math.max(backoff, Math.min(asked, this.#maxAfter)) : backoff;
      const t = setTimeout(() => {
        this.#timers.delete(t);
        this.#attempt(id, done, n + 1, epoch);
      }, delay);
      this.#timers.add(t);
    }, epoch);
  }

  /** Called when the inner source can take requests again. */
  onDrain(listener: () => void): void {
    this.#inner.onDrain(listener);
  }
  /** Requests started and not yet answered, those waiting for their next attempt included. */
  inFlight(): number {
    return this.#inner.inFlight() + this.#timers.size;
  }
  /** Cancels the waiting attempts and closes the inner source. */
  close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    return this.#inner.close();
  }
}

function cassetteCode(err: Error) {
  const c = (err as { code?: unknown }).code;
  return typeof c === "string" && c.startsWith("ERR_") ? (c as CassetteError["code"]) : "ERR_STORE_UNREACHABLE";
}
