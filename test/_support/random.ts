/** Seeded randomness for tests: every failure prints its seed, and CASSETTE_SEED replays it. */
import { runtime } from "../../runtime-adapters/index.ts";

/** mulberry32: small, fast, good enough for test inputs. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fresh seed per run unless CASSETTE_SEED is set. */
export function freshSeed(): number {
  const fixed = runtime.env("CASSETTE_SEED");
  return fixed ? Number(fixed) : (Math.random() * 2 ** 32) >>> 0;
}

export function randomBytes(next: () => number, n: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (next() * 256) | 0;
  return out;
}

export function randomInt(next: () => number, lo: number, hi: number): number {
  return lo + Math.floor(next() * (hi - lo + 1));
}
