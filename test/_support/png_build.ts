/**
 * PNG files built by hand, for the cases no encoder writes: broken filters, palette indices
 * past the palette, zlib bombs, huge headers, bad CRCs. Chunks are framed and CRC'd here (PNG
 * §5.3); zlib streams come from node:zlib (the same in Bun, Deno and Node).
 */
import { deflateSync, inflateSync } from "node:zlib";

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 255] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export const SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

/** One chunk: length, type, data, CRC (of type and data, unless `crc` overrides it). */
export function chunk(type: string, data: Uint8Array = new Uint8Array(0), crc?: number): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  v.setUint32(8 + data.length, crc ?? crc32(out.subarray(4, 8 + data.length)));
  return out;
}

export function ihdr(width: number, height: number, bitDepth: number, colorType: number, interlace = 0): Uint8Array {
  const d = new Uint8Array(13);
  const v = new DataView(d.buffer);
  v.setUint32(0, width);
  v.setUint32(4, height);
  d.set([bitDepth, colorType, 0, 0, interlace], 8);
  return chunk("IHDR", d);
}

export function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function zlib(raw: Uint8Array, level = 6): Uint8Array {
  return new Uint8Array(deflateSync(raw, { level }));
}

/**
 * A whole file: signature, IHDR, `extra` chunks (PLTE, tRNS…), the zlib stream of `raw` (rows
 * with their filter bytes) split into IDATs of `idatSize` bytes, IEND.
 */
export function buildPng(o: { width: number; height: number; bitDepth: number; colorType: number; interlace?: number; raw?: Uint8Array; stream?: Uint8Array; extra?: Uint8Array[]; idatSize?: number }): Uint8Array<ArrayBuffer> {
  const stream = o.stream ?? zlib(o.raw!);
  const size = o.idatSize ?? (stream.length || 1);
  const idats: Uint8Array[] = [];
  for (let i = 0; i < stream.length; i += size) idats.push(chunk("IDAT", stream.subarray(i, i + size)));
  return concat(SIGNATURE, ihdr(o.width, o.height, o.bitDepth, o.colorType, o.interlace ?? 0), ...(o.extra ?? []), ...idats, chunk("IEND"));
}

/** Offsets of each chunk of `type` in `png` (its length field). */
export function chunkOffsets(png: Uint8Array, type: string): number[] {
  const v = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const out: number[] = [];
  for (let p = 8; p + 8 <= png.length;) {
    const len = v.getUint32(p);
    if (String.fromCharCode(...png.subarray(p + 4, p + 8)) === type) out.push(p);
    p += 12 + len;
  }
  return out;
}

/**
 * `png` (whose rows all use filter type 0, as pypng writes them) with each row re-filtered by a
 * type drawn from `next` (§9.2: None, Sub, Up, Average, Paeth, on every Adam7 pass), deflated
 * again: the same pixels, through every filter at every depth.
 */
export function refilter(png: Uint8Array, next: () => number): Uint8Array<ArrayBuffer> {
  const v = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const width = v.getUint32(16), height = v.getUint32(20);
  const [depth, colorType, , , interlace] = png.subarray(24, 29);
  const spp = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType as 0 | 2 | 3 | 4 | 6];
  const bpp = Math.max(1, (spp * depth) >> 3);
  const idats = chunkOffsets(png, "IDAT");
  const raw = new Uint8Array(inflateSync(concat(...idats.map((p) => png.subarray(p + 8, p + 8 + v.getUint32(p))))));
  const passes = interlace ? [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]] : [[0, 0, 1, 1]];
  const out = new Uint8Array(raw.length);
  let o = 0;
  for (const [x0, y0, dx, dy] of passes) {
    const pw = width > x0 ? Math.ceil((width - x0) / dx) : 0, ph = height > y0 ? Math.ceil((height - y0) / dy) : 0;
    if (pw === 0 || ph === 0) continue;
    const n = Math.ceil((pw * spp * depth) / 8);
    let prev = new Uint8Array(n);
    for (let r = 0; r < ph; r++, o += n + 1) {
      if (raw[o] !== 0) throw new Error(`refilter: row ${r} already has filter type ${raw[o]}`);
      const cur = raw.subarray(o + 1, o + 1 + n);
      const f = Math.floor(next() * 5);
      out[o] = f;
      for (let i = 0; i < n; i++) {
        const a = i >= bpp ? cur[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        const pred = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][f];
        out[o + 1 + i] = (cur[i] - pred) & 255;
      }
      prev = cur;
    }
  }
  return concat(png.subarray(0, idats[0]), chunk("IDAT", zlib(out)), chunk("IEND"));
}
