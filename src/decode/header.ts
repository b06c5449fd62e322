/**
 * An image's size from its header, without decoding: what boxes are drawn on before the
 * decode that takes only the box (transforms/random_resized_crop.ts, src/gpu/decode_planned.ts).
 */

/**
 * Width and height of a JPEG (its SOF) or a PNG (its IHDR); undefined for another format or
 * a header not found where it must be (then a decode names what is wrong with the file).
 */
export function frameSize(b: Uint8Array): { width: number; height: number } | undefined {
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xd8) return jpegFrameSize(b);
  return pngFrameSize(b);
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * Width and height from a PNG's IHDR, which must come first (PNG spec §5.6: the signature,
 * then IHDR's length 13 and type, then width and height as big-endian u32); undefined if not.
 */
export function pngFrameSize(b: Uint8Array): { width: number; height: number } | undefined {
  if (b.length < 24 || PNG_SIGNATURE.some((v, i) => b[i] !== v)) return undefined;
  if (b[12] !== 0x49 || b[13] !== 0x48 || b[14] !== 0x44 || b[15] !== 0x52) return undefined; // "IHDR"
  const u32 = (at: number) => ((b[at] << 24) >>> 0) + ((b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]);
  const width = u32(16), height = u32(20);
  return width > 0 && height > 0 && width <= 0x7fffffff && height <= 0x7fffffff ? { width, height } : undefined;
}

/**
 * Width and height from the frame header (SOFn, ITU T.81 B.2.2), walking the marker segments
 * up to it without decoding anything; undefined when there is none before the first scan or
 * the height is left to a DNL segment. A few reads per segment, where a ⅛ decode would
 * entropy-decode the whole file.
 */
export function jpegFrameSize(b: Uint8Array): { width: number; height: number } | undefined {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  let p = 2;
  while (p + 3 < b.length) {
    if (b[p] !== 0xff) return undefined;
    const m = b[p + 1];
    if (m === 0xff) { // fill byte (B.1.1.2)
      p++;
      continue;
    }
    if (m === 0x01 || (m >= 0xd0 && m <= 0xd7)) { // TEM, RSTn: no length
      p += 2;
      continue;
    }
    if (m === 0xda || m === 0xd9) return undefined; // a scan or the end before any frame
    const len = (b[p + 2] << 8) | b[p + 3];
    // SOF0…SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc) {
      if (p + 8 >= b.length) return undefined;
      const height = (b[p + 5] << 8) | b[p + 6], width = (b[p + 7] << 8) | b[p + 8];
      return width > 0 && height > 0 ? { width, height } : undefined;
    }
    if (len < 2) return undefined;
    p += 2 + len;
  }
  return undefined;
}
