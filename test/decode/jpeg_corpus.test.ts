import * as assert from "uvu/assert";
import jpegjs from "jpeg-js";
import { afterAll, test } from "../_support/harness.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compare } from "../reference/jpeg_compare.ts";
import { cjpeg, djpeg } from "../_support/cjpeg.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { createJpegDecoder, type JpegScale } from "../../src/decode/jpeg.ts";
import { corpus, disabled, djpegRef, jpegBytes, writeDiffImage } from "./_fixtures.ts";

// Targets from issue 5: PSNR ≥ 45 dB against djpeg on every file; max |diff| ≤ 4 on 4:4:4 and
// greyscale. We hold every file to the max-diff bound: our IDCT is f32 (djpeg's is the 13-bit
// integer one) and colour conversion rounds in Q15, so ±3 is the worst seen.
const MIN_PSNR = 45;
const MAX_ABS = 4;

/** Scratch for djpeg's files, one for the file (its tests run one at a time). */
const dir = mkdtempSync(join(tmpdir(), "cassette-corpus-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("every corpus file matches djpeg (libjpeg-turbo): size, channels, max |diff| ≤ 4, PSNR ≥ 45 dB; grey, YCbCr, RGB, CMYK and YCCK", async () => {
  const jpeg = await createJpegDecoder();
  const skip = disabled();
  const rows: string[] = [];
  const spaces = new Set<string>();
  let checked = 0;
  for (const name of corpus()) {
    if (skip.has(name)) continue;
    const img = jpeg.decode(jpegBytes(name));
    const ref = djpegRef(name);
    assert.equal([img.width, img.height, img.channels], [ref.width, ref.height, ref.channels], `${name}: size and channels`);
    const d = compare(img.data, ref.data);
    rows.push(`${name.padEnd(30)} max ${d.maxAbs}  PSNR ${d.psnr.toFixed(1)} dB`);
    if (d.maxAbs > MAX_ABS || d.psnr < MIN_PSNR) {
      const path = writeDiffImage(name, img.width, img.height, img.channels, img.data, ref.data);
      assert.unreachable(`${name}: max |diff| ${d.maxAbs}, PSNR ${d.psnr.toFixed(2)} dB against djpeg (diff image: ${path})`);
    }
    checked++;
    spaces.add(jpeg.inspect(jpegBytes(name)).colorSpace);
  }
  console.log(`    vs djpeg:\n      ${rows.join("\n      ")}`);
  assert.ok(checked >= 25, `the corpus has ${checked} files to check`);
  // Every colour conversion is compared, the four-component ones (Adobe CMYK, YCCK) included.
  assert.equal([...spaces].sort(), ["cmyk", "gray", "rgb", "ycbcr", "ycck"]);
});

test("fresh narrow images (1–4 pixels wide, noise) match djpeg: below 3 chroma samples across, 2×1 and 2×2 replicate as libjpeg does", async () => {
  // White noise makes the filter's choice plain: triangle against box upsampling differ by tens.
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  for (const sampling of ["2x1", "2x2", "1x2"]) {
    for (let w = 1; w <= 4; w++) {
      const h = randomInt(next, 1, 40);
      const bytes = cjpeg(randomBytes(next, w * h * 3), w, h, 3, ["-sample", sampling, "-quality", "90"]);
      const ref = djpeg(bytes, [], dir);
      const d = compare(jpeg.decode(bytes).data, ref.data);
      assert.ok(d.maxAbs <= MAX_ABS, `seed ${seed}, ${w}×${h} -sample ${sampling}: max |diff| ${d.maxAbs} against djpeg`);
    }
  }
});

test("rows leave the decoder as the scan goes: tall and very wide images match djpeg, and a scan cut midway loses nothing of the next image", async () => {
  // decoder.ts hands the rows of an image over 256 KB to the host as soon as the MCU rows they
  // need (the triangle filter's row below included) are decoded, from planes that are rings of
  // MCU rows, in strips of 256 KB: a tall image crosses many MCU rows, ring turns and strips;
  // one 65 000 pixels wide has a strip of one row, and chroma past the SIMD row buffer.
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const cases: [number, number, string[]][] = [
    [randomInt(next, 400, 500), randomInt(next, 700, 900), ["-sample", "2x2"]],
    [randomInt(next, 400, 500), randomInt(next, 700, 900), ["-sample", "1x2", "-restart", "1"]],
    [randomInt(next, 400, 500), randomInt(next, 700, 900), ["-sample", "2x4"]],
    [65_000 + randomInt(next, 0, 500), randomInt(next, 2, 5), ["-sample", "2x2"]], // cjpeg stops at 65 500
  ];
  let tall: Uint8Array | undefined;
  for (const [w, h, args] of cases) {
    const bytes = cjpeg(randomBytes(next, w * h * 3), w, h, 3, [...args, "-quality", "85"]);
    tall ??= bytes;
    for (const grey of [false, true]) {
      const ref = djpeg(bytes, grey ? ["-grayscale"] : [], dir);
      const img = jpeg.decode(bytes, { grey });
      assert.equal([img.width, img.height, img.channels], [ref.width, ref.height, ref.channels]);
      const d = compare(img.data, ref.data);
      assert.ok(d.maxAbs <= MAX_ABS, `seed ${seed}, ${w}×${h} ${args.join(" ")}${grey ? " grey" : ""}: max |diff| ${d.maxAbs} against djpeg`);
    }
  }
  // Cut inside the scan: rows already handed over belong to no result, and the decoder's
  // next image is whole.
  assert.throws(() => jpeg.decode(tall!.subarray(0, Math.floor(tall!.length * 0.6))), /JPEG/);
  const [w, h] = cases[0];
  const again = jpeg.decode(tall!);
  assert.equal(again.data.length, w * h * 3);
  assert.ok(compare(again.data, djpeg(tall!, [], dir).data).maxAbs <= MAX_ABS, `seed ${seed}: the image after a cut scan`);
});

