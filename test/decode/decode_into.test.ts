import * as assert from "uvu/assert";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { PngWorkshop } from "../_support/png_encoders.ts";
import { createJpegDecoder, type JpegDecodeOptions, type JpegDecoder } from "../../src/decode/jpeg.ts";
import { createPngDecoder } from "../../src/decode/png.ts";
import { createAutoDecoder } from "../../src/decode/decoders.ts";
import { type Decoder, TargetTooSmallError } from "../../src/decode/decoder.ts";
import { JpegError } from "../../src/decode/jpeg_error.ts";
import { CassetteError } from "../../src/errors.ts";
import { corpus, jpegBytes } from "./_fixtures.ts";

// decodeInto must give decode()'s pixels, byte for byte, at the offset asked, and touch nothing
// around them: every check decodes both ways into a target filled with a pattern, then
// compares the span with decode() and the rest with the pattern.

const shop = new PngWorkshop();
afterAll(() => shop.close());

const PATTERN = (i: number) => (i * 131 + 7) & 255;

/** decode() and decodeInto at `offset` into a patterned target with `slack` bytes after the image; undefined when decode throws. */
function both<O extends JpegDecodeOptions>(dec: Decoder<O>, bytes: Uint8Array, options: O, offset: number, slack: number, what: string): boolean {
  let img;
  try {
    img = dec.decode(bytes, options);
  } catch (e) {
    // The same error from both.
    assert.throws(() => dec.decodeInto(bytes, new Uint8Array(offset + 1 << 20), offset, options), (x: Error) => x.message === (e as Error).message, what);
    return false;
  }
  const target = new Uint8Array(offset + img.data.length + slack).map((_, i) => PATTERN(i));
  const r = dec.decodeInto(bytes, target, offset, options);
  assert.equal([r.width, r.height, r.channels, r.orientation, r.bytes], [img.width, img.height, img.channels, img.orientation, img.data.length], `${what}: shape`);
  const span = target.subarray(offset, offset + r.bytes);
  if (!equalBytes(span, img.data)) assert.unreachable(`${what}: pixels differ from decode()'s`);
  for (let i = 0; i < offset; i++) if (target[i] !== PATTERN(i)) assert.unreachable(`${what}: byte ${i} before the offset ${offset} written`);
  for (let i = offset + r.bytes; i < target.length; i++) if (target[i] !== PATTERN(i)) assert.unreachable(`${what}: byte ${i} after the image written`);
  return true;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

test("JPEG decodeInto equals decode on every corpus file, at every scale, in colour and grey, at odd offsets, nothing around the span written", async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  let decoded = 0;
  for (const f of corpus()) {
    const bytes = jpegBytes(f);
    for (const scale of [1, 0.5, 0.25, 0.125] as const) {
      for (const grey of [false, true]) {
        if (both(jpeg, bytes, { scale, grey }, randomInt(next, 1, 97), randomInt(next, 0, 9), `${f} scale ${scale} grey ${grey} (seed ${seed})`)) decoded++;
      }
    }
  }
  assert.ok(decoded >= 200, `${decoded} decodes compared`);
});

test("JPEG decodeInto equals decode on fresh random files (samplings, progressive, restarts; large enough to stream in strips), colour and grey, scaled", async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const codings = [["-sample", "2x2"], ["-sample", "2x1", "-progressive"], ["-sample", "1x1", "-restart", "1"], ["-sample", "1x2"], ["-sample", "2x2", "-progressive"]];
  for (let k = 0; k < 12; k++) {
    // Some over a strip (256 KB of output): rows then leave as the scan goes.
    const big = k % 3 === 0;
    const w = big ? randomInt(next, 300, 700) : randomInt(next, 1, 80), h = big ? randomInt(next, 300, 500) : randomInt(next, 1, 80);
    const channels = k % 4 === 3 ? 1 : 3;
    const args = [...codings[k % codings.length], "-quality", String(randomInt(next, 50, 98))];
    const bytes = cjpeg(randomBytes(next, w * h * channels), w, h, channels, channels === 1 ? args.filter((a) => a !== "-sample" && !/x/.test(a)) : args);
    for (const scale of [1, 0.5, 0.125] as const) {
      const grey = next() < 0.3;
      assert.ok(both(jpeg, bytes, { scale, grey }, randomInt(next, 1, 4096), randomInt(next, 0, 64), `${w}×${h}×${channels} ${args.join(" ")} scale ${scale} grey ${grey} (seed ${seed})`));
    }
  }
});

