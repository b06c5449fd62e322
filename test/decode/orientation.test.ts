import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { createJpegDecoder, orient } from "../../src/decode/jpeg.ts";
import { jpegBytes } from "./_fixtures.ts";

/** `bytes` with an APP1 Exif segment (TIFF IFD0 holding only tag 0x0112) right after SOI. */
function withOrientation(bytes: Uint8Array, o: number, little: boolean): Uint8Array {
  const tiff = new Uint8Array(8 + 2 + 12 + 4);
  const dv = new DataView(tiff.buffer);
  tiff.set(little ? [0x49, 0x49] : [0x4d, 0x4d]);
  dv.setUint16(2, 42, little);
  dv.setUint32(4, 8, little); // IFD0 offset
  dv.setUint16(8, 1, little); // one entry
  dv.setUint16(10, 0x0112, little); // Orientation
  dv.setUint16(12, 3, little); // SHORT
  dv.setUint32(14, 1, little); // count
  dv.setUint16(18, o, little); // value, left-justified in the 4-byte field
  const body = [...new TextEncoder().encode("Exif"), 0, 0, ...tiff];
  const seg = [0xff, 0xe1, (body.length + 2) >> 8, (body.length + 2) & 255, ...body];
  const out = new Uint8Array(bytes.length + seg.length);
  out.set(bytes.subarray(0, 2));
  out.set(seg, 2);
  out.set(bytes.subarray(2), 2 + seg.length);
  return out;
}

test("Exif orientation is reported by inspect and decode, and applied only when asked", async () => {
  const jpeg = await createJpegDecoder();
  const plain = jpeg.decode(jpegBytes("px17x33_422_q90.jpg"));
  assert.is(plain.orientation, 1, "no Exif: orientation 1");
  for (const little of [true, false]) {
    for (let o = 1; o <= 8; o++) {
      const bytes = withOrientation(jpegBytes("px17x33_422_q90.jpg"), o, little);
      assert.is(jpeg.inspect(bytes).orientation, o);
      const img = jpeg.decode(bytes);
      assert.is(img.orientation, o);
      assert.equal(img.data, plain.data, "not applied by default");
      const turned = jpeg.decode(bytes, { applyOrientation: true });
      assert.is(turned.orientation, 1);
      assert.equal([turned.width, turned.height], o >= 5 ? [33, 17] : [17, 33]);
    }
  }
  // Orientation 6 (rotate 90° clockwise to view): the stored top-left pixel ends top-right.
  const r6 = orient({ ...plain, orientation: 6 });
  const px = (img: typeof plain, x: number, y: number) => Array.from(img.data.subarray((y * img.width + x) * 3, (y * img.width + x) * 3 + 3));
  assert.equal(px(r6, r6.width - 1, 0), px(plain, 0, 0));
  assert.equal(px(r6, 0, 0), px(plain, 0, plain.height - 1));
  // 8 undoes 6, and 3 applied twice is the identity.
  const back = orient({ ...r6, orientation: 8 });
  assert.equal(back.data, plain.data);
  const r3 = orient({ ...orient({ ...plain, orientation: 3 }), orientation: 3 });
  assert.equal(r3.data, plain.data);
});
