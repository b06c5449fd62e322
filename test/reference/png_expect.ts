/**
 * The PNG decoder's reference: what `decode()` must give for an image described by its raw
 * samples (what was handed to the encoder, or what pypng read back from a file), written
 * from the PNG spec's words (§11.2.2, §11.3.2.1, §13.12) rather than from the decoder:
 * palette lookup, tRNS → alpha, sample scaling, 16 → 8 rounding, grey weights.
 */

export type PngColorType = 0 | 2 | 3 | 4 | 6;

/** An image as samples: the encoder's input, or a reference decoder's raw output. */
export interface PngSamples {
  width: number;
  height: number;
  colorType: PngColorType;
  bitDepth: 1 | 2 | 4 | 8 | 16;
  /** Samples per pixel as stored (1, 2, 3 or 4), row-major, each within 0 … 2^bitDepth − 1. */
  samples: Uint16Array;
  /**
   * Colour type 3: [r, g, b] or [r, g, b, a] per entry. The image has tRNS (and so comes out
   * as RGBA) when any entry has an alpha; entries without one are opaque.
   */
  palette?: number[][];
  /** Colour type 0: the transparent grey; colour type 2: the transparent [r, g, b]. */
  transparent?: number | number[];
}

export const SAMPLES_PER_PIXEL: Record<PngColorType, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

/** What the decoder must return: channels, bits per sample, and the samples (numbers). */
export interface Expected {
  channels: number;
  bitDepth: 8 | 16;
  values: Uint16Array;
}

/** The expected output for `img` decoded with `grey` and `depth16`. */
export function expectedPixels(img: PngSamples, options: { grey?: boolean; depth16?: boolean } = {}): Expected {
  const { width, height, colorType, bitDepth, samples } = img;
  const spp = SAMPLES_PER_PIXEL[colorType];
  const keep16 = bitDepth === 16 && !!options.depth16;
  const max = keep16 ? 65535 : 255;
  // A raw sample at the output depth.
  const level = (v: number): number => {
    if (bitDepth === 16) return keep16 ? v : Math.round((v * 255) / 65535);
    return Math.round((v * 255) / (2 ** bitDepth - 1)); // exact for 1, 2, 4 and 8 bits
  };
  const pixels: number[][] = [];
  for (let i = 0; i < width * height; i++) {
    const raw = Array.from(samples.subarray(i * spp, (i + 1) * spp));
    let px: number[];
    if (colorType === 3) {
      const entry = img.palette![raw[0]];
      if (!entry) throw new Error(`palette index ${raw[0]} past ${img.palette!.length} entries`);
      const hasAlpha = img.palette!.some((e) => e.length === 4);
      px = hasAlpha ? [entry[0], entry[1], entry[2], entry[3] ?? 255] : [entry[0], entry[1], entry[2]];
    } else {
      px = raw.map(level);
      if (img.transparent !== undefined && (colorType === 0 || colorType === 2)) {
        const t = typeof img.transparent === "number" ? [img.transparent] : img.transparent;
        px.push(t.every((v, k) => v === raw[k]) ? 0 : max);
      }
    }
    pixels.push(px);
  }
  const natural = pixels[0]?.length ?? 1;
  if (options.grey) {
    // libjpeg's rgb_gray_convert weights (0.299, 0.587, 0.114 in 16-bit fixed point); grey
    // files keep their grey; alpha goes.
    const values = new Uint16Array(pixels.length);
    pixels.forEach((p, i) => (values[i] = p.length >= 3 ? Math.floor((19595 * p[0] + 38470 * p[1] + 7471 * p[2] + 32768) / 65536) : p[0]));
    return { channels: 1, bitDepth: keep16 ? 16 : 8, values };
  }
  const values = new Uint16Array(pixels.length * natural);
  pixels.forEach((p, i) => values.set(p, i * natural));
  return { channels: natural, bitDepth: keep16 ? 16 : 8, values };
}

/** The samples of a decoded image as numbers (16-bit data read little-endian). */
export function imageValues(img: { data: Uint8Array; bitDepth?: 8 | 16 }): Uint16Array {
  if ((img.bitDepth ?? 8) === 8) return Uint16Array.from(img.data);
  const out = new Uint16Array(img.data.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = img.data[2 * i] | (img.data[2 * i + 1] << 8);
  return out;
}

/** The first index where `a` and `b` differ, or −1. */
export function firstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}
