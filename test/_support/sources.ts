/**
 * Source → Source decorators for loader tests, wrapped around a real source (never a fake
 * store): delays per request, failures on chosen ids, and a recorder of requests in flight.
 */
import type { FetchCallback, Source } from "../../src/source/source.ts";
import { runtime } from "../../runtime-adapters/index.ts";

/** Delays each answer by `delayMs(id)` (after the real fetch), e.g. a slow connection. */
export function delayed(inner: Source, delayMs: (id: string) => number): Source {
  return {
    name: `${inner.name} +delay`,
    fetch: (id, done) => inner.fetch(id, (err, s) => setTimeout(() => done(err, s), delayMs(id))),
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => inner.close(),
  };
}

/**
 * An injected clock for latency-driven tests (STYLE.md habit 13: fake time, no sleeps): while
 * `run` runs, `runtime.now()` reads a clock that only the source's nominal delays and the
 * consumer's nominal steps move: `delayed` answers each request `delayMs` after it was asked
 * *on that clock*, however late the real timer fires on a loaded machine (a test run beside
 * others saw a 2 ms source answer in 50 ms and the loader, rightly, take it for a far link),
 * and `spend(ms)` says the consumer took `ms` over a batch, whatever the real time it took (a
 * busy machine's consumer is slower by turns, which the depth policy's probes read as rates).
 * Restored when `run` ends. The Loader reads its time from the runtime adapter, so this is
 * how its tests get a clock (the units that take one, the hedger and the scaler, are given
 * test/_support/clock.ts's ManualClock).
 */
export async function withVirtualTime<T>(run: (delayed: (inner: Source, delayMs: (id: string) => number) => Source, spend: (ms: number) => void) => Promise<T>): Promise<T> {
  const clock = runtime as { now: () => number };
  const real = clock.now;
  let t = real();
  clock.now = () => t;
  const virtualDelayed = (inner: Source, delayMs: (id: string) => number): Source => ({
    name: `${inner.name} +delay`,
    fetch: (id, done) => {
      const asked = t, d = delayMs(id);
      return inner.fetch(id, (err, s) => setTimeout(() => {
        t = Math.max(t, asked + d);
        done(err, s);
      }, d));
    },
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => inner.close(),
  });
  try {
    return await run(virtualDelayed, (ms) => (t += ms));
  } finally {
    clock.now = real;
  }
}

/** Each answer weighs `bytes`: the real sample's bytes, then zeros (a store of larger samples). */
export function padded(inner: Source, bytes: number): Source {
  return {
    name: `${inner.name} +padded`,
    fetch: (id, done) => inner.fetch(id, (err, s) => {
      if (!s) return done(err, s);
      const data = new Uint8Array(Math.max(bytes, s.data.length));
      data.set(s.data);
      done(err, { ...s, data });
    }),
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => inner.close(),
  };
}

/** Fails the first `times` attempts for each id in `ids` (times = Infinity: always). */
export function flaky(inner: Source, ids: Set<string>, times: number): Source & { attempts: Map<string, number> } {
  const attempts = new Map<string, number>();
  return {
    name: `${inner.name} +flaky`,
    attempts,
    fetch(id: string, done: FetchCallback) {
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      if (ids.has(id) && n <= times) {
        setTimeout(() => done(Object.assign(new Error(`injected failure ${n} of ${id}`), { code: "ECONNRESET" })), 1);
        return true;
      }
      return inner.fetch(id, done);
    },
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => inner.close(),
  };
}

/** Records how many requests are in flight at most, and the requests made. */
export function recording(inner: Source): Source & { maxInFlight: number; requests: string[]; current: () => number } {
  let current = 0;
  const r = {
    name: inner.name,
    maxInFlight: 0,
    requests: [] as string[],
    current: () => current,
    fetch(id: string, done: FetchCallback) {
      current++;
      r.maxInFlight = Math.max(r.maxInFlight, current);
      r.requests.push(id);
      return inner.fetch(id, (e, s) => {
        current--;
        done(e, s);
      });
    },
    onDrain: (l: () => void) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => inner.close(),
  };
  return r;
}

/** Answers each request for an id in `ids` twice, at once (a source that misbehaves). */
export function twice(inner: Source, ids: Set<string>): Source {
  return {
    name: `${inner.name} +twice`,
    fetch: (id, done) => inner.fetch(id, (err, s) => {
      done(err, s);
      if (ids.has(id)) done(err, s);
    }),
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => inner.close(),
  };
}
