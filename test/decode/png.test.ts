import * as assert from "uvu/assert";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { PngWorkshop } from "../_support/png_encoders.ts";
import { buildPng, chunk, chunkOffsets, concat, ihdr, refilter, SIGNATURE, zlib } from "../_support/png_build.ts";
import { assertCassetteError } from "../_support/expect.ts";
import { expectedPixels, firstDifference, imageValues, type PngColorType, type PngSamples, SAMPLES_PER_PIXEL } from "../reference/png_expect.ts";
import { createPngDecoder, type PngDecoder, type PngDecodeOptions } from "../../src/decode/png.ts";
import { PngError } from "../../src/decode/png_error.ts";
import { createDecoder, UnknownFormatError } from "../../src/decode/decoders.ts";
import { jpegBytes } from "./_fixtures.ts";

// Every PNG here is made fresh from seeded random samples by a real encoder (pypng or
// ImageMagick) and decoded pixel for pixel: PNG is lossless, so the samples handed to the
// encoder (or pypng's own decoding of the file) say exactly what must come out
// (test/reference/png_expect.ts).

const shop = new PngWorkshop();
afterAll(() => shop.close());

/** Colour type → the bit depths PNG allows (§11.2.2, Table 11.1). */
const DEPTHS: [PngColorType, (1 | 2 | 4 | 8 | 16)[]][] = [[0, [1, 2, 4, 8, 16]], [2, [8, 16]], [3, [1, 2, 4, 8]], [4, [8, 16]], [6, [8, 16]]];

/**
 * Random samples with runs (a sample copied from the pixel to the left, so deflate finds
 * matches) and noise; a palette of 1 … 2^depth entries; tRNS on about half the grey, RGB and
 * palette images, its colour one that occurs.
 */
function randomImage(next: () => number, colorType: PngColorType, bitDepth: 1 | 2 | 4 | 8 | 16, width: number, height: number): PngSamples {
  const spp = SAMPLES_PER_PIXEL[colorType];
  const entries = colorType === 3 ? randomInt(next, 1, Math.min(256, 2 ** bitDepth)) : 0;
  const top = colorType === 3 ? entries - 1 : 2 ** bitDepth - 1;
  const samples = new Uint16Array(width * height * spp);
  const runny = next() < 0.5;
  for (let i = 0; i < width * height; i++) {
    const copy = runny && i % width > 0 && next() < 0.7;
    for (let c = 0; c < spp; c++) samples[i * spp + c] = copy ? samples[(i - 1) * spp + c] : randomInt(next, 0, top);
  }
  const img: PngSamples = { width, height, colorType, bitDepth, samples };
  const trns = next() < 0.5;
  if (colorType === 3) {
    const alphas = trns ? randomInt(next, 1, entries) : 0;
    img.palette = Array.from({ length: entries }, (_, k) => {
      const rgb = [randomInt(next, 0, 255), randomInt(next, 0, 255), randomInt(next, 0, 255)];
      return k < alphas ? [...rgb, randomInt(next, 0, 255)] : rgb;
    });
  } else if (trns && (colorType === 0 || colorType === 2)) {
    const at = randomInt(next, 0, width * height - 1) * spp;
    img.transparent = colorType === 0 ? samples[at] : Array.from(samples.subarray(at, at + 3));
  }
  return img;
}

function describeImage(img: PngSamples, extra = ""): string {
  const tr = img.palette?.some((e) => e.length === 4) || img.transparent !== undefined ? " tRNS" : "";
  return `${img.width}×${img.height} colour type ${img.colorType} depth ${img.bitDepth}${tr}${extra}`;
}

/** Decodes `bytes` with `options` and checks every sample against the reference. */
function check(png: PngDecoder, bytes: Uint8Array, img: PngSamples, options: PngDecodeOptions, what: string): void {
  const out = png.decode(bytes, options);
  const want = expectedPixels(img, options);
  assert.equal([out.width, out.height, out.channels, out.bitDepth], [img.width, img.height, want.channels, want.bitDepth], `${what} ${JSON.stringify(options)}: size, channels, depth`);
  const got = imageValues(out);
  const at = firstDifference(got, want.values);
  assert.is(at, -1, `${what} ${JSON.stringify(options)}: sample ${at} (pixel ${Math.floor(at / want.channels)}) is ${got[at]}, expected ${want.values[at]}`);
}

