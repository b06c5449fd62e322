/**
 * PNG files built by hand, for the cases no encoder writes: broken filters, palette indices
 * past the palette, zlib bombs, huge headers, bad CRCs. Chunks are framed and CRC'd here (PNG
 * §5.3); zlib streams come from node:zlib (the same in Bun, Deno and Node).
 */
import { deflateSync } from "node:zlib";

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
