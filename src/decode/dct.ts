/**
 * A DCT image (src/decode/decoder.ts, the hybrid decode's hand-over) as one run of bytes, so
 * that a read worker writes it into its packet beside the pixels of other samples and the
 * loader's thread reads it back as views, no copy (NOTE [ Packets ], src/read/packet.ts).
 *
 * NOTE [ DCT record ]: little-endian, every part on a 4-byte boundary:
 *
 *   ┌──────────────┬───────────────────────┬─────────────────────┬──────────────────────────┐
 *   │header 12 × i32│ components 8 × i32 each│ quant 64 × u16 each │ blocks 64 × i16 each, per │
 *   │              │                        │                     │ component in frame order  │
 *   └──────────────┴───────────────────────┴─────────────────────┴──────────────────────────┘
 *   header:     MAGIC │ WIDTH │ HEIGHT │ COLOR │ PROGRESSIVE │ ORIENTATION │ COMPONENTS │ –
 *               REGION_X │ REGION_Y │ REGION_W │ REGION_H   (REGION_W 0: the whole image)
 *   component:  ID │ H │ V │ BLOCKS_W │ BLOCKS_H │ WIDTH │ HEIGHT │ BLOCK_X | BLOCK_Y << 16
 *
 * A block is 128 bytes, so the blocks stay aligned; the record's length is `dctBytes(img)`.
 */
import { CassetteError } from "../errors.ts";
import type { DctColorSpace, DctComponent, DctImage } from "./decoder.ts";

const MAGIC = 0x44435432; // "DCT2"
const HEADER = 12, COMP = 8;
const COLORS: DctColorSpace[] = ["gray", "ycbcr", "rgb", "cmyk", "ycck"];

/** Bytes of `img`'s record (NOTE [ DCT record ]). */
export function dctBytes(img: DctImage): number {
  let n = (HEADER + img.components.length * COMP) * 4 + img.components.length * 128;
  for (const c of img.components) n += c.blocksW * c.blocksH * 128;
  return n;
}

/** Writes `img`'s record into `dst` from `at` (a multiple of 4); returns the bytes written. */
export function writeDct(img: DctImage, dst: Uint8Array, at: number): number {
  const n = img.components.length;
  const bytes = dctBytes(img);
  if (at % 4 !== 0 || at + bytes > dst.length) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot write a DCT record of ${bytes} bytes at ${at} as the target holds ${dst.length} bytes and records start on 4-byte boundaries`);
  }
  const words = new Int32Array(dst.buffer, dst.byteOffset + at, HEADER + n * COMP);
  const r = img.region;
  words.set([MAGIC, img.width, img.height, COLORS.indexOf(img.colorSpace), img.progressive ? 1 : 0, img.orientation, n, 0, r?.x ?? 0, r?.y ?? 0, r?.width ?? 0, r?.height ?? 0]);
  img.components.forEach((c, j) => words.set([c.id, c.h, c.v, c.blocksW, c.blocksH, c.width, c.height, (c.blockX ?? 0) | ((c.blockY ?? 0) << 16)], HEADER + j * COMP));
  let p = at + words.byteLength;
  for (const c of img.components) {
    dst.set(new Uint8Array(c.quant.buffer, c.quant.byteOffset, 128), p);
    p += 128;
  }
  for (const c of img.components) {
    const b = new Uint8Array(c.coefficients.buffer, c.coefficients.byteOffset, c.blocksW * c.blocksH * 128);
    dst.set(b, p);
    p += b.length;
  }
  return bytes;
}

/**
 * The DCT image whose record starts at `at` in `buf`: its tables and blocks are views of `buf`.
 * A record that does not hold together (not one, or cut) is ERR_MALFORMED_INPUT saying where.
 */
export function readDct(buf: Uint8Array, at: number, length: number): DctImage {
  const bad = (why: string) => new CassetteError("ERR_MALFORMED_INPUT", `Cannot read the DCT record at byte ${at} (${length} bytes) as ${why}`);
  if (at % 4 !== 0 || length < HEADER * 4 || at + length > buf.length) throw bad(`it must start on a 4-byte boundary and lie within the ${buf.length} bytes`);
  const head = new Int32Array(buf.buffer, buf.byteOffset + at, HEADER);
  const n = head[6];
  if (head[0] !== MAGIC || !(n >= 1 && n <= 4) || !COLORS[head[3]]) throw bad(`its header is not one (magic ${head[0]}, ${n} components, colour ${head[3]})`);
  const words = new Int32Array(buf.buffer, buf.byteOffset + at, HEADER + n * COMP);
  let q = at + words.byteLength;
  let p = q + n * 128;
  const components: DctComponent[] = [];
  for (let j = 0; j < n; j++) {
    const [id, h, v, blocksW, blocksH, width, height, origin] = words.subarray(HEADER + j * COMP);
    const blocks = blocksW * blocksH;
    if (!(blocks >= 0) || p + blocks * 128 > at + length) throw bad(`component ${j}'s ${blocksW}×${blocksH} blocks run past its end`);
    const quant = new Uint16Array(buf.buffer, buf.byteOffset + q, 64);
    const coefficients = new Int16Array(buf.buffer, buf.byteOffset + p, blocks * 64);
    const window = head[10] ? { blockX: origin & 0xffff, blockY: origin >>> 16 } : {};
    components.push({ id, h, v, blocksW, blocksH, ...window, width, height, quant, coefficients });
    q += 128;
    p += blocks * 128;
  }
  const img: DctImage = { width: head[1], height: head[2], colorSpace: COLORS[head[3]], progressive: head[4] === 1, orientation: head[5], components };
  if (head[10]) img.region = { x: head[8], y: head[9], width: head[10], height: head[11] };
  return img;
}