test("a large sequential image is decoded a few rows at a time: the decoder's memory stays far below its planes and pixels, and a progressive one still decodes whole", async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const [w, h] = [randomInt(next, 2800, 3000), randomInt(next, 1900, 2000)];
  const phase = next() * 6;
  const px = Uint8Array.from({ length: w * h * 3 }, (_, k) => 128 + 100 * Math.sin(k / 97 + (k % 3) * 2 + phase));
  const bytes = cjpeg(px, w, h, 3, ["-sample", "2x2", "-quality", "90"]);
  const before = jpeg.memoryBytes;
  const img = jpeg.decode(bytes);
  assert.ok(compare(img.data, djpeg(bytes, [], dir).data).maxAbs <= MAX_ABS, `seed ${seed}, ${w}×${h}`);
  // Whole planes (1.5 bytes a pixel) and the RGB (3) would be ~25 MB; rings of two MCU rows
  // and a 256 KB strip add well under 1 MB to the input the arena holds.
  const grew = jpeg.memoryBytes - before;
  assert.ok(grew < bytes.length + (2 << 20), `seed ${seed}, ${w}×${h}: the decoder's memory grew by ${grew} bytes for a ${bytes.length}-byte file`);
  const prog = cjpeg(px, w, h, 3, ["-sample", "2x2", "-quality", "90", "-progressive"]);
  assert.ok(compare(jpeg.decode(prog).data, djpeg(prog, [], dir).data).maxAbs <= MAX_ABS, `seed ${seed}, ${w}×${h} progressive`);
  assert.ok(jpeg.memoryBytes - before > w * h * 1.5, "a progressive image keeps whole planes (and its coefficients)");
});

test("fresh random images in every coding cjpeg makes (samplings to 4×2, progressive, restarts, optimized tables), decoded at every scale, in colour and grey, match djpeg", async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const samplings = ["1x1", "2x1", "1x2", "2x2", "4x1", "1x4", "3x1", "1x3", "3x2", "4x2", "2x4"];
  const codings = [[], ["-progressive"], ["-restart", "1"], ["-restart", "2B"], ["-optimize"], ["-grayscale"], ["-rgb"]];
  for (let i = 0; i < 80; i++) {
    // Mostly small: edges, partial MCUs and narrow components are where decoders part ways.
    const w = 1 + Math.floor(next() ** 2 * 64), h = 1 + Math.floor(next() ** 2 * 64);
    const sampling = samplings[randomInt(next, 0, samplings.length - 1)];
    const coding = codings[randomInt(next, 0, codings.length - 1)];
    const scale = [1, 2, 4, 8][randomInt(next, 0, 3)];
    const grey = next() < 0.25;
    const noise = next() < 0.5;
    const px = noise ? randomBytes(next, w * h * 3) : Uint8Array.from({ length: w * h * 3 }, (_, k) => 128 + 100 * Math.sin(k / 37 + (k % 3) * 2));
    const args = ["-sample", sampling, "-quality", String(randomInt(next, 50, 98)), ...coding];
    const what = `seed ${seed}, ${w}×${h} ${args.join(" ")}${noise ? " (noise)" : ""} at 1/${scale}${grey ? ", grey" : ""}`;
    const bytes = cjpeg(px, w, h, 3, args);
    const ref = djpeg(bytes, [...(grey ? ["-grayscale"] : []), ...(scale > 1 ? ["-scale", `1/${scale}`] : [])], dir);
    const img = jpeg.decode(bytes, { scale: (1 / scale) as JpegScale, grey });
    assert.equal([img.width, img.height, img.channels], [ref.width, ref.height, ref.channels], `${what}: size and channels`);
    const d = compare(img.data, ref.data);
    assert.ok(d.maxAbs <= MAX_ABS, `${what}: max |diff| ${d.maxAbs} against djpeg`);
  }
});

