import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { compare } from "../reference/jpeg_compare.ts";
import { pixelsFromCoefficients } from "../reference/jpeg_from_coefficients.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { djpegRef, jpegBytes } from "./_fixtures.ts";

test("coefficient mode: an f64 IDCT of the blocks reproduces djpeg's pixels (4:4:4 and grey, baseline and progressive)", async () => {
  const jpeg = await createJpegDecoder();
  for (const name of ["china_444_q90.jpg", "china_444_prog.jpg", "china_444_rst3b.jpg", "china_gray_q90.jpg", "china_gray_prog.jpg", "px7x9_444_q90.jpg", "fmnist_gray_q90.jpg"]) {
    const coef = jpeg.decodeCoefficients(jpegBytes(name));
    const ref = djpegRef(name);
    const got = pixelsFromCoefficients(coef);
    const d = compare(got, ref.data);
    assert.ok(d.maxAbs <= 4 && d.psnr >= 45, `${name}: max ${d.maxAbs}, PSNR ${d.psnr.toFixed(2)} dB`);
  }
});

test("coefficient mode: geometry of the blocks and tables follows the frame (A.2.4 padding to whole MCUs)", async () => {
  const jpeg = await createJpegDecoder();
  const c = jpeg.decodeCoefficients(jpegBytes("china_420_q90.jpg"));
  assert.equal([c.width, c.height, c.colorSpace, c.progressive], [223, 171, "ycbcr", false]);
  // 223×171 at 4:2:0: MCUs of 16×16 → 14 × 11 MCUs; luma 28 × 22 blocks, chroma 14 × 11.
  assert.equal(c.components.map((x) => [x.h, x.v, x.blocksW, x.blocksH, x.width, x.height]), [[2, 2, 28, 22, 223, 171], [1, 1, 14, 11, 112, 86], [1, 1, 14, 11, 112, 86]]);
  for (const comp of c.components) {
    assert.is(comp.coefficients.length, comp.blocksW * comp.blocksH * 64);
    assert.is(comp.quant.length, 64);
    assert.ok(comp.quant.every((q) => q >= 1), "quantization values are 1…255 at q90");
  }
  assert.ok(c.components[0].quant[0] < c.components[0].quant[63], "natural order: DC step below the highest frequency's");
  // The mean DC of luma blocks tracks the mean of the decoded image (DC = 8 × (mean − 128) / Q).
  const y = c.components[0];
  let dc = 0;
  for (let i = 0; i < 22 * 28; i++) dc += y.coefficients[i * 64] * y.quant[0];
  const img = jpeg.decode(jpegBytes("china_gray_q90.jpg"));
  const mean = img.data.reduce((a, b) => a + b, 0) / img.data.length;
  assert.ok(Math.abs(dc / (22 * 28) / 8 + 128 - mean) < 6, `mean from DC ${dc / (22 * 28) / 8 + 128} vs pixels ${mean}`);
});