test("JPEG decodeInto: a target too small is a TargetTooSmallError naming both sizes, nothing written, and the decoder goes on", async () => {
  const jpeg = await createJpegDecoder();
  const next = rng(freshSeed());
  for (const [bytes, what] of [[jpegBytes("flower_420_q75.jpg"), "small, decoded whole"], [cjpeg(randomBytes(next, 600 * 400 * 3), 600, 400, 3), "streamed in strips"]] as const) {
    const img = jpeg.decode(bytes);
    const n = img.data.length;
    for (const [len, offset] of [[n - 1, 0], [n, 1], [n + 10, 11], [0, 0]]) {
      const target = new Uint8Array(len).map((_, i) => PATTERN(i));
      try {
        jpeg.decodeInto(bytes, target, offset);
        assert.unreachable(`${what}: ${len} bytes from ${offset} should not hold ${n}`);
      } catch (e) {
        assert.instance(e, TargetTooSmallError, what);
        const err = e as TargetTooSmallError;
        assert.is(err.code, "ERR_INVALID_OPTION");
        assert.is(err.needed, n);
        assert.is(err.available, len - offset);
        assert.match(err.message, `(${img.width}×${img.height}×3) needs ${n} bytes from offset ${offset} and the target holds ${len - offset} there`);
      }
      for (let i = 0; i < len; i++) if (target[i] !== PATTERN(i)) assert.unreachable(`${what}: byte ${i} written`);
    }
    // Exactly enough is enough, and the decoder is whole after the refusals.
    const target = new Uint8Array(n + 5);
    assert.is(jpeg.decodeInto(bytes, target, 5).bytes, n);
    assert.ok(equalBytes(target.subarray(5), img.data));
  }
  // The size is checked as soon as the headers give it, before the scan is decoded: a file cut
  // inside its scan is too small for the target, not truncated.
  const whole = jpegBytes("flower_420_q75.jpg");
  let sos = 0;
  while (!(whole[sos] === 0xff && whole[sos + 1] === 0xda)) sos++;
  const cut = whole.slice(0, sos + 40);
  assert.throws(() => jpeg.decode(cut), (e: Error) => e instanceof JpegError);
  assert.throws(() => jpeg.decodeInto(cut, new Uint8Array(10), 0), (e: Error) => e instanceof TargetTooSmallError);
  // Bad targets and offsets are named, before the input is looked at.
  for (const [target, offset] of [[new Uint8Array(10), -1], [new Uint8Array(10), 11], [new Uint8Array(10), 1.5], [[1, 2, 3] as unknown as Uint8Array, 0]] as const) {
    assert.throws(() => jpeg.decodeInto(new Uint8Array([1, 2]), target, offset), (e: Error) => e instanceof CassetteError && !(e instanceof JpegError) && /into the target/.test(e.message));
  }
  // A malformed input is its JpegError, as from decode().
  assert.throws(() => jpeg.decodeInto(new Uint8Array([0xff, 0xd8, 0xff]), new Uint8Array(100), 0), (e: Error) => e instanceof JpegError);
});

test("JPEG decodeInto with applyOrientation turns the image in place, into a SharedArrayBuffer view too", async () => {
  const jpeg: JpegDecoder = await createJpegDecoder();
  const bytes = jpegBytes("px17x33_422_q90.jpg");
  // An Exif APP1 with orientation 6 (rotate 90° clockwise) right after SOI.
  const tiff = [0x4d, 0x4d, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0];
  const body = [0x45, 0x78, 0x69, 0x66, 0, 0, ...tiff];
  const file = new Uint8Array([0xff, 0xd8, 0xff, 0xe1, 0, body.length + 2, ...body, ...bytes.subarray(2)]);
  const img = jpeg.decode(file, { applyOrientation: true });
  assert.is(img.width, 33);
  const target = new Uint8Array(new SharedArrayBuffer(img.data.length + 40));
  const r = jpeg.decodeInto(file, target, 20, { applyOrientation: true });
  assert.equal([r.width, r.height, r.orientation], [33, 17, 1]);
  assert.ok(equalBytes(target.subarray(20, 20 + r.bytes), img.data));
  const raw = jpeg.decodeInto(file, target, 20);
  assert.equal([raw.width, raw.height, raw.orientation], [17, 33, 6]);
});

test("PNG and auto decodeInto equal decode (colour types, 16-bit, grey, scaled), and a small target is named", async () => {
  const png = await createPngDecoder();
  const auto = await createAutoDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const kinds = [[0, 8], [0, 16], [2, 8], [2, 16], [3, 4], [4, 8], [6, 8], [6, 16]] as const;
  const jobs = kinds.map(([colorType, bitDepth]) => {
    const width = randomInt(next, 1, 60), height = randomInt(next, 1, 60);
    const spp = [1, 0, 3, 1, 2, 0, 4][colorType];
    const top = colorType === 3 ? 15 : 2 ** bitDepth - 1;
    const samples = new Uint16Array(width * height * spp).map(() => randomInt(next, 0, top));
    const img = { width, height, colorType, bitDepth, samples, ...(colorType === 3 ? { palette: Array.from({ length: 16 }, (_, k) => [k * 16, 255 - k, k]) } : {}) };
    return { img, options: { interlace: next() < 0.5 } };
  });
  const files = shop.pypng(jobs);
  for (const [k, bytes] of files.entries()) {
    for (const options of [{}, { grey: true }, { depth16: true }, { scale: 0.5 as const }, { scale: 0.25 as const, depth16: true }]) {
      const what = `PNG ${kinds[k].join("/")} ${JSON.stringify(options)} (seed ${seed})`;
      assert.ok(both(png, bytes, options, randomInt(next, 1, 33), randomInt(next, 0, 9), what), what);
      assert.ok(both(auto, bytes, options, randomInt(next, 1, 33), 3, `auto ${what}`));
    }
  }
  const img = png.decode(files[2]);
  const target = new Uint8Array(img.data.length + 2).fill(9);
  assert.throws(() => png.decodeInto(files[2], target, 3), (e: Error) => e instanceof TargetTooSmallError && e.needed === img.data.length && e.available === img.data.length - 1);
  assert.ok(target.every((b) => b === 9), "nothing written");
  // The auto decoder sends a JPEG to the JPEG decoder.
  assert.ok(both(auto, jpegBytes("china_420_prog.jpg"), { scale: 0.5 }, 7, 7, "auto JPEG"));
});