/** The first deflate block's type (0 stored, 1 fixed, 2 dynamic) and the number of IDATs. */
function streamFacts(bytes: Uint8Array): { block: number; idats: number } {
  const idats = chunkOffsets(bytes, "IDAT");
  return { block: (bytes[idats[0] + 8 + 2] >> 1) & 3, idats: idats.length };
}

test("pypng: every colour type and bit depth, plain and Adam7, odd sizes, zlib levels 0/1/9, many IDATs, every filter type: every sample as given", async () => {
  const png = await createPngDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  console.log(`    seed ${seed}`);
  const cases: { img: PngSamples; options: { interlace: boolean; compression: number; chunkLimit: number } }[] = [];
  // Odd shapes first: 1×1, one row, one column, widths that leave a partial byte at 1, 2 and 4 bits.
  const shapes: [number, number][] = [[1, 1], [1, 13], [13, 1], [7, 5], [9, 3], [3, 9], [17, 2]];
  for (const [ct, depths] of DEPTHS) {
    for (const d of depths) {
      for (const interlace of [false, true]) {
        const [w, h] = next() < 0.35 ? shapes[randomInt(next, 0, shapes.length - 1)] : [randomInt(next, 1, 45), randomInt(next, 1, 45)];
        const compression = [0, 1, 9][randomInt(next, 0, 2)];
        const chunkLimit = next() < 0.5 ? randomInt(next, 8, 64) : 2 ** 20;
        cases.push({ img: randomImage(next, ct, d, w, h), options: { interlace, compression, chunkLimit } });
      }
    }
  }
  // The three block types for sure: stored (level 0), fixed (a tiny image), dynamic (a large runny one).
  cases.push({ img: randomImage(next, 2, 8, 2, 1), options: { interlace: false, compression: 9, chunkLimit: 2 ** 20 } });
  cases.push({ img: { ...randomImage(next, 0, 8, 64, 64), samples: new Uint16Array(64 * 64).map((_, i) => (i * 7) % 61) }, options: { interlace: false, compression: 9, chunkLimit: 2 ** 20 } });
  const files = shop.pypng(cases);
  const blocks = new Set<number>();
  let manyIdats = 0;
  files.forEach((bytes, i) => {
    const { img, options } = cases[i];
    const what = describeImage(img, `${options.interlace ? " Adam7" : ""} level ${options.compression} (seed ${seed})`);
    const f = streamFacts(bytes);
    blocks.add(f.block);
    if (f.idats > 1) manyIdats++;
    check(png, bytes, img, {}, what);
    check(png, bytes, img, { grey: true }, what);
    // pypng writes filter type 0 only: the same rows through every filter type.
    check(png, refilter(bytes, next), img, {}, `${what}, re-filtered`);
    if (img.bitDepth === 16) {
      check(png, bytes, img, { depth16: true }, what);
      check(png, bytes, img, { depth16: true, grey: true }, what);
    }
  });
  console.log(`    ${files.length} files, first blocks of types ${[...blocks].sort()}, ${manyIdats} with several IDATs`);
  assert.equal([...blocks].sort(), [0, 1, 2], "stored, fixed and dynamic blocks all met");
  assert.ok(manyIdats >= 3, "several files split over IDATs");
});

