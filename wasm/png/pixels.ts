// Rows of unfiltered samples → output pixels (PNG §13.12 sample depth scaling, §11.3.2.1
// transparency). What comes out:
//
//   colour type        channels out            with `grey`
//   0 grey             1 (2 with tRNS: alpha)  1
//   2 RGB              3 (4 with tRNS)         1: libjpeg's BT.601 weights
//   3 palette          3 (4 with tRNS)         1: the same weights on the palette colour
//   4 grey + alpha     2                       1 (alpha dropped)
//   6 RGBA             4                       1 (alpha dropped)
//
// Samples of 1, 2 and 4 bits are scaled to 8 as v · 255 / (2^depth − 1), which is exact (bit
// replication gives the same values). 16-bit samples are either kept (`depth16`: two bytes each,
// little-endian) or rounded to 8 bits as (v · 255 + 32767) / 65535 (round to nearest, the
// value libpng's png_set_scale_16 gives). The tRNS colour of a grey or RGB image is matched on
// the raw samples, before any scaling; its pixels get alpha 0, the others full alpha.
// Grey from colour is computed at the output depth: Y = (19595 R + 38470 G + 7471 B + 32768)
// >> 16, libjpeg's rgb_gray_convert (the weights sum to 2^16), as wasm/jpeg/color.ts does.
import * as H from "./header";
import { fail, E_BAD_PALETTE_INDEX } from "./errors";
import { fileOffset } from "./chunks";

/** Channels and bytes per sample of the output; set by plan(). */
export let outChannels: i32 = 0;
export let outBytes: i32 = 1;
/** Channels before the grey reduction (the table above, left column). */
let naturalChannels: i32 = 0;
let grey = false;

export function plan(greyOut: bool, depth16: bool): void {
  grey = greyOut;
  const ct = H.colorType;
  naturalChannels = ct == H.CT_GREY_ALPHA ? 2 : ct == H.CT_RGBA ? 4 : ct == H.CT_GREY ? (H.hasTrns ? 2 : 1) : (H.hasTrns ? 4 : 3);
  outChannels = grey ? 1 : naturalChannels;
  outBytes = depth16 && H.bitDepth == 16 ? 2 : 1;
}

/**
 * Whether 8-bit rows are already the output (no scaling, no palette, no added or dropped
 * channel): then decoder.ts unfilters straight into the output and skips this file.
 */
export function rowsAreOutput(): bool {
  if (H.bitDepth != 8 || H.colorType == H.CT_PALETTE) return false;
  if (grey) return H.colorType == H.CT_GREY;
  return outChannels == H.samples;
}

@inline function reduce16(v: u32): u32 {
  return (v * 255 + 32767) / 65535;
}

@inline function luma(r: u32, g: u32, b: u32): u32 {
  return (19595 * r + 38470 * g + 7471 * b + 32768) >> 16;
}

/**
 * One row of `count` pixels from unfiltered samples at `src` to `dst`, pixels `step` bytes
 * apart (more than a pixel when an Adam7 pass scatters them). Returns 0 or an error code.
 */