test("jpeg-js (the second reference) agrees on 4:4:4 and greyscale files: PSNR ≥ 45 dB", async () => {
  // jpeg-js upsamples chroma by replication, so only unsubsampled files compare tightly.
  const jpeg = await createJpegDecoder();
  let checked = 0;
  for (const name of corpus().filter((n) => /_444_|_gray_/.test(n))) {
    const img = jpeg.decode(jpegBytes(name));
    const ref = jpegjs.decode(jpegBytes(name), { useTArray: true, formatAsRGBA: false });
    // jpeg-js gives grey images as RGB triples: take one channel.
    const data = img.channels === 3 ? ref.data : ref.data.filter((_, i) => i % 3 === 0);
    const d = compare(img.data, new Uint8Array(data.buffer, data.byteOffset, data.length));
    assert.ok(d.psnr >= MIN_PSNR, `${name}: PSNR ${d.psnr.toFixed(2)} dB against jpeg-js`);
    checked++;
  }
  assert.ok(checked >= 6);
});

test("scaled decode (1/2, 1/4, 1/8) matches djpeg -scale: max |diff| ≤ 4, PSNR ≥ 45 dB", async () => {
  const jpeg = await createJpegDecoder();
  for (const name of ["china_420_q90.jpg", "china_444_q90.jpg", "china_422_q90.jpg", "china_gray_q90.jpg"]) {
    for (const s of [2, 4, 8]) {
      const img = jpeg.decode(jpegBytes(name), { scale: (1 / s) as JpegScale });
      const ref = djpegRef(name, s);
      assert.equal([img.width, img.height], [ref.width, ref.height], `${name} at 1/${s}: size`);
      const d = compare(img.data, ref.data);
      assert.ok(d.maxAbs <= MAX_ABS && d.psnr >= MIN_PSNR, `${name} at 1/${s}: max ${d.maxAbs}, PSNR ${d.psnr.toFixed(2)} dB`);
    }
  }
});

test("lossless transcodes (jpegtran -progressive, -restart, -optimize) give the same pixels and coefficients", async () => {
  const jpeg = await createJpegDecoder();
  const base = jpeg.decode(jpegBytes("china_420_q90.jpg"));
  const baseCoef = jpeg.decodeCoefficients(jpegBytes("china_420_q90.jpg"));
  for (const v of ["prog", "rst2", "opt"]) {
    const name = `china_420_q90_tran_${v}.jpg`;
    const img = jpeg.decode(jpegBytes(name));
    assert.ok(compare(img.data, base.data).maxAbs === 0, `${name}: pixels identical to the baseline file`);
    const coef = jpeg.decodeCoefficients(jpegBytes(name));
    for (let c = 0; c < 3; c++) {
      assert.equal(coef.components[c].quant, baseCoef.components[c].quant, `${name} component ${c}: quant table`);
      const a = coef.components[c].coefficients, b = baseCoef.components[c].coefficients;
      let diff = -1;
      for (let i = 0; i < a.length && diff < 0; i++) if (a[i] !== b[i]) diff = i;
      assert.is(diff, -1, `${name} component ${c}: first differing coefficient at ${diff}`);
    }
  }
});

test("inspect reads the header only: size, sampling, process, restart interval", async () => {
  const jpeg = await createJpegDecoder();
  const a = jpeg.inspect(jpegBytes("china_420_q90.jpg"));
  assert.equal([a.width, a.height, a.components, a.colorSpace, a.process, a.progressive], [223, 171, 3, "ycbcr", "baseline", false]);
  assert.equal(a.sampling.map((s) => [s.h, s.v]), [[2, 2], [1, 1], [1, 1]]);
  const p = jpeg.inspect(jpegBytes("flower_422_prog_rst.jpg"));
  assert.equal([p.process, p.progressive, p.restartInterval > 0], ["progressive", true, true]);
  assert.equal(p.sampling.map((s) => [s.h, s.v]), [[2, 1], [1, 1], [1, 1]]);
  assert.is(jpeg.inspect(jpegBytes("china_gray_q90.jpg")).colorSpace, "gray");
  assert.is(jpeg.inspect(jpegBytes("china_rgb_q90.jpg")).colorSpace, "rgb");
  const cmyk = jpeg.inspect(jpegBytes("china_cmyk_q90.jpg")), ycck = jpeg.inspect(jpegBytes("china_ycck_q90.jpg"));
  assert.equal([cmyk.components, cmyk.colorSpace, ycck.components, ycck.colorSpace], [4, "cmyk", 4, "ycck"]);
  assert.equal(ycck.sampling.map((s) => [s.h, s.v]), [[2, 2], [1, 1], [1, 1], [2, 2]]);
  const ar = jpeg.inspect(jpegBytes("china_420_arith.jpg"));
  assert.is(ar.process, "arithmetic", "inspect reports what decode refuses");
  // A header-only view needs no entropy data: the file cut right after SOS still inspects.
  const bytes = jpegBytes("china_420_q90.jpg");
  let sos = 0;
  for (let i = 0; i + 1 < bytes.length; i++) if (bytes[i] === 0xff && bytes[i + 1] === 0xda) { sos = i; break; }
  assert.is(jpeg.inspect(bytes.subarray(0, sos + 14)).width, 223);
});