test("ImageMagick: grey, RGB and RGBA at 8 and 16 bits, Adam7, forced colour types, PNG8 palettes: as given, and as pypng reads them", async () => {
  const png = await createPngDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  console.log(`    seed ${seed}`);
  const made: { bytes: Uint8Array; given?: PngSamples; what: string }[] = [];
  const maps = { gray: 0, rgb: 2, rgba: 6 } as const;
  for (const map of ["gray", "rgb", "rgba"] as const) {
    for (const depth of [8, 16] as const) {
      for (const interlace of [false, true]) {
        const w = randomInt(next, 1, 40), h = randomInt(next, 1, 40);
        const img = randomImage(next, maps[map], depth, w, h);
        delete img.transparent;
        const args = ["-define", `png:color-type=${maps[map]}`, "-define", `png:bit-depth=${depth}`, ...(interlace ? ["-interlace", "PNG"] : [])];
        const bytes = shop.imagemagick(img.samples, w, h, map, depth, args);
        made.push({ bytes, given: img, what: `convert ${map} -depth ${depth}${interlace ? " -interlace PNG" : ""} ${w}×${h}` });
      }
    }
  }
  // PNG8: ImageMagick quantizes to a palette, so the reference is pypng's reading of the file.
  for (const interlace of [false, true]) {
    const w = randomInt(next, 1, 40), h = randomInt(next, 1, 40);
    const img = randomImage(next, 2, 8, w, h);
    made.push({ bytes: shop.imagemagick(img.samples, w, h, "rgb", 8, interlace ? ["-interlace", "PNG"] : [], "PNG8:"), what: `convert PNG8:${interlace ? " -interlace PNG" : ""} ${w}×${h}` });
  }
  const read = shop.readWithPypng(made.map((m) => m.bytes));
  let palettes = 0;
  made.forEach((m, i) => {
    const what = `${m.what} (seed ${seed})`;
    const ref = read[i];
    if (ref.colorType === 3) palettes++;
    for (const options of [{}, { grey: true }, { depth16: true }] as PngDecodeOptions[]) {
      check(png, m.bytes, ref, options, `${what} vs pypng`);
      if (m.given && !(m.given.colorType === 6 || m.given.colorType === 4)) check(png, m.bytes, m.given, options, `${what} vs the samples given`);
    }
  });
  assert.ok(palettes >= 2, "PNG8 wrote palettes");
});

test("16 → 8 bits rounds to nearest, (v·255 + 32767) / 65535; depth16 gives the samples little-endian", async () => {
  const png = await createPngDecoder();
  const values = [0, 1, 128, 129, 257, 32767, 32768, 32896, 65278, 65279, 65534, 65535];
  const raw = new Uint8Array(values.length * 2 + 1);
  values.forEach((v, i) => raw.set([v >> 8, v & 255], 1 + 2 * i));
  const bytes = buildPng({ width: values.length, height: 1, bitDepth: 16, colorType: 0, raw });
  const img = png.decode(bytes);
  assert.equal([...img.data], values.map((v) => Math.floor((v * 255 + 32767) / 65535)));
  assert.equal([...img.data], [0, 0, 0, 1, 1, 127, 128, 128, 254, 254, 255, 255]);
  const deep = png.decode(bytes, { depth16: true });
  assert.is(deep.bitDepth, 16);
  assert.equal([...new Uint16Array(deep.data.buffer)], values); // this host is little-endian
  // An 8-bit file stays 8-bit with depth16.
  assert.is(png.decode(buildPng({ width: 1, height: 1, bitDepth: 8, colorType: 0, raw: Uint8Array.of(0, 9) }), { depth16: true }).bitDepth, 8);
});

test("scale 1/2, 1/4, 1/8 box-filters the decoded image (rounded means, clipped edge blocks), 8 and 16 bits", async () => {
  const png = await createPngDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  for (const depth of [8, 16] as const) {
    const w = randomInt(next, 1, 37), h = randomInt(next, 1, 37);
    const img = randomImage(next, 2, depth, w, h);
    delete img.transparent;
    const [bytes] = shop.pypng([{ img }]);
    const full = imageValues(png.decode(bytes, { depth16: true }));
    for (const f of [2, 4, 8]) {
      const out = png.decode(bytes, { scale: 1 / f as 0.5, depth16: true });
      const ow = Math.ceil(w / f), oh = Math.ceil(h / f);
      assert.equal([out.width, out.height, out.channels], [ow, oh, 3], `seed ${seed}`);
      const got = imageValues(out);
      for (let oy = 0; oy < oh; oy++) {
        for (let ox = 0; ox < ow; ox++) {
          for (let c = 0; c < 3; c++) {
            let sum = 0, n = 0;
            for (let y = oy * f; y < Math.min(h, oy * f + f); y++) for (let x = ox * f; x < Math.min(w, ox * f + f); x++) (sum += full[(y * w + x) * 3 + c]), n++;
            assert.is(got[(oy * ow + ox) * 3 + c], Math.floor((sum + (n >> 1)) / n), `1/${f} pixel ${ox},${oy} channel ${c} (seed ${seed})`);
          }
        }
      }
    }
  }
});

