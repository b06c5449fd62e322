/**
 * The one seeded PRNG of cassette (splitmix32 seeding a xoshiro128**): splits, epoch plans and
 * augmentation all draw from it, so a seed reproduces a run on every runtime.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

export function rng(...seed: number[]): Rng {
  // splitmix32 over every seed word gives four well-mixed state words.
  let h = 0x9e3779b9;
  const mix = (x: number) => {
    h = (h + x + 0x9e3779b9) | 0;
    let z = h;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  for (const w of seed) mix(w >>> 0), mix(Math.floor(w / 2 ** 32) >>> 0);
  let a = mix(1), b = mix(2), c = mix(3), d = mix(4);
  if ((a | b | c | d) === 0) a = 1;
  const next32 = () => {
    const r = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a; d ^= b; b ^= c; a ^= d; c ^= t; d = rotl(d, 11);
    return r;
  };
  return {
    next: () => next32() / 2 ** 32,
    int: (n) => Math.floor((next32() / 2 ** 32) * n),
  };
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/**
 * Fisher–Yates shuffle in place, of an array or a typed array (epoch orders of ids and of
 * sample indices draw the same swaps from the same seed).
 */
export function shuffle<A extends { length: number; [i: number]: unknown }>(items: A, r: Rng): A {
  for (let i = items.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    const t = items[i];
    items[i] = items[j];
    items[j] = t;
  }
  return items;
}

/** A stable 32-bit hash of a string (FNV-1a), to derive per-item seeds from ids. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
