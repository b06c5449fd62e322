/**
 * Retries a Source's failed requests with exponential backoff and jitter (a Source → Source
 * wrapper, STYLE.md habit 5). Errors that retrying cannot fix (a sample that does not exist,
 * a bad query) are passed on at once. With several Cassandra hosts the driver's own retry and
 * load-balancing policies send the next attempt to another replica.
 */
import { CassetteError } from "../errors.ts";
import type { FetchCallback, Source } from "./source.ts";

export interface RetryOptions {
  /** Attempts after the first (default 3). */
  retries?: number;
  /** First backoff in ms (default 50), doubled each attempt up to `maxDelayMs` (2000). */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export class RetrySource implements Source {
  readonly name: string;
  readonly #inner: Source;
  readonly #retries: number;
  readonly #base: number;
  readonly #max: number;
  #count = 0;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(inner: Source, o: RetryOptions = {}) {
    this.#inner = inner;
    this.name = inner.name;
    this.#retries = o.retries ?? 3;
    this.#base = o.baseDelayMs ?? 50;
    this.#max = o.maxDelayMs ?? 2000;
  }

  /** Retries made so far. */
  get retries(): number {
    return this.#count;
  }

  fetch(id: string, done: FetchCallback): boolean {
    return this.#attempt(id, done, 0);
  }

  #attempt(id: string, done: FetchCallback, n: number): boolean {
    return this.#inner.fetch(id, (err, s) => {
      if (!err) return done(null, s);
      if (n >= this.#retries || !retryable(err)) {
        return done(n > 0 ? new CassetteError(cassetteCode(err), `${err.message} (after ${n + 1} attempts)`, { cause: err }) : err);
      }
      this.#count++;
      const delay = Math.min(this.#max, this.#base * 2 ** n) * (0.5 + Math.random() / 2);
      const t = setTimeout(() => {
        this.#timers.delete(t);
        this.#attempt(id, done, n + 1);
      }, delay);
      this.#timers.add(t);
    });
  }

  onDrain(listener: () => void): void {
    this.#inner.onDrain(listener);
  }
  inFlight(): number {
    return this.#inner.inFlight() + this.#timers.size;
  }
  close(): Promise<void> {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    return this.#inner.close();
  }
}

function retryable(err: Error): boolean {
  const code = (err as { code?: string }).code;
  if (code === "ERR_STORE" && /Cannot find sample/.test(err.message)) return false;
  if (code === "ERR_MALFORMED_INPUT" || code === "ERR_INVALID_OPTION" || code === "ERR_UNSUPPORTED") return false;
  // cassandra-driver: syntax/invalid-query/unauthorized errors (ResponseError codes 0x2000–0x2300).
  const rc = (err as { code?: number }).code;
  if (typeof rc === "number" && rc >= 0x2000 && rc <= 0x2300) return false;
  return true;
}

function cassetteCode(err: Error) {
  const c = (err as { code?: unknown }).code;
  return typeof c === "string" && c.startsWith("ERR_") ? (c as CassetteError["code"]) : "ERR_STORE_UNREACHABLE";
}
