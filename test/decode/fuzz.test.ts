import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { createJpegDecoder, type JpegScale } from "../../src/decode/jpeg.ts";
import { JpegError } from "../../src/decode/jpeg_error.ts";
import { fuzzLoop } from "../_support/fuzz.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { compare } from "../reference/jpeg_compare.ts";
import { djpegRef, jpegBytes } from "./_fixtures.ts";

// Small corpus files of every coding the decoder takes: mutations of them reach the marker
// parser, both scan decoders, restarts and the upsamplers within a few seconds.
const SEEDS = [
  "px17x33_420_prog.jpg", "px17x33_422_q90.jpg", "px7x9_444_q90.jpg", "px1_420_q90.jpg", "fmnist_gray_q90.jpg",
  "flower_420_q75.jpg", "flower_422_prog_rst.jpg", "china_444_rst3b.jpg", "china_gray_prog.jpg", "china_420_arith.jpg",
];
/** CASSETTE_FUZZ_ITERATIONS=200000 for a long run by hand. */
const ITERATIONS = Number(runtime.env("CASSETTE_FUZZ_ITERATIONS") ?? 5000);
/** Per decode: a hang or a runaway loop on hostile input would blow through this. */
const MAX_MS = 250;

/** One seeded mutation: bit flips, byte overwrites (headers more often), cuts, splices. */
function mutate(src: Uint8Array, next: () => number): Uint8Array {
  let b = src.slice();
  const n = randomInt(next, 1, 4);
  for (let m = 0; m < n; m++) {
    const kind = randomInt(next, 0, 6);
    const head = Math.min(b.length - 1, 700); // markers and tables live here
    const at = next() < 0.6 ? randomInt(next, 0, head) : randomInt(next, 0, b.length - 1);
    if (kind === 0) b[at] ^= 1 << randomInt(next, 0, 7);
    else if (kind === 1) b[at] = randomInt(next, 0, 255);
    else if (kind === 2) b[at] = [0x00, 0xff, 0x01, 0x7f, 0x80, 0xfe][randomInt(next, 0, 5)];
    else if (kind === 3) b = b.slice(0, at);
    else if (kind === 4) {
      // Duplicate a chunk (repeated segments, scans twice).
      const len = randomInt(next, 1, 200);
      const chunk = b.slice(at, at + len);
      const out = new Uint8Array(b.length + chunk.length);
      out.set(b.subarray(0, at)); out.set(chunk, at); out.set(b.subarray(at), at + chunk.length);
      b = out;
    } else if (kind === 5) {
      // Delete a chunk.
      const len = Math.min(randomInt(next, 1, 64), b.length - at);
      const out = new Uint8Array(b.length - len);
      out.set(b.subarray(0, at)); out.set(b.subarray(at + len), at);
      b = out;
    } else {
      // Big values into 16-bit fields (lengths, sizes).
      b[at] = 0xff; if (at + 1 < b.length) b[at + 1] = randomInt(next, 0, 255);
    }
    if (b.length === 0) break;
  }
  return b;
}

test(`fuzz: ${ITERATIONS} seeded mutations of corpus files give a JpegError or an image, each in bounded time`, async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const files = SEEDS.map((f) => jpegBytes(f));
  const { images, errors, reasons, slowest } = fuzzLoop(ITERATIONS, seed, JpegError, MAX_MS, (i) => {
    const bytes = mutate(files[i % files.length], next);
    const scale = ([1, 1, 1, 0.5, 0.25, 0.125] as JpegScale[])[randomInt(next, 0, 5)];
    const coefficients = next() < 0.15;
    return {
      bytes,
      decode: () => {
        if (coefficients) {
          const c = jpeg.decodeCoefficients(bytes, { maxPixels: 4e6 });
          for (const comp of c.components) assert.is(comp.coefficients.length, comp.blocksW * comp.blocksH * 64);
        } else {
          const img = jpeg.decode(bytes, { scale, maxPixels: 4e6 });
          assert.is(img.data.length, img.width * img.height * img.channels, `iteration ${i}: output size (seed ${seed})`);
        }
      },
    };
  });
  console.log(`    ${images} images, ${errors} errors (${[...reasons].map(([r, n]) => `${r} ${n}`).join(", ")}); slowest ${slowest.toFixed(1)} ms; seed ${seed}`);
  assert.ok(errors > ITERATIONS / 10 && images > ITERATIONS / 10, "the mutations reach both outcomes");
  // After all that, the instance still decodes correctly.
  const img = jpeg.decode(jpegBytes("china_420_prog.jpg"));
  assert.ok(compare(img.data, djpegRef("china_420_prog.jpg").data).maxAbs <= 4);
}, { timeoutMs: 600_000 });
