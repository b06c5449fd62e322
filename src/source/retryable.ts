/**
 * Whether asking again can help: a flag set where a source makes its error, read by
 * RetrySource (and by HedgeSource, which only hedges what a retry could also fix).
 *
 * A source knows what its answer means: HTTP 403 will be 403 again, a missing id stays
 * missing, a 503 or a reset connection may not. So the source sets `retryable` on the error
 * it makes (`storeError(…)`); `isRetryable(err)` reads that flag first and classifies only
 * errors that carry none (a driver's own errors, a socket error passed through).
 *
 * @example
 * ```ts
 * import { isRetryable, storeError } from "./retryable.ts";
 * const forbidden = storeError("ERR_STORE", "Cannot get http://h/data/x: it answered HTTP 403 Forbidden", false);
 * const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
 * console.log(isRetryable(forbidden), isRetryable(reset)); // false true
 * ```
 */
import { CassetteError, type ErrorCode } from "../errors.ts";

/** An error that says whether retrying it can help. */
export interface Retryable {
  /** Whether asking again can help (a timeout, a 503) or not (a missing sample, a 403). */
  retryable: boolean;
  /** How long the server asked to wait before asking again (HTTP Retry-After), in ms. */
  retryAfterMs?: number;
}

/** A CassetteError carrying `retryable`, for sources to answer with. */
export function storeError(code: ErrorCode, message: string, retryable: boolean, options?: { cause?: unknown }): CassetteError & Retryable {
  return Object.assign(new CassetteError(code, message, options), { retryable });
}

/**
 * Whether an HTTP status is worth asking again: 5xx, 408 Request Timeout and 429 Too Many
 * Requests are the server's state, which changes; any other 4xx is about the request, which
 * does not (RFC 9110 §15.5, §15.6; RFC 6585 §4).
 */
export function retryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * The flag when the error has one; otherwise a classification:
 * - CassetteError: ERR_STORE_UNREACHABLE and ERR_RUNTIME are retried; ERR_STORE (the store
 *   answered), malformed input, bad options and unsupported features are not.
 * - cassandra-driver ResponseError: request errors (syntax, unauthorized, invalid, config,
 *   already exists: codes 0x2000–0x2400) are not; unavailable, overloaded and timeouts are.
 * - anything else (socket errors, driver timeouts, no host available) is retried.
 */
export function isRetryable(err: unknown): boolean {
  const e = err as { retryable?: unknown; code?: unknown; cause?: unknown } | null;
  if (typeof e?.retryable === "boolean") return e.retryable;
  if (err instanceof CassetteError) return err.code === "ERR_STORE_UNREACHABLE" || err.code === "ERR_RUNTIME";
  const code = e?.code;
  if (typeof code === "number" && code >= 0x2000 && code <= 0x2400) return false;
  return true;
}