// --- named errors ---------------------------------------------------------------------------

/** Decodes `bytes`, expecting a PngError of `reason` at `offset`; the decoder stays usable. */
function expectPngError(png: PngDecoder, bytes: Uint8Array, reason: string, offset?: number, unsupported = false, options: PngDecodeOptions = {}): PngError {
  let err: unknown;
  try {
    png.decode(bytes, options);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof PngError, `expected a PngError (${reason}), got ${err}`);
  const e = err as PngError;
  assert.is(e.reason, reason, e.message);
  if (offset !== undefined) assert.is(e.offset, offset, `${reason}: offset (${e.message})`);
  assertCassetteError(e, unsupported ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", new RegExp(`at byte ${e.offset}$`));
  const good = png.decode(GOOD);
  assert.equal([...good.data], [10, 20, 30, 40], `after ${reason}: the next image decodes`);
  return e;
}

/** 2×2 grey: 10 20 / 30 40, two rows filtered None and Sub. */
const GOOD = buildPng({ width: 2, height: 2, bitDepth: 8, colorType: 0, raw: Uint8Array.of(0, 10, 20, 1, 30, 10) });

test("signature, CRC, truncation and chunk order errors name the byte and what was expected", async () => {
  const png = await createPngDecoder();
  expectPngError(png, new Uint8Array(0), "empty", 0);
  expectPngError(png, jpegBytes("px1_420_q90.jpg"), "not-png", 0);
  const sig = GOOD.slice();
  sig[4] = 0x0a; // 89 50 4E 47 0A …: a text-mode transfer
  expectPngError(png, sig, "not-png", 4);
  expectPngError(png, GOOD.subarray(0, 5), "truncated", 5);
  // A flipped bit in IHDR's data: the CRC names the chunk and both values.
  const bad = GOOD.slice();
  bad[8 + 8 + 3] ^= 0x10;
  const e = expectPngError(png, bad, "bad-crc", 8 + 8 + 13);
  assert.is(e.chunk, "IHDR");
  assert.match(e.message, /chunk IHDR: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}/);
  const idat = chunkOffsets(GOOD, "IDAT")[0];
  const badIdat = GOOD.slice();
  badIdat[idat + 9] ^= 1;
  assert.is(expectPngError(png, badIdat, "bad-crc").chunk, "IDAT");
  // Cut inside IDAT, and before IEND.
  expectPngError(png, GOOD.subarray(0, idat + 10), "truncated", idat + 10);
  expectPngError(png, GOOD.subarray(0, GOOD.length - 12), "truncated", GOOD.length - 12);
  // A chunk before IHDR; IDATs split by another chunk; no IDAT at all.
  const text = chunk("tEXt", new TextEncoder().encode("a\0b"));
  expectPngError(png, concat(SIGNATURE, text, GOOD.subarray(8)), "chunk-order", 12);
  const stream = zlib(Uint8Array.of(0, 10, 20, 1, 30, 10));
  const split = concat(SIGNATURE, ihdr(2, 2, 8, 0), chunk("IDAT", stream.subarray(0, 4)), text, chunk("IDAT", stream.subarray(4)), chunk("IEND"));
  expectPngError(png, split, "chunk-order");
  expectPngError(png, concat(SIGNATURE, ihdr(2, 2, 8, 0), chunk("IEND")), "no-image-data");
  // Ancillary chunks are skipped; an unknown critical one is refused.
  assert.equal([...png.decode(concat(SIGNATURE, ihdr(2, 2, 8, 0), text, chunk("IDAT", stream), text, chunk("IEND"))).data], [10, 20, 30, 40]);
  expectPngError(png, concat(SIGNATURE, ihdr(2, 2, 8, 0), chunk("ABCD"), chunk("IDAT", stream), chunk("IEND")), "critical-chunk", 37, true);
});

