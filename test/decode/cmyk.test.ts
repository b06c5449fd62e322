/**
 * Four-component JPEGs (Adobe CMYK and YCCK) on fresh random pictures: libjpeg-turbo encodes
 * them (test/fixtures/jpeg/cmyk_encode.c) and djpeg decodes them to RGB (R = C·K/255), the
 * reference for our RGB output and, under libjpeg's grey weights, for `grey: true`. The fixed
 * corpus files (china_cmyk_q90, china_ycck_q90) are compared in jpeg_corpus.test.ts.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { cmykJpeg, djpeg, removeCmykTool, rgbToGrey } from "../_support/cjpeg.ts";
import { compare } from "../reference/jpeg_compare.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";

// The bounds every other colour space is held to against djpeg (jpeg_corpus.test.ts).
const MIN_PSNR = 45;
const MAX_ABS = 4;

const dir = mkdtempSync(join(tmpdir(), "cassette-cmyk-test-"));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  removeCmykTool();
});

test("CMYK and YCCK: fresh random pictures (sizes, samplings, qualities) decode to djpeg's RGB, and grey to its luma", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const jpeg = await createJpegDecoder();
  const samplings = ["1x1", "2x1", "1x2", "2x2"];
  const rows: string[] = [];
  for (let i = 0; i < 12; i++) {
    const w = 1 + Math.floor(r() * 80), h = 1 + Math.floor(r() * 80);
    // Smooth gradients with noise, darker and lighter regions: K and the inks all vary.
    const px = new Uint8Array(w * h * 3);
    const [a, b, c, d] = [r() * 6, r() * 6, r() * 6, r() * 6];
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const p = 3 * (y * w + x);
        const light = 0.55 + 0.45 * Math.sin(d + (x - y) / 11);
        px[p] = light * (128 + 100 * Math.sin(a + x / 7) + 20 * (r() - 0.5));
        px[p + 1] = light * (128 + 100 * Math.cos(b + y / 5) + 20 * (r() - 0.5));
        px[p + 2] = light * (128 + 100 * Math.sin(c + (x + y) / 9) + 20 * (r() - 0.5));
      }
    }
    const mode = i % 2 ? "ycck" : "cmyk";
    const sampling = samplings[Math.floor(r() * samplings.length)];
    const quality = 50 + Math.floor(r() * 50);
    const what = `seed ${seed}, ${w}×${h} ${mode} ${sampling} q${quality}`;
    const bytes = cmykJpeg(px, w, h, mode, quality, sampling);
    assert.is(jpeg.inspect(bytes).colorSpace, mode, what);
    const ref = djpeg(bytes, [], dir);
    const img = jpeg.decode(bytes);
    assert.equal([img.width, img.height, img.channels], [ref.width, ref.height, 3], `${what}: size, RGB`);
    const d1 = compare(img.data, ref.data);
    assert.ok(d1.maxAbs <= MAX_ABS && d1.psnr >= MIN_PSNR, `${what}: RGB max |diff| ${d1.maxAbs}, PSNR ${d1.psnr.toFixed(2)} dB against djpeg`);
    const luma = rgbToGrey(ref).data;
    const grey = jpeg.decode(bytes, { grey: true });
    assert.is(grey.channels, 1, what);
    const d2 = compare(grey.data, luma);
    assert.ok(d2.maxAbs <= MAX_ABS && d2.psnr >= MIN_PSNR, `${what}: grey max |diff| ${d2.maxAbs}, PSNR ${d2.psnr.toFixed(2)} dB against djpeg's RGB weighted`);
    rows.push(`${what.padEnd(36)} RGB max ${d1.maxAbs} ${d1.psnr.toFixed(1)} dB, grey max ${d2.maxAbs} ${d2.psnr.toFixed(1)} dB`);
  }
  console.log(`    vs djpeg:\n      ${rows.join("\n      ")}`);
});
