// What the critical and transparency chunks say about the image (PNG §11.2.2 IHDR, §11.2.3
// PLTE, §11.3.2.1 tRNS), checked as each is read. chunks.ts finds the chunks; the later stages
// read the facts kept here.
import { fail, E_BAD_IHDR, E_BAD_PLTE, E_BAD_TRNS, E_UNSUP_DEPTH, E_UNSUP_METHOD } from "./errors";

export const CT_GREY = 0;
export const CT_RGB = 2;
export const CT_PALETTE = 3;
export const CT_GREY_ALPHA = 4;
export const CT_RGBA = 6;

export let width: i32 = 0;
export let height: i32 = 0;
export let bitDepth: i32 = 0;
export let colorType: i32 = 0;
export let interlaced: bool = false;
/** Samples per pixel as stored: 1 grey or palette index, 2 grey + alpha, 3 RGB, 4 RGBA. */
export let samples: i32 = 0;
/** Byte offset of IHDR's data (where a too-large error points). */
export let ihdrOffset: i32 = 0;

/**
 * The palette as RGBA, 256 entries of four bytes: PLTE's colours, alpha from tRNS (255 where it
 * gives none). Entries past `paletteSize` stay unused: an index there is an error.
 */
export const PALETTE: usize = memory.data(256 * 4, 16);
export let paletteSize: i32 = 0;
/** tRNS was given (for grey and RGB: one colour, kept as its raw samples, that is transparent). */
export let hasTrns: bool = false;
export let trnsGrey: i32 = -1;
export let trnsR: i32 = -1;
export let trnsG: i32 = -1;
export let trnsB: i32 = -1;

export function resetHeader(): void {
  width = height = bitDepth = colorType = samples = 0;
  interlaced = false;
  paletteSize = 0;
  hasTrns = false;
  trnsGrey = trnsR = trnsG = trnsB = -1;
}

@inline function be32(p: usize): u32 { return bswap<u32>(load<u32>(p)); }
@inline function be16(p: usize): i32 { return <i32>bswap<u16>(load<u16>(p)); }

/** IHDR's 13 bytes at `p` (file offset `at`). Returns 0 or an error code. */
export function readIhdr(p: usize, len: u32, at: i32): i32 {
  ihdrOffset = at;
  if (len != 13) return fail(E_BAD_IHDR, at, 13, len);
  const w = be32(p), h = be32(p + 4);
  // §11.2.2: both in 1 … 2^31 − 1.
  if (w == 0 || w > 0x7fffffff) return fail(E_BAD_IHDR, at, 1, w);
  if (h == 0 || h > 0x7fffffff) return fail(E_BAD_IHDR, at + 4, 1, h);
  width = <i32>w;
  height = <i32>h;
  bitDepth = load<u8>(p + 8);
  colorType = load<u8>(p + 9);
  const d = bitDepth;
  // Table 11.1: the allowed pairs.
  let ok = false;
  if (colorType == CT_GREY) { ok = d == 1 || d == 2 || d == 4 || d == 8 || d == 16; samples = 1; }
  else if (colorType == CT_RGB) { ok = d == 8 || d == 16; samples = 3; }
  else if (colorType == CT_PALETTE) { ok = d == 1 || d == 2 || d == 4 || d == 8; samples = 1; }
  else if (colorType == CT_GREY_ALPHA) { ok = d == 8 || d == 16; samples = 2; }
  else if (colorType == CT_RGBA) { ok = d == 8 || d == 16; samples = 4; }
  if (!ok) return fail(E_UNSUP_DEPTH, at + 8, colorType, d);
  if (load<u8>(p + 10) != 0) return fail(E_UNSUP_METHOD, at + 10, 0, load<u8>(p + 10)); // compression: deflate
  if (load<u8>(p + 11) != 0) return fail(E_UNSUP_METHOD, at + 11, 0, load<u8>(p + 11)); // filter method 0
  const il = load<u8>(p + 12);
  if (il > 1) return fail(E_UNSUP_METHOD, at + 12, 1, il); // none or Adam7
  interlaced = il == 1;
  return 0;
}

/** PLTE (§11.2.3): 1 … 2^depth RGB entries (256 at most). Grey images must not have one. */
export function readPlte(p: usize, len: u32, at: i32): i32 {
  if (colorType == CT_GREY || colorType == CT_GREY_ALPHA) return fail(E_BAD_PLTE, at, 0, len);
  if (paletteSize != 0) return fail(E_BAD_PLTE, at, 0, len); // a second PLTE
  const n = len / 3;
  const max = colorType == CT_PALETTE ? 1 << bitDepth : 256;
  if (len % 3 != 0 || n == 0 || n > <u32>max) return fail(E_BAD_PLTE, at, max * 3, len);
  for (let i: u32 = 0; i < n; i++) {
    const s = p + <usize>(i * 3);
    store<u32>(PALETTE + (<usize>i << 2), <u32>load<u8>(s) | (<u32>load<u8>(s + 1) << 8) | (<u32>load<u8>(s + 2) << 16) | 0xff000000);
  }
  paletteSize = n;
  return 0;
}

/**
 * tRNS (§11.3.2.1): palette alphas (at most one per PLTE entry), or the one transparent grey
 * or RGB value. Colour types with an alpha channel may not have one: it is skipped, as libpng
 * does.
 */
export function readTrns(p: usize, len: u32, at: i32): i32 {
  if (hasTrns) return fail(E_BAD_TRNS, at, 0, len);
  if (colorType == CT_PALETTE) {
    if (paletteSize == 0) return fail(E_BAD_TRNS, at, 0, len); // before PLTE
    if (len > <u32>paletteSize) return fail(E_BAD_TRNS, at, paletteSize, len);
    for (let i: u32 = 0; i < len; i++) store<u8>(PALETTE + (<usize>i << 2) + 3, load<u8>(p + i));
  } else if (colorType == CT_GREY) {
    if (len != 2) return fail(E_BAD_TRNS, at, 2, len);
    trnsGrey = be16(p);
  } else if (colorType == CT_RGB) {
    if (len != 6) return fail(E_BAD_TRNS, at, 6, len);
    trnsR = be16(p);
    trnsG = be16(p + 2);
    trnsB = be16(p + 4);
  } else {
    return 0;
  }
  hasTrns = true;
  return 0;
}
