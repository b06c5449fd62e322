/**
 * Weight initialization from a seeded generator (src/plan/rng.ts), drawn on the CPU and
 * uploaded once: the same seed gives the same model on every runtime and adapter.
 *   He (Kaiming) normal, std √(2/fanIn): layers followed by ReLU (He et al. 2015).
 *   Glorot (Xavier) uniform, ±√(6/(fanIn+fanOut)): the linear output layer (Glorot & Bengio 2010).
 */
import { rng } from "../plan/rng.ts";
import type { Rng } from "../plan/rng.ts";

/** "running-stats": batch norm's [mean | var] estimates, starting at mean 0, variance 1. */
export type InitKind = "he" | "glorot" | "zeros" | "ones" | "running-stats";

/** Standard normal draws (Box–Muller on two uniforms). */
function normal(r: Rng): number {
  const u = 1 - r.next(); // (0, 1]: log(0) cannot happen
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r.next());
}

export function heNormal(r: Rng, fanIn: number, n: number): Float32Array<ArrayBuffer> {
  const std = Math.sqrt(2 / fanIn);
  return Float32Array.from({ length: n }, () => normal(r) * std);
}

export function glorotUniform(r: Rng, fanIn: number, fanOut: number, n: number): Float32Array<ArrayBuffer> {
  const limit = Math.sqrt(6 / (fanIn + fanOut));
  return Float32Array.from({ length: n }, () => (2 * r.next() - 1) * limit);
}

/** Values for one parameter tensor; `stream` separates the draws of each tensor of a model. */
export function initValues(kind: InitKind, n: number, fanIn: number, fanOut: number, seed: number, stream: number): Float32Array<ArrayBuffer> {
  switch (kind) {
    case "zeros":
      return new Float32Array(n);
    case "ones":
      return new Float32Array(n).fill(1);
    case "running-stats":
      return new Float32Array(n).fill(1, n / 2);
    case "he":
      return heNormal(rng(seed, stream), fanIn, n);
    case "glorot":
      return glorotUniform(rng(seed, stream), fanIn, fanOut, n);
  }
}
