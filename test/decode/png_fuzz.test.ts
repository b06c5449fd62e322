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
import { mutatePng as mutate, pngSeedFiles } from "../_support/png_mutate.ts";
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
const seedFiles = (next: () => number) => pngSeedFiles(shop, next);

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
  // Found before inflating (the whole bomb would take seconds); a loaded machine may pause the thread.
  assert.ok(runtime.now() - t0 < 1000, `found at once: ${(runtime.now() - t0).toFixed(0)} ms`);
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
