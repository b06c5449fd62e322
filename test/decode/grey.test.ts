import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { cjpeg, djpeg, rgbToGrey } from "../_support/cjpeg.ts";
import { compare } from "../reference/jpeg_compare.ts";
import { createJpegDecoder, type JpegScale } from "../../src/decode/jpeg.ts";
import { encodeGrey } from "../../src/dataset/ingest.ts";
import { corpus, disabled, jpegBytes } from "./_fixtures.ts";

// `grey: true` is held to the same bounds as colour decoding against djpeg (jpeg_corpus.test.ts).
const MIN_PSNR = 45;
const MAX_ABS = 4;

const dir = mkdtempSync(join(tmpdir(), "cassette-grey-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * libjpeg-turbo's grey for `bytes` at scale 1/`scale`: its -grayscale output; for CMYK and YCCK,
 * which it will not turn to grey, its RGB (R = C·K/255) weighted as its own RGB → grey is.
 */
function djpegGrey(bytes: Uint8Array, scale = 1, fourComponents = false) {
  const args = scale === 1 ? [] : ["-scale", `1/${scale}`];
  return fourComponents ? rgbToGrey(djpeg(bytes, args, dir)) : djpeg(bytes, ["-grayscale", ...args], dir);
}

function checkAgainstDjpeg(jpeg: Awaited<ReturnType<typeof createJpegDecoder>>, what: string, bytes: Uint8Array, scale = 1): string {
  const img = jpeg.decode(bytes, { grey: true, scale: (1 / scale) as JpegScale });
  const ref = djpegGrey(bytes, scale, ["cmyk", "ycck"].includes(jpeg.inspect(bytes).colorSpace));
  assert.equal([img.width, img.height, img.channels], [ref.width, ref.height, 1], `${what}: size, one channel`);
  const d = compare(img.data, ref.data);
  assert.ok(d.maxAbs <= MAX_ABS && d.psnr >= MIN_PSNR, `${what}: max |diff| ${d.maxAbs}, PSNR ${d.psnr.toFixed(2)} dB against djpeg -grayscale`);
  return `${what.padEnd(34)} max ${d.maxAbs}  PSNR ${d.psnr.toFixed(1)} dB`;
}

test("grey: every corpus file matches djpeg -grayscale (YCbCr, RGB, grey, CMYK, YCCK; baseline, progressive, restarts; 1/2 to 1/8)", async () => {
  const jpeg = await createJpegDecoder();
  const skip = disabled();
  const rows: string[] = [];
  for (const name of corpus()) {
    if (skip.has(name)) continue;
    rows.push(checkAgainstDjpeg(jpeg, name, jpegBytes(name)));
  }
  for (const s of [2, 4, 8]) rows.push(checkAgainstDjpeg(jpeg, `china_420_q90.jpg at 1/${s}`, jpegBytes("china_420_q90.jpg"), s));
  console.log(`    grey vs djpeg -grayscale:\n      ${rows.join("\n      ")}`);
  assert.ok(rows.length >= 28);
});

test("grey: fresh random images from cjpeg (4:2:0, 4:2:2, 4:4:4, RGB, progressive) match djpeg -grayscale", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const jpeg = await createJpegDecoder();
  const kinds = [["-sample", "2x2"], ["-sample", "2x1"], ["-sample", "1x1"], ["-rgb"], ["-progressive", "-sample", "2x2"], ["-restart", "1", "-sample", "1x1"]];
  for (let i = 0; i < 12; i++) {
    const w = 1 + Math.floor(r() * 70), h = 1 + Math.floor(r() * 70);
    // Smooth gradients plus noise: not flat (the chroma is not empty), not white noise either.
    const px = new Uint8Array(w * h * 3);
    const [a, b, c] = [r() * 6, r() * 6, r() * 6];
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const p = 3 * (y * w + x);
        px[p] = 128 + 100 * Math.sin(a + x / 7) + 20 * (r() - 0.5);
        px[p + 1] = 128 + 100 * Math.cos(b + y / 5) + 20 * (r() - 0.5);
        px[p + 2] = 128 + 100 * Math.sin(c + (x + y) / 9) + 20 * (r() - 0.5);
      }
    }
    const args = [...kinds[i % kinds.length], "-quality", String(50 + Math.floor(r() * 50))];
    checkAgainstDjpeg(jpeg, `seed ${seed}, ${w}×${h} ${args.join(" ")}`, cjpeg(px, w, h, 3, args));
  }
});

test("grey: a grey image stored as three equal components (as ingest writes Fashion-MNIST) decodes to exactly its RGB decode's channel", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const jpeg = await createJpegDecoder();
  for (let i = 0; i < 8; i++) {
    const w = 1 + Math.floor(r() * 40), h = 1 + Math.floor(r() * 40);
    const grey = new Uint8Array(w * h).map(() => Math.floor(r() * 256));
    const bytes = encodeGrey(grey, w, h, 60 + Math.floor(r() * 40));
    const rgb = jpeg.decode(bytes);
    assert.is(rgb.channels, 3, "ingest writes three components");
    const one = jpeg.decode(bytes, { grey: true });
    assert.equal([one.width, one.height, one.channels], [w, h, 1]);
    const red = rgb.data.filter((_, k) => k % 3 === 0);
    assert.ok(rgb.data.every((v, k) => v === red[Math.floor(k / 3)]), `seed ${seed}: R = G = B in the RGB decode`);
    assert.equal(Array.from(one.data), Array.from(red), `seed ${seed}, ${w}×${h}: grey equals the RGB decode's channel`);
  }
});

test("grey: a grey file is unchanged by it, and a bad value is named", async () => {
  const jpeg = await createJpegDecoder();
  const bytes = jpegBytes("china_gray_q90.jpg");
  assert.equal(jpeg.decode(bytes, { grey: true }).data, jpeg.decode(bytes).data);
  assert.throws(() => jpeg.decode(bytes, { grey: "yes" as unknown as boolean }), /'grey' must be true or false: current value is string yes/);
});
