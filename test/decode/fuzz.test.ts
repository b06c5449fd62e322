import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { createJpegDecoder, type JpegScale } from "../../src/decode/jpeg.ts";
import { JpegError } from "../../src/decode/jpeg_error.ts";
import { fuzzLoop } from "../_support/fuzz.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { compare } from "../reference/jpeg_compare.ts";
import { djpegRef, jpegBytes } from "./_fixtures.ts";
import { mutateBytes, mutateStructure, parseJpeg, STRUCTURE_MUTATIONS, writeJpeg } from "../_support/jpeg_mutate.ts";

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

test(`fuzz: ${ITERATIONS} seeded mutations of corpus files give a JpegError or an image, each in bounded time`, async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const files = SEEDS.map((f) => jpegBytes(f));
  const { images, errors, reasons, slowest } = fuzzLoop(ITERATIONS, seed, JpegError, MAX_MS, (i) => {
    const bytes = mutateBytes(files[i % files.length], next);
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

/** Per kind of structure mutation (test/_support/jpeg_mutate.ts). */
const STRUCTURE_ITERATIONS = Number(runtime.env("CASSETTE_FUZZ_ITERATIONS") ?? 3000) / 10;

test(`fuzz: structure-aware mutations (segment lengths, DHT, DQT, SOF sampling, SOS Ss/Se/Ah/Al, restarts, cut scans), ${STRUCTURE_ITERATIONS} of each kind, give a JpegError or an image`, async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const files = SEEDS.map((f) => jpegBytes(f));
  const all = new Map<string, number>();
  const lines: string[] = [];
  for (const kind of STRUCTURE_MUTATIONS) {
    const { images, errors, reasons } = fuzzLoop(STRUCTURE_ITERATIONS, seed, JpegError, MAX_MS, (i) => {
      const { bytes } = mutateStructure(files[i % files.length], next, kind);
      const scale = ([1, 1, 0.5, 0.125] as JpegScale[])[randomInt(next, 0, 3)];
      const grey = next() < 0.2;
      return {
        bytes,
        decode: () => {
          const img = jpeg.decode(bytes, { scale, grey, maxPixels: 4e6 });
          assert.is(img.data.length, img.width * img.height * img.channels, `${kind} iteration ${i}: output size (seed ${seed})`);
        },
      };
    });
    for (const [r, n] of reasons) all.set(r, (all.get(r) ?? 0) + n);
    lines.push(`${kind}: ${images} images, ${errors} errors`);
    assert.ok(errors > 0, `${kind}: the mutation is refused somewhere (seed ${seed})`);
  }
  console.log(`    ${lines.join("; ")}\n    reasons: ${[...all].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ${n}`).join(", ")}; seed ${seed}`);
  // Each family of checks is reached: the mutations get past the first marker.
  for (const r of ["bad-segment", "bad-huffman-table", "bad-quant-table", "bad-frame", "bad-scan", "sampling", "bad-restart"]) {
    assert.ok(all.has(r), `no input was refused as ${r}: ${[...all.keys()]} (seed ${seed})`);
  }
  const img = jpeg.decode(jpegBytes("china_420_prog.jpg"));
  assert.ok(compare(img.data, djpegRef("china_420_prog.jpg").data).maxAbs <= 4);
}, { timeoutMs: 600_000 });

test("the structure mutator's parser and writer give every seed file back byte for byte", () => {
  for (const f of SEEDS) {
    const b = jpegBytes(f);
    const p = parseJpeg(b);
    assert.ok(p, `${f} parses`);
    assert.equal(writeJpeg(p!.parts, p!.tail), b, f);
  }
});
