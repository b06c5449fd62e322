/**
 * Mutations of PNG files for the PNG fuzz test (test/decode/png_fuzz.test.ts) and the long fuzz
 * run (bench/fuzz.bench.ts): byte mutations with the chunk CRCs mended (so they reach the
 * inflater and the filters), and mutations under the compression (the image data inflated,
 * changed, deflated again into IDATs of a random size).
 */
import { inflateSync } from "node:zlib";
import { randomInt } from "./random.ts";
import type { PngWorkshop } from "./png_encoders.ts";
import { chunk, chunkOffsets, concat, crc32, zlib } from "./png_build.ts";
import { type PngColorType, type PngSamples, SAMPLES_PER_PIXEL } from "../reference/png_expect.ts";

/** Small seed files of every colour type, plain and Adam7, stored/fixed/dynamic, split IDATs. */
export function pngSeedFiles(shop: PngWorkshop, next: () => number): { bytes: Uint8Array; img: PngSamples }[] {
  const kinds: [PngColorType, 1 | 2 | 4 | 8 | 16][] = [[0, 1], [0, 4], [0, 8], [0, 16], [2, 8], [2, 16], [3, 2], [3, 8], [4, 8], [4, 16], [6, 8], [6, 16]];
  const jobs = kinds.map(([colorType, bitDepth], i) => {
    const width = randomInt(next, 1, 24), height = randomInt(next, 1, 24);
    const spp = SAMPLES_PER_PIXEL[colorType];
    const entries = colorType === 3 ? randomInt(next, 1, 2 ** bitDepth) : 0;
    const top = colorType === 3 ? entries - 1 : 2 ** bitDepth - 1;
    const samples = new Uint16Array(width * height * spp).map((_, k) => (k % 5 < 2 ? 0 : randomInt(next, 0, top)));
    const img: PngSamples = { width, height, colorType, bitDepth, samples };
    if (colorType === 3) img.palette = Array.from({ length: entries }, (_, k) => (k === 0 ? [1, 2, 3, 4] : [k, 2 * k, 3 * k].map((v) => v & 255)));
    if (colorType === 0 && i % 2 === 0) img.transparent = 0;
    if (colorType === 2) img.transparent = [0, 0, 0];
    return { img, options: { interlace: i % 2 === 1, compression: [0, 1, 9][i % 3], chunkLimit: i % 4 === 0 ? 16 : 2 ** 20 } };
  });
  return shop.pypng(jobs).map((bytes, i) => ({ bytes, img: jobs[i].img }));
}

/** Rewrites every chunk's CRC where the framing still holds, so mutations reach the inflater. */
function fixCrcs(b: Uint8Array): void {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let p = 8; p + 12 <= b.length;) {
    const len = v.getUint32(p);
    if (len > b.length - p - 12) return;
    v.setUint32(p + 8 + len, crc32(b.subarray(p + 4, p + 8 + len)));
    p += 12 + len;
  }
}

/**
 * A mutation under the compression: the image data inflated, a few bytes changed (filter types,
 * palette indices, samples), deflated again at a random level into IDATs of a random size.
 */
function mutateImageData(src: Uint8Array, next: () => number): Uint8Array {
  const idats = chunkOffsets(src, "IDAT");
  const v = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const raw = new Uint8Array(inflateSync(concat(...idats.map((p) => src.subarray(p + 8, p + 8 + v.getUint32(p))))));
  const n = randomInt(next, 1, 3);
  for (let m = 0; m < n && raw.length > 0; m++) raw[randomInt(next, 0, raw.length - 1)] = next() < 0.5 ? randomInt(next, 0, 255) : randomInt(next, 0, 6);
  const stream = zlib(raw, randomInt(next, 0, 9));
  const size = next() < 0.5 ? randomInt(next, 1, 50) : stream.length;
  const parts: Uint8Array[] = [];
  for (let i = 0; i < stream.length; i += size) parts.push(chunk("IDAT", stream.subarray(i, i + size)));
  return concat(src.subarray(0, idats[0]), ...parts, chunk("IEND"));
}

/** One seeded mutation: bit flips, byte overwrites, cuts, duplicated or deleted runs. */
export function mutatePng(src: Uint8Array, next: () => number): Uint8Array {
  if (next() < 0.35) return mutateImageData(src, next);
  let b = src.slice();
  const n = next() < 0.7 ? 1 : randomInt(next, 2, 3);
  for (let m = 0; m < n; m++) {
    const kind = randomInt(next, 0, 5);
    const at = next() < 0.3 ? randomInt(next, 0, Math.min(b.length - 1, 60)) : randomInt(next, 0, b.length - 1);
    if (kind === 0) b[at] ^= 1 << randomInt(next, 0, 7);
    else if (kind === 1) b[at] = randomInt(next, 0, 255);
    else if (kind === 2) b[at] = [0x00, 0xff, 0x01, 0x7f, 0x80][randomInt(next, 0, 4)];
    else if (kind === 3) b = b.slice(0, at);
    else if (kind === 4) {
      const piece = b.slice(at, at + randomInt(next, 1, 40));
      b = concat(b.subarray(0, at), piece, b.subarray(at));
    } else {
      b = concat(b.subarray(0, at), b.subarray(Math.min(b.length, at + randomInt(next, 1, 20))));
    }
    if (b.length === 0) break;
  }
  if (next() < 0.75) fixCrcs(b);
  return b;
}

