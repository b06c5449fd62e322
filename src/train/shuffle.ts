/** The sample order of one epoch: a Fisher–Yates permutation drawn from (seed, epoch). */
import { rng } from "../plan/rng.ts";

export function epochPermutation(count: number, seed: number, epoch: number): Uint32Array<ArrayBuffer> {
  const r = rng(seed, epoch);
  const p = Uint32Array.from({ length: count }, (_, i) => i);
  for (let i = count - 1; i > 0; i--) {
    const j = r.int(i + 1);
    const t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  return p;
}
