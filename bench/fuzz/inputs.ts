/**
 * The long fuzz run's inputs (bench/fuzz.bench.ts): input i of a run is a pure function of the
 * run's seed, i and the seed files, so that the main thread can write out the input a worker
 * hung on, and `--seed S --first I --inputs I+1` replays one.
 */
import { rng, randomInt } from "../../test/_support/random.ts";
import { mutateBytes, mutateStructure } from "../../test/_support/jpeg_mutate.ts";
import { mutatePng } from "../../test/_support/png_mutate.ts";

/** Inputs per slice; every fifth slice is PNG (when PNG is fuzzed), the rest JPEG. */
export const SLICE = 10_000;

export type Format = "jpeg" | "png";

export interface FuzzInput {
  format: Format;
  bytes: Uint8Array;
  /** What was done to the seed file. */
  did: string;
  /** The call: decode (with options), decodeInto at an offset, or coefficients. */
  call: "decode" | "into" | "coefficients";
  options: { scale?: 1 | 0.5 | 0.25 | 0.125; grey?: boolean; depth16?: boolean; maxPixels: number };
  offset: number;
}

export function formatOf(i: number, formats: readonly Format[]): Format {
  if (formats.length === 1) return formats[0];
  return Math.floor(i / SLICE) % 5 === 4 ? "png" : "jpeg";
}

/** One seed per input, mixed from the run's seed and i (a murmur3 finaliser). */
function inputSeed(seed: number, i: number): number {
  let h = (seed ^ Math.imul(i, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

export function makeInput(seed: number, i: number, formats: readonly Format[], jpegs: Uint8Array[], pngs: Uint8Array[]): FuzzInput {
  const next = rng(inputSeed(seed, i));
  const format = formatOf(i, formats);
  const r = next();
  const call = r < 0.1 ? "coefficients" : r < 0.4 ? "into" : "decode";
  const offset = call === "into" ? randomInt(next, 0, 64) : 0;
  if (format === "png") {
    const bytes = mutatePng(pngs[randomInt(next, 0, pngs.length - 1)], next);
    return { format, bytes, did: "png", call: call === "coefficients" ? "decode" : call, options: { grey: next() < 0.2, depth16: next() < 0.3, maxPixels: 1e6 }, offset };
  }
  const src = jpegs[randomInt(next, 0, jpegs.length - 1)];
  let bytes: Uint8Array, did = "bytes";
  if (next() < 0.7) {
    const m = mutateStructure(src, next);
    bytes = m.bytes;
    did = m.did.join("+");
  } else bytes = mutateBytes(src, next);
  const scale = ([1, 1, 1, 0.5, 0.25, 0.125] as const)[randomInt(next, 0, 5)];
  return { format, bytes, did, call, options: { scale, grey: next() < 0.2, maxPixels: 4e6 }, offset };
}
