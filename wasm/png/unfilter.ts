// Reversing the five filters of filter method 0 (PNG §9.2–9.4). Each row starts with its
// filter type; `bpp` is the number of bytes per complete pixel, at least 1 (§9.2: for depths
// under 8 the byte to the left is used). With x the filtered byte, a the reconstructed byte
// `bpp` to the left (0 before the row), b the reconstructed byte above (0 on a pass's first
// row) and c the one above a:
//
//   0 None      x
//   1 Sub       x + a
//   2 Up        x + b
//   3 Average   x + floor((a + b) / 2)
//   4 Paeth     x + whichever of a, b, c is closest to a + b − c (ties: a, then b)
//
// `dst` may be `src` or lie below it by any amount: each byte is read before the byte written
// at its place (dst ≤ src), and reconstruction reads only `dst` and `prev`. decoder.ts uses
// that to unfilter 8-bit rows straight into their place in the output, over the raw data.

/** Unfilters `n` bytes; returns false for an unknown filter type. */
export function unfilterRow(filter: u32, src: usize, dst: usize, prev: usize, n: i32, bpp: i32): bool {
  if (filter == 0) {
    if (dst != src) memory.copy(dst, src, n);
  } else if (filter == 1) {
    for (let i = 0; i < bpp && i < n; i++) store<u8>(dst + i, load<u8>(src + i));
    for (let i = bpp; i < n; i++) store<u8>(dst + i, load<u8>(src + i) + load<u8>(dst + i - bpp));
  } else if (filter == 2) {
    let i = 0;
    for (; i + 16 <= n; i += 16) v128.store(dst + i, i8x16.add(v128.load(src + i), v128.load(prev + i)));
    for (; i < n; i++) store<u8>(dst + i, load<u8>(src + i) + load<u8>(prev + i));
  } else if (filter == 3) {
    for (let i = 0; i < bpp && i < n; i++) store<u8>(dst + i, load<u8>(src + i) + (load<u8>(prev + i) >> 1));
    for (let i = bpp; i < n; i++) {
      const a = <u32>load<u8>(dst + i - bpp), b = <u32>load<u8>(prev + i);
      store<u8>(dst + i, <u8>(<u32>load<u8>(src + i) + ((a + b) >> 1)));
    }
  } else if (filter == 4) {
    if (bpp >= 2) {
      paethPixels(src, dst, prev, n, bpp);
      return true;
    }
    for (let i = 0; i < bpp && i < n; i++) store<u8>(dst + i, load<u8>(src + i) + load<u8>(prev + i)); // a = c = 0: b wins
    for (let i = bpp; i < n; i++) {
      const a = <i32>load<u8>(dst + i - bpp), b = <i32>load<u8>(prev + i), c = <i32>load<u8>(prev + i - bpp);
      store<u8>(dst + i, <u8>(<i32>load<u8>(src + i) + paeth(a, b, c)));
    }
  } else {
    return false;
  }
  return true;
}

/**
 * §9.4's predictor without branches (noisy rows make its branches unpredictable): a unless b
 * or c is strictly nearer to p = a + b − c, then b unless c is strictly nearer.
 */
// @ts-ignore: decorator
@inline function paeth(a: i32, b: i32, c: i32): i32 {
  const pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - c - c); // |p − a|, |p − b|, |p − c|
  const useB = pb < pa;
  const pred = select(b, a, useB);
  return select(c, pred, pc < select(pb, pa, useB));
}

/**
 * Paeth for 2 … 8 bytes a pixel, one pixel a step in i16 lanes: the channels of a pixel are
 * independent, so the predictor runs on all of them at once, branch-free, and only the left
 * neighbour carries from pixel to pixel (libpng's SSE2 filters do the same). Loads read 8 bytes
 * whatever `bpp` is (rows have slack after them); stores write exactly `bpp`.
 */
function paethPixels(src: usize, dst: usize, prev: usize, n: i32, bpp: i32): void {
  const low = i16x8.splat(0xff);
  let a = i16x8.splat(0); // reconstructed pixel to the left
  let c = i16x8.splat(0); // the pixel above it
  for (let i = 0; i < n; i += bpp) {
    const b = i16x8.extend_low_i8x16_u(v128.load64_zero(prev + <usize>i));
    const x = i16x8.extend_low_i8x16_u(v128.load64_zero(src + <usize>i));
    const p = i16x8.sub(b, c); // p − a, with p = a + b − c
    const q = i16x8.sub(a, c); // p − b
    const pa = i16x8.abs(p);
    const pb = i16x8.abs(q);
    const pc = i16x8.abs(i16x8.add(p, q)); // p − c
    // §9.4's order of preference: a, then b, then c, so only a strictly nearer one wins.
    const useB = i16x8.lt_s(pb, pa);
    let pred = v128.bitselect(b, a, useB);
    pred = v128.bitselect(c, pred, i16x8.lt_s(pc, i16x8.min_s(pa, pb)));
    a = v128.and(i16x8.add(x, pred), low);
    c = b;
    const out = i8x16.narrow_i16x8_u(a, a);
    const d = dst + <usize>i;
    if (bpp == 3) {
      v128.store16_lane(d, out, 0);
      v128.store8_lane(d + 2, out, 2);
    } else if (bpp == 4) {
      v128.store32_lane(d, out, 0);
    } else if (bpp == 8) {
      v128.store64_lane(d, out, 0);
    } else if (bpp == 6) {
      v128.store32_lane(d, out, 0);
      v128.store16_lane(d + 4, out, 2);
    } else {
      v128.store16_lane(d, out, 0); // bpp 2
    }
  }
}
