/**
 * The loop every decoder's fuzz test runs, and the long fuzz run (bench/fuzz.bench.ts): each
 * mutated input decodes, or throws the decoder's named error with a known reason and an offset
 * inside the input, and either way in bounded time. The caller makes the inputs and judges the
 * tally.
 */
import * as assert from "uvu/assert";
import { runtime } from "../../runtime-adapters/index.ts";

export interface FuzzTally {
  images: number;
  errors: number;
  /** Errors by reason. */
  reasons: Map<string, number>;
  slowest: number;
  /** The input that took `slowest`. */
  slowestAt: number;
  /** Inputs that threw something else, or failed an assertion (only counted with `onFailure`). */
  crashes: number;
  /** Inputs over the time bound (only counted with `onFailure`). */
  hangs: number;
  /** Inputs over the bound once but not when timed again: the machine's doing, not theirs. */
  slowOnce: number;
}

/** What `onFailure` hears of an input that crashed (any other throw) or hung (over `maxMs`). */
export interface FuzzFailure {
  i: number;
  bytes: Uint8Array;
  kind: "crash" | "hang";
  detail: string;
}

/**
 * Runs `iteration(i)` for i < n: it draws an input and the call that decodes it (asserting on
 * the image); the call is timed (an input over `maxMs` is timed again) and its error checked to be a `named` with a reason and offset.
 * The first failure throws, unless `onFailure` is given: then it is reported there, counted,
 * and the loop goes on (the long run writes each one out and keeps fuzzing).
 */
export function fuzzLoop(
  n: number,
  seed: number,
  named: abstract new (...args: never[]) => { reason: string; offset: number; message: string },
  maxMs: number,
  iteration: (i: number) => { bytes: Uint8Array; decode: () => void },
  onFailure?: (f: FuzzFailure) => void,
  first = 0,
): FuzzTally {
  const tally: FuzzTally = { images: 0, errors: 0, reasons: new Map(), slowest: 0, slowestAt: -1, crashes: 0, hangs: 0, slowOnce: 0 };
  for (let i = first; i < n; i++) {
    const { bytes, decode } = iteration(i);
    const t0 = runtime.now();
    try {
      try {
        decode();
        tally.images++;
      } catch (e) {
        if (!(e instanceof named)) throw new Error(`iteration ${i} (seed ${seed}): ${(e as Error)?.stack ?? e}, not a ${named.name}`);
        assert.ok(e.reason !== "unknown" && e.offset >= 0 && e.offset <= bytes.length, `iteration ${i}: ${e.message} (seed ${seed})`);
        tally.reasons.set(e.reason, (tally.reasons.get(e.reason) ?? 0) + 1);
        tally.errors++;
      }
    } catch (e) {
      if (!onFailure) throw e;
      tally.crashes++;
      onFailure({ i, bytes, kind: "crash", detail: (e as Error)?.stack ?? String(e) });
    }
    let ms = runtime.now() - t0;
    if (ms >= maxMs) {
      // Timed twice more, the best counting: a busy machine (other processes, a GC) can stall
      // any one call, and a hang is the input's only if it is slow every time.
      for (let k = 0; k < 2 && ms >= maxMs; k++) {
        const t1 = runtime.now();
        try {
          decode();
        } catch {
          // judged above
        }
        ms = Math.min(ms, runtime.now() - t1);
      }
      if (ms < maxMs) tally.slowOnce++;
    }
    if (ms > tally.slowest) (tally.slowest = ms), (tally.slowestAt = i);
    if (ms >= maxMs && onFailure) {
      tally.hangs++;
      onFailure({ i, bytes, kind: "hang", detail: `took ${ms.toFixed(0)} ms, over the bound of ${maxMs} ms` });
    } else assert.ok(ms < maxMs, `iteration ${i} took ${ms.toFixed(0)} ms (seed ${seed})`);
  }
  return tally;
}