test("zlib and deflate errors: header, Adler-32, block type, Huffman code, distance, too little data", async () => {
  const png = await createPngDecoder();
  const raw = Uint8Array.of(0, 10, 20, 1, 30, 10);
  const withStream = (stream: Uint8Array) => buildPng({ width: 2, height: 2, bitDepth: 8, colorType: 0, stream });
  const s = zlib(raw);
  const dataAt = chunkOffsets(withStream(s), "IDAT")[0] + 8;
  const e = expectPngError(png, withStream(Uint8Array.of(0x79, ...s.subarray(1))), "bad-zlib-header", dataAt);
  assert.match(e.message, /byte 0x00000079/);
  expectPngError(png, withStream(Uint8Array.of(0x78, 0x9d, ...s.subarray(2))), "bad-zlib-header", dataAt + 1); // check bits
  const adler = s.slice();
  adler[adler.length - 1] ^= 0xff;
  expectPngError(png, withStream(adler), "bad-adler", dataAt + s.length - 4);
  expectPngError(png, withStream(s.subarray(0, s.length - 2)), "truncated");
  expectPngError(png, withStream(Uint8Array.of(0x78, 0x01, 0x07)), "bad-deflate-block"); // BFINAL, BTYPE 3
  // Stored block whose NLEN is not ~LEN.
  expectPngError(png, withStream(Uint8Array.of(0x78, 0x01, 0x01, 6, 0, 0xf9, 0xf0, ...raw)), "bad-deflate-block");
  // A fixed block whose first symbol is a back-reference (257: length 3, code 0000001; distance
  // code 0: 00000), with nothing before it to copy. Bits go in from each byte's low end.
  expectPngError(png, withStream(Uint8Array.of(0x78, 0x01, 0b00000011, 0b00000010, 0, 0, 0)), "bad-distance");
  // Fixed-Huffman literal/length symbol 286 (code 11000110).
  expectPngError(png, withStream(Uint8Array.of(0x78, 0x01, 0b00011011, 0b00000011, 0, 0)), "bad-huffman-code");
  // A stream that ends (final block) before the image is full.
  const short = expectPngError(png, withStream(zlib(raw.subarray(0, 4))), "too-little-data");
  assert.equal([short.expected, short.actual], [6, 4]);
});

