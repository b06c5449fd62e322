import * as assert from "uvu/assert";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { PngWorkshop } from "../_support/png_encoders.ts";
import { inflateSync } from "node:zlib";
import { buildPng, chunk, chunkOffsets, concat, crc32, ihdr, SIGNATURE, zlib } from "../_support/png_build.ts";
import { expectedPixels, imageValues, type PngColorType, type PngSamples, SAMPLES_PER_PIXEL } from "../reference/png_expect.ts";
import { createPngDecoder } from "../../src/decode/png.ts";
import { PngError } from "../../src/decode/png_error.ts";
import { fuzzLoop } from "../_support/fuzz.ts";
import { runtime } from "../../runtime-adapters/index.ts";

// Mutated and cut PNGs must give a PngError or an image, never another exception, a crash or a
// hang; the bombs (a stream that inflates far past IHDR's size, a header of 10^10 pixels) are
// named errors found without allocating for them.

/** CASSETTE_FUZZ_ITERATIONS=200000 for a long run by hand. */
const ITERATIONS = Number(runtime.env("CASSETTE_FUZZ_ITERATIONS") ?? 20000);
/** Per decode: a hang or a runaway loop on hostile input would blow through this. */
const MAX_MS = 250;

const shop = new PngWorkshop();
afterAll(() => shop.close());

/** Small seed files of every colour type, plain and Adam7, stored/fixed/dynamic, split IDATs. */
function seedFiles(next: () => number): { bytes: Uint8Array; img: PngSamples }[] {
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
function mutate(src: Uint8Array, next: () => number): Uint8Array {
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

test(`fuzz: ${ITERATIONS} seeded mutations of pypng files give a PngError or an image, each in bounded time`, async () => {
  const png = await createPngDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const seeds = seedFiles(next);
  const { images, errors, reasons, slowest } = fuzzLoop(ITERATIONS, seed, PngError, MAX_MS, (i) => {
    const bytes = mutate(seeds[i % seeds.length].bytes, next);
    const options = { grey: next() < 0.2, depth16: next() < 0.3, maxPixels: 1e6 };
    return {
      bytes,
      decode: () => {
        const img = png.decode(bytes, options);
        assert.is(img.data.length, img.width * img.height * img.channels * (img.bitDepth / 8), `iteration ${i}: output size (seed ${seed})`);
      },
    };
  });
  console.log(`    ${images} images, ${errors} errors (${[...reasons].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ${n}`).join(", ")}); slowest ${slowest.toFixed(1)} ms; seed ${seed}`);
  assert.ok(errors > ITERATIONS / 10 && images > ITERATIONS / 10, "the mutations reach both outcomes");
  assert.ok(reasons.size >= 10, `the mutations reach many checks: ${[...reasons.keys()]}`);
  // After all that, the instance still decodes every seed exactly.
  for (const { bytes, img } of seeds) assert.equal([...imageValues(png.decode(bytes))], [...expectedPixels(img).values], `seed file ${img.colorType}/${img.bitDepth} after fuzzing`);
}, { timeoutMs: 600_000 });

test("a zlib bomb (a 10 KB IDAT inflating to 10 MB under a 64×64 IHDR) stops at IHDR's size as too-much-data", async () => {
  const png = await createPngDecoder();
  const before = png.memoryBytes;
  const width = 64, height = 64;
  const stream = zlib(new Uint8Array(10 << 20), 9); // rows of filter 0 and zeros, far too many
  assert.ok(stream.length < 20_000, `the bomb is small: ${stream.length} bytes`);
  const bomb = buildPng({ width, height, bitDepth: 8, colorType: 0, stream });
  const t0 = runtime.now();
  let err: unknown;
  try {
    png.decode(bomb);
  } catch (e) {
    err = e;
  }
  assert.instance(err, PngError);
  const e = err as PngError;
  assert.is(e.reason, "too-much-data", e.message);
  assert.is(e.expected, height * (width + 1));
  assert.match(e.message, /expected 4160 bytes/);
  assert.ok(runtime.now() - t0 < 100, "found at once");
  // No more than the file and the image's own size were ever asked for.
  assert.ok(png.memoryBytes - before <= 64 << 10, `memory grew by ${png.memoryBytes - before} bytes`);
  // The same stream with stored blocks, and split over IDATs of 7 bytes.
  const stored = zlib(new Uint8Array(200_000), 0);
  const e2 = (() => { try { png.decode(buildPng({ width, height, bitDepth: 8, colorType: 0, stream: stored, idatSize: 7 })); } catch (x) { return x as PngError; } })();
  assert.is(e2?.reason, "too-much-data");
});

test("a huge IHDR (10^5 × 10^5 RGBA16) is too-large from the header alone, before any allocation", async () => {
  const png = await createPngDecoder();
  const before = png.memoryBytes;
  const file = concat(SIGNATURE, ihdr(100_000, 100_000, 16, 6), chunk("IDAT", zlib(new Uint8Array(1000))), chunk("IEND"));
  for (const maxPixels of [undefined, 1e9]) {
    try {
      png.decode(file, { maxPixels });
      assert.unreachable("should throw");
    } catch (e) {
      assert.instance(e, PngError);
      assert.is((e as PngError).reason, "too-large");
      assert.is((e as PngError).offset, 16);
      assert.match((e as Error).message, /10000000000 pixels/);
    }
  }
  assert.is(png.memoryBytes, before, "no memory asked for");
});

test("a zlib stream cut inside a dynamic block's header is truncated, its offset within the file (not a bad block past the end)", async () => {
  const png = await createPngDecoder();
  const width = 32, height = 16;
  const raw = new Uint8Array(height * (1 + width));
  const next = rng(7); // a few values, unevenly drawn: zlib picks a dynamic block for them
  for (let i = 0; i < raw.length; i++) raw[i] = i % (1 + width) === 0 ? 0 : [0, 0, 0, 10, 10, 200, 77][randomInt(next, 0, 6)];
  const full = zlib(raw, 9);
  assert.is((full[2] >> 1) & 3, 2, "the first block is dynamic");
  for (const keep of [3, 4, 5, 6, 8, 12, 20]) {
    const bytes = buildPng({ width, height, bitDepth: 8, colorType: 0, stream: full.subarray(0, keep) });
    try {
      png.decode(bytes);
      assert.unreachable(`cut after ${keep} bytes should fail`);
    } catch (e) {
      assert.instance(e, PngError);
      const err = e as PngError;
      assert.is(err.reason, "truncated", `cut after ${keep} bytes: ${err.message}`);
      assert.ok(err.offset <= bytes.length, `cut after ${keep} bytes: offset ${err.offset} within ${bytes.length}`);
    }
  }
});
