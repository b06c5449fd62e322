/** The sample order of one epoch: rng.ts's Fisher–Yates shuffle of 0…count−1, drawn from (seed, epoch). */
import { rng, shuffle } from "../plan/rng.ts";

export function epochPermutation(count: number, seed: number, epoch: number): Uint32Array<ArrayBuffer> {
  return shuffle(Uint32Array.from({ length: count }, (_, i) => i), rng(seed, epoch));
}
