/**
 * References for the JPEG decoder's tests: reading djpeg's PNM output, and the measures we
 * compare with (max abs difference, PSNR). djpeg (libjpeg-turbo) made every reference file;
 * see test/fixtures/jpeg/README.md.
 */

export interface Pixels {
  width: number;
  height: number;
  channels: number;
  data: Uint8Array;
}

/** Parses binary PGM (P5) or PPM (P6) with maxval 255. */
export function parsePnm(bytes: Uint8Array): Pixels {
  let pos = 0;
  const token = (): string => {
    for (;;) {
      while (pos < bytes.length && /\s/.test(String.fromCharCode(bytes[pos]))) pos++;
      if (bytes[pos] === 0x23) while (pos < bytes.length && bytes[pos] !== 0x0a) pos++; // comment
      else break;
    }
    let s = "";
    while (pos < bytes.length && !/\s/.test(String.fromCharCode(bytes[pos]))) s += String.fromCharCode(bytes[pos++]);
    return s;
  };
  const magic = token();
  if (magic !== "P5" && magic !== "P6") throw new Error(`not a binary PNM: ${magic}`);
  const width = Number(token());
  const height = Number(token());
  const maxval = Number(token());
  if (maxval !== 255) throw new Error(`maxval ${maxval} is not 255`);
  pos++; // the single whitespace after maxval
  const channels = magic === "P5" ? 1 : 3;
  return { width, height, channels, data: bytes.subarray(pos, pos + width * height * channels) };
}

export interface Diff {
  maxAbs: number;
  /** Peak signal-to-noise ratio in dB (Infinity when identical). */
  psnr: number;
  /** Samples that differ at all. */
  differing: number;
}

export function compare(a: Uint8Array, b: Uint8Array): Diff {
  if (a.length !== b.length) throw new Error(`lengths differ: ${a.length} vs ${b.length}`);
  let maxAbs = 0, sq = 0, differing = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i] - b[i];
    if (d !== 0) {
      differing++;
      sq += d * d;
      const ad = d < 0 ? -d : d;
      if (ad > maxAbs) maxAbs = ad;
    }
  }
  const mse = sq / a.length;
  return { maxAbs, psnr: mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse), differing };
}