export function convertRow(src: usize, count: i32, dst: usize, step: usize): i32 {
  const d = H.bitDepth;
  const ct = H.colorType;
  if (ct == H.CT_PALETTE) return paletteRow(src, count, dst, step);
  if (d == 16 && outBytes == 1 && !grey && !H.hasTrns && step == <usize>outChannels) {
    // The common 16 → 8 case: every sample on its own.
    const n = count * outChannels;
    for (let k = 0; k < n; k++) store<u8>(dst + k, <u8>reduce16(<u32>bswap<u16>(load<u16>(src + (<usize>k << 1)))));
    return 0;
  }
  const s = H.samples;
  const mask: u32 = (1 << d) - 1;
  const scale: u32 = d < 8 ? 255 / mask : 1;
  const tg = H.trnsGrey, tr = H.trnsR, tgg = H.trnsG, tb = H.trnsB;
  const full: u32 = outBytes == 2 ? 65535 : 255;
  for (let i = 0; i < count; i++) {
    // The pixel's raw samples, then at the output depth.
    let r0: u32 = 0, r1: u32 = 0, r2: u32 = 0, r3: u32 = 0;
    const k = i * s;
    if (d == 8) {
      const p = src + <usize>k;
      r0 = load<u8>(p);
      if (s > 1) r1 = load<u8>(p + 1);
      if (s > 2) r2 = load<u8>(p + 2);
      if (s > 3) r3 = load<u8>(p + 3);
    } else if (d == 16) {
      const p = src + (<usize>k << 1);
      r0 = bswap<u16>(load<u16>(p));
      if (s > 1) r1 = bswap<u16>(load<u16>(p + 2));
      if (s > 2) r2 = bswap<u16>(load<u16>(p + 4));
      if (s > 3) r3 = bswap<u16>(load<u16>(p + 6));
    } else {
      const bit = k * d;
      r0 = (<u32>load<u8>(src + <usize>(bit >> 3)) >> (8 - d - (bit & 7))) & mask;
    }
    let c0: u32, c1: u32, c2: u32, c3: u32;
    if (d == 16 && outBytes == 1) {
      c0 = reduce16(r0); c1 = reduce16(r1); c2 = reduce16(r2); c3 = reduce16(r3);
    } else {
      c0 = r0 * scale; c1 = r1; c2 = r2; c3 = r3;
    }
    // Alpha from tRNS: a grey image's second channel, an RGB image's fourth.
    if (H.hasTrns) {
      if (ct == H.CT_GREY) c1 = <i32>r0 == tg ? 0 : full;
      else if (ct == H.CT_RGB) c3 = <i32>r0 == tr && <i32>r1 == tgg && <i32>r2 == tb ? 0 : full;
    }
    const o = dst + <usize>i * step;
    if (grey) {
      const y = s >= 3 ? luma(c0, c1, c2) : c0;
      if (outBytes == 2) store<u16>(o, <u16>y);
      else store<u8>(o, <u8>y);
      continue;
    }
    const nc = outChannels;
    if (outBytes == 2) {
      store<u16>(o, <u16>c0);
      if (nc > 1) store<u16>(o + 2, <u16>c1);
      if (nc > 2) store<u16>(o + 4, <u16>c2);
      if (nc > 3) store<u16>(o + 6, <u16>c3);
    } else {
      store<u8>(o, <u8>c0);
      if (nc > 1) store<u8>(o + 1, <u8>c1);
      if (nc > 2) store<u8>(o + 2, <u8>c2);
      if (nc > 3) store<u8>(o + 3, <u8>c3);
    }
  }
  return 0;
}

/** Palette indices (1, 2, 4 or 8 bits) → RGB, RGBA or grey. */
function paletteRow(src: usize, count: i32, dst: usize, step: usize): i32 {
  const d = H.bitDepth;
  const size = <u32>H.paletteSize;
  const nc = outChannels;
  const mask: u32 = (1 << d) - 1;
  for (let i = 0; i < count; i++) {
    let idx: u32;
    if (d == 8) idx = load<u8>(src + <usize>i);
    else {
      const bit = i * d;
      idx = (<u32>load<u8>(src + <usize>(bit >> 3)) >> (8 - d - (bit & 7))) & mask;
    }
    // §11.2.3: an index past the palette is an error.
    if (idx >= size) return fail(E_BAD_PALETTE_INDEX, fileOffset(0), size, idx);
    const c = load<u32>(H.PALETTE + (<usize>idx << 2));
    const o = dst + <usize>i * step;
    if (nc == 4) store<u32>(o, c);
    else if (nc == 3) {
      store<u16>(o, <u16>c);
      store<u8>(o + 2, <u8>(c >> 16));
    } else {
      store<u8>(o, <u8>luma(c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff));
    }
  }
  return 0;
}