test("filter type, palette index, bit depth, IHDR, PLTE, tRNS errors; maxPixels and the 2 GiB bound", async () => {
  const png = await createPngDecoder();
  const f = expectPngError(png, buildPng({ width: 2, height: 2, bitDepth: 8, colorType: 0, raw: Uint8Array.of(0, 1, 2, 5, 3, 4) }), "bad-filter");
  assert.equal([f.expected, f.actual], [1, 5]);
  assert.match(f.message, /row 1 of its pass has filter type 5/);
  // Same with Adam7 and a sub-byte depth (the row-buffer path).
  expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 1, colorType: 0, interlace: 1, raw: Uint8Array.of(9, 0) }), "bad-filter");
  const plte = chunk("PLTE", Uint8Array.of(1, 2, 3, 4, 5, 6));
  const pi = expectPngError(png, buildPng({ width: 3, height: 1, bitDepth: 2, colorType: 3, raw: Uint8Array.of(0, 0b00011000), extra: [plte] }), "bad-palette-index");
  assert.equal([pi.expected, pi.actual], [2, 2]);
  const bd = expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 16, colorType: 3, raw: Uint8Array.of(0, 0, 0), extra: [plte] }), "bit-depth", 24, true);
  assert.match(bd.message, /bit depth 16 with colour type 3, palette/);
  expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 4, colorType: 2, raw: Uint8Array.of(0, 0, 0) }), "bit-depth", 24, true);
  expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 8, colorType: 0, interlace: 2, raw: Uint8Array.of(0, 0) }), "method", 28, true);
  expectPngError(png, buildPng({ width: 0, height: 1, bitDepth: 8, colorType: 0, raw: Uint8Array.of(0) }), "bad-ihdr", 16);
  expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 8, colorType: 3, raw: Uint8Array.of(0, 0) }), "bad-palette"); // no PLTE
  expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 1, colorType: 3, raw: Uint8Array.of(0, 0), extra: [chunk("PLTE", new Uint8Array(9))] }), "bad-palette", 41); // 3 entries at 1 bit
  expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 8, colorType: 3, raw: Uint8Array.of(0, 0), extra: [plte, chunk("tRNS", Uint8Array.of(1, 2, 3))] }), "bad-trns");
  expectPngError(png, buildPng({ width: 1, height: 1, bitDepth: 8, colorType: 0, raw: Uint8Array.of(0, 0), extra: [chunk("tRNS", Uint8Array.of(1))] }), "bad-trns");
  // maxPixels: refused from IHDR, before the data is even looked at.
  const huge = concat(SIGNATURE, ihdr(0x7fffffff, 0x7fffffff, 16, 6), chunk("IDAT", Uint8Array.of(1)), chunk("IEND"));
  const t = expectPngError(png, huge, "too-large", 16);
  assert.match(t.message, /maxPixels 100000000/);
  expectPngError(png, GOOD, "too-large", 16, false, { maxPixels: 3 });
  // Without a pixel bound, the 2 GiB block bound still refuses it before allocating.
  expectPngError(png, huge, "out-of-memory", 16, false, { maxPixels: Infinity });
  assert.ok(png.memoryBytes < 16 << 20, `memory stays small: ${png.memoryBytes}`);
});

test("bad options are ERR_INVALID_OPTION naming the option", async () => {
  const png = await createPngDecoder();
  for (const [options, re] of [[{ scale: 0.3 }, /'scale'/], [{ depth16: 1 }, /'depth16'/], [{ grey: "yes" }, /'grey'/], [{ maxPixels: -1 }, /'maxPixels'/]] as const) {
    try {
      png.decode(GOOD, options as unknown as PngDecodeOptions);
      assert.unreachable("should throw");
    } catch (e) {
      assertCassetteError(e, "ERR_INVALID_OPTION", re);
    }
  }
  png.close();
  try {
    png.decode(GOOD);
    assert.unreachable("should throw");
  } catch (e) {
    assertCassetteError(e, "ERR_INVALID_OPTION", /closed/);
  }
});

test("format 'auto' decodes JPEG and PNG through one decoder and names anything else", async () => {
  const auto = await createDecoder("auto");
  assert.is(auto.format, "auto");
  const j = auto.decode(jpegBytes("px1_420_q90.jpg"));
  assert.equal([j.width, j.height, j.channels], [1, 1, 3]);
  const p = auto.decode(GOOD);
  assert.equal([p.width, p.height, p.channels, ...p.data], [2, 2, 1, 10, 20, 30, 40]);
  assert.is((await createDecoder("png")).format, "png");
  for (const bytes of [new TextEncoder().encode("GIF89a\x01\x00"), new Uint8Array(0), Uint8Array.of(0xff)]) {
    try {
      auto.decode(bytes);
      assert.unreachable("should throw");
    } catch (e) {
      assert.instance(e, UnknownFormatError);
      // Another image format is unsupported, named; anything else is malformed.
      const gif = bytes[0] === 0x47;
      assertCassetteError(e, gif ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", !bytes.length ? /empty/ : gif ? /starts with .*, a GIF file, which is neither JPEG \(FF D8\) nor PNG \(89 50 4E 47\)/ : /starts with FF \("\."\) which is neither JPEG/);
    }
  }
  assert.match(String((() => { try { auto.decode(new TextEncoder().encode("GIF89a")); } catch (e) { return (e as Error).message; } })()), /47 49 46 38 39 61 \("GIF89a"\)/);
  assert.ok(auto.memoryBytes > 0);
  auto.close();
});
