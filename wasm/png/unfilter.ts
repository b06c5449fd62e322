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

/** §9.4's predictor, branch for branch. */
// @ts-ignore: decorator
@inline function paeth(a: i32, b: i32, c: i32): i32 {
  const p = a + b - c;
  const pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  if (pb <= pc) return b;
  return c;
}
