/**
 * The loop every decoder's fuzz test runs: each mutated input decodes, or throws the decoder's
 * named error with a known reason and an offset inside the input, and either way in bounded
 * time. The test makes the inputs and judges the tally.
 */
import * as assert from "uvu/assert";
import { runtime } from "../../runtime-adapters/index.ts";

export interface FuzzTally {
  images: number;
  errors: number;
  /** Errors by reason. */
  reasons: Map<string, number>;
  slowest: number;
}

/**
 * Runs `iteration(i)` for i < n: it draws an input and the call that decodes it (asserting on
 * the image); the call is timed and its error checked to be a `named` with a reason and offset.
 */
export function fuzzLoop(
  n: number,
  seed: number,
  named: abstract new (...args: never[]) => { reason: string; offset: number; message: string },
  maxMs: number,
  iteration: (i: number) => { bytes: Uint8Array; decode: () => void },
): FuzzTally {
  const tally: FuzzTally = { images: 0, errors: 0, reasons: new Map(), slowest: 0 };
  for (let i = 0; i < n; i++) {
    const { bytes, decode } = iteration(i);
    const t0 = runtime.now();
    try {
      decode();
      tally.images++;
    } catch (e) {
      if (!(e instanceof named)) throw new Error(`iteration ${i} (seed ${seed}): ${(e as Error)?.stack ?? e}, not a ${named.name}`);
      assert.ok(e.reason !== "unknown" && e.offset >= 0 && e.offset <= bytes.length, `iteration ${i}: ${e.message} (seed ${seed})`);
      tally.reasons.set(e.reason, (tally.reasons.get(e.reason) ?? 0) + 1);
      tally.errors++;
    }
    const ms = runtime.now() - t0;
    tally.slowest = Math.max(tally.slowest, ms);
    assert.ok(ms < maxMs, `iteration ${i} took ${ms.toFixed(0)} ms (seed ${seed})`);
  }
  return tally;
}
