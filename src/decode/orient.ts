/** Exif orientation, for any decoder's Image: a format reads the tag, this applies it. */
import type { Image } from "./decoder.ts";

/**
 * Applies Exif orientation `img.orientation` (TIFF 6.0 tag 274): the result is as a viewer
 * shows it, with orientation 1.
 */
export function orient<I extends Image>(img: I): I {
  const o = img.orientation;
  if (o <= 1 || o > 8) return img;
  const { width: W, height: H, channels: ch, data } = img;
  const swap = o >= 5;
  const w2 = swap ? H : W;
  const h2 = swap ? W : H;
  const out = new Uint8Array(data.length);
  for (let y = 0; y < h2; y++) {
    for (let x = 0; x < w2; x++) {
      // (sx, sy): where displayed pixel (x, y) is stored.
      let sx: number, sy: number;
      switch (o) {
        case 2: sx = W - 1 - x; sy = y; break;
        case 3: sx = W - 1 - x; sy = H - 1 - y; break;
        case 4: sx = x; sy = H - 1 - y; break;
        case 5: sx = y; sy = x; break;
        case 6: sx = y; sy = H - 1 - x; break;
        case 7: sx = W - 1 - y; sy = H - 1 - x; break;
        default: sx = W - 1 - y; sy = x; break; // 8
      }
      const s = (sy * W + sx) * ch;
      const d = (y * w2 + x) * ch;
      for (let c = 0; c < ch; c++) out[d + c] = data[s + c];
    }
  }
  return { ...img, width: w2, height: h2, data: out, orientation: 1 };
}
