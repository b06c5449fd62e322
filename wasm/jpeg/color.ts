// Colour conversion of one output row: YCbCr → RGB (JFIF 1.02, section 7, the inverse of
// ITU-R BT.601 with full-range samples), RGB pass-through, and interleaving into RGB triples.
//
//   R = Y + 1.402 (Cr−128)
//   G = Y − 0.344136 (Cb−128) − 0.714136 (Cr−128)
//   B = Y + 1.772 (Cb−128)
//
// Sixteen pixels an iteration, in i16 lanes: the fractional products use Q15 rounding
// multiplies (i16x8.q15mulr_sat_s: (a·b + 2^14) >> 15), so each is rounded to nearest as
// libjpeg's fixed-point tables are; the integer parts (1× and 1×) are plain adds. The rows are
// padded (decoder.ts allocates 16 spare bytes after each), so the last group may read past the
// row end; it may also write up to 47 bytes past the output row, which the next row overwrites
// (and the output buffer has 64 bytes of slack).

const K_CR_R: i16 = 13173; // 0.402 · 2^15   (1.402 = 1 + 0.402)
const K_CB_G: i16 = 11277; // 0.344136 · 2^15
const K_CR_G: i16 = 23401; // 0.714136 · 2^15
const K_CB_B: i16 = 25297; // 0.772 · 2^15   (1.772 = 1 + 0.772)

// @ts-ignore: decorator
@inline function interleave3(r: v128, g: v128, b: v128, out: usize): void {
  // Byte j of output vector n is channel (16n + j) % 3 of pixel (16n + j) / 3; index −1 → 0.
  v128.store(out, v128.or(v128.or(
    i8x16.swizzle(r, i8x16(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5)),
    i8x16.swizzle(g, i8x16(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1))),
    i8x16.swizzle(b, i8x16(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1))));
  v128.store(out + 16, v128.or(v128.or(
    i8x16.swizzle(r, i8x16(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1)),
    i8x16.swizzle(g, i8x16(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10))),
    i8x16.swizzle(b, i8x16(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1))));
  v128.store(out + 32, v128.or(v128.or(
    i8x16.swizzle(r, i8x16(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1)),
    i8x16.swizzle(g, i8x16(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1))),
    i8x16.swizzle(b, i8x16(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15))));
}

// @ts-ignore: decorator
@inline function interleave3EO(r: v128, g: v128, b: v128, out: usize): void {
  // As interleave3, for channels whose bytes hold the even pixels, then the odd ones.
  v128.store(out, v128.or(v128.or(
    i8x16.swizzle(r, i8x16(0, -1, -1, 8, -1, -1, 1, -1, -1, 9, -1, -1, 2, -1, -1, 10)),
    i8x16.swizzle(g, i8x16(-1, 0, -1, -1, 8, -1, -1, 1, -1, -1, 9, -1, -1, 2, -1, -1))),
    i8x16.swizzle(b, i8x16(-1, -1, 0, -1, -1, 8, -1, -1, 1, -1, -1, 9, -1, -1, 2, -1))));
  v128.store(out + 16, v128.or(v128.or(
    i8x16.swizzle(r, i8x16(-1, -1, 3, -1, -1, 11, -1, -1, 4, -1, -1, 12, -1, -1, 5, -1)),
    i8x16.swizzle(g, i8x16(10, -1, -1, 3, -1, -1, 11, -1, -1, 4, -1, -1, 12, -1, -1, 5))),
    i8x16.swizzle(b, i8x16(-1, 10, -1, -1, 3, -1, -1, 11, -1, -1, 4, -1, -1, 12, -1, -1))));
  v128.store(out + 32, v128.or(v128.or(
    i8x16.swizzle(r, i8x16(-1, 13, -1, -1, 6, -1, -1, 14, -1, -1, 7, -1, -1, 15, -1, -1)),
    i8x16.swizzle(g, i8x16(-1, -1, 13, -1, -1, 6, -1, -1, 14, -1, -1, 7, -1, -1, 15, -1))),
    i8x16.swizzle(b, i8x16(5, -1, -1, 13, -1, -1, 6, -1, -1, 14, -1, -1, 7, -1, -1, 15))));
}

/** One row of `n` pixels from Y, Cb, Cr rows into RGB triples at `out`. */
export function yccRow(yp: usize, cbp: usize, crp: usize, out: usize, n: i32): void {
  const k128 = i16x8.splat(128);
  const kcrr = i16x8.splat(K_CR_R);
  const kcbg = i16x8.splat(K_CB_G);
  const kcrg = i16x8.splat(K_CR_G);
  const kcbb = i16x8.splat(K_CB_B);
  for (let x = 0; x < n; x += 16) {
    const y = v128.load(yp + x);
    const cb = v128.load(cbp + x);
    const cr = v128.load(crp + x);
    // low 8 pixels
    let yl = i16x8.extend_low_i8x16_u(y);
    let cbl = i16x8.sub(i16x8.extend_low_i8x16_u(cb), k128);
    let crl = i16x8.sub(i16x8.extend_low_i8x16_u(cr), k128);
    const rl = i16x8.add(i16x8.add(yl, crl), i16x8.q15mulr_sat_s(crl, kcrr));
    const gl = i16x8.sub(i16x8.sub(yl, i16x8.q15mulr_sat_s(cbl, kcbg)), i16x8.q15mulr_sat_s(crl, kcrg));
    const bl = i16x8.add(i16x8.add(yl, cbl), i16x8.q15mulr_sat_s(cbl, kcbb));
    // high 8 pixels
    yl = i16x8.extend_high_i8x16_u(y);
    cbl = i16x8.sub(i16x8.extend_high_i8x16_u(cb), k128);
    crl = i16x8.sub(i16x8.extend_high_i8x16_u(cr), k128);
    const rh = i16x8.add(i16x8.add(yl, crl), i16x8.q15mulr_sat_s(crl, kcrr));
    const gh = i16x8.sub(i16x8.sub(yl, i16x8.q15mulr_sat_s(cbl, kcbg)), i16x8.q15mulr_sat_s(crl, kcrg));
    const bh = i16x8.add(i16x8.add(yl, cbl), i16x8.q15mulr_sat_s(cbl, kcbb));
    interleave3(i8x16.narrow_i16x8_u(rl, rh), i8x16.narrow_i16x8_u(gl, gh), i8x16.narrow_i16x8_u(bl, bh), out + <usize>(x * 3));
  }
}

/**
 * yccRow for 4:2:0 with both chroma rows still as h2v2 column sums (upsample.ts, h2v2Sums at
 * `cbs`, `crs`): the horizontal half of the triangle filter, (3·s + s_left + 8) >> 4 for even
 * pixels and (3·s + s_right + 7) >> 4 for odd ones, is done here, in i16 lanes that go straight
 * into the conversion (−128 folded into the biases: 2048 = 128 << 4), instead of being narrowed
 * to bytes, interleaved, stored, loaded and widened again. Even and odd pixels stay apart (the
 * filter makes them apart, luma splits by a mask and a shift) until interleave3EO's shuffles,
 * which place them anyway. The same samples as h2v2 then yccRow.
 */
export function yccRowH2V2(yp: usize, cbs: usize, crs: usize, out: usize, n: i32): void {
  const kcrr = i16x8.splat(K_CR_R);
  const kcbg = i16x8.splat(K_CB_G);
  const kcrg = i16x8.splat(K_CR_G);
  const kcbb = i16x8.splat(K_CB_B);
  const three = i16x8.splat(3);
  const be = i16x8.splat(8 - 2048);
  const bo = i16x8.splat(7 - 2048);
  const lowByte = i16x8.splat(0xff);
  for (let x = 0; x < n; x += 16) {
    const o = <usize>x; // 16 pixels = 8 sums (2 bytes each) from sum x/2
    // Chroma of the even pixels (e) and of the odd ones (o), as the filter gives them …
    const sc = i16x8.mul(v128.load(cbs + o), three);
    const cbe = i16x8.shr_s(i16x8.add(i16x8.add(sc, v128.load(cbs + o - 2)), be), 4);
    const cbo = i16x8.shr_s(i16x8.add(i16x8.add(sc, v128.load(cbs + o + 2)), bo), 4);
    const sr = i16x8.mul(v128.load(crs + o), three);
    const cre = i16x8.shr_s(i16x8.add(i16x8.add(sr, v128.load(crs + o - 2)), be), 4);
    const cro = i16x8.shr_s(i16x8.add(i16x8.add(sr, v128.load(crs + o + 2)), bo), 4);
    // … and luma split the same way, so that nothing is interleaved before the output's shuffle.
    const y = v128.load(yp + x);
    const ye = v128.and(y, lowByte);
    const yo = i16x8.shr_u(y, 8);
    const re = i16x8.add(i16x8.add(ye, cre), i16x8.q15mulr_sat_s(cre, kcrr));
    const ge = i16x8.sub(i16x8.sub(ye, i16x8.q15mulr_sat_s(cbe, kcbg)), i16x8.q15mulr_sat_s(cre, kcrg));
    const bE = i16x8.add(i16x8.add(ye, cbe), i16x8.q15mulr_sat_s(cbe, kcbb));
    const ro = i16x8.add(i16x8.add(yo, cro), i16x8.q15mulr_sat_s(cro, kcrr));
    const go = i16x8.sub(i16x8.sub(yo, i16x8.q15mulr_sat_s(cbo, kcbg)), i16x8.q15mulr_sat_s(cro, kcrg));
    const bO = i16x8.add(i16x8.add(yo, cbo), i16x8.q15mulr_sat_s(cbo, kcbb));
    interleave3EO(i8x16.narrow_i16x8_u(re, ro), i8x16.narrow_i16x8_u(ge, go), i8x16.narrow_i16x8_u(bE, bO), out + <usize>(x * 3));
  }
}

/** One row of `n` pixels from three planes taken as R, G, B (Adobe transform 0). */
export function rgbRow(rp: usize, gp: usize, bp: usize, out: usize, n: i32): void {
  for (let x = 0; x < n; x += 16) {
    interleave3(v128.load(rp + x), v128.load(gp + x), v128.load(bp + x), out + <usize>(x * 3));
  }
}

/**
 * One row of `n` pixels of Adobe CMYK (stored inverted, as Adobe's encoders write it) into
 * RGB: R = C·K/255 with C, K the stored (inverted) values. `ycck` first turns Y,Cb,Cr back
 * into the stored C, M, Y.
 */
export function cmykRow(c0: usize, c1: usize, c2: usize, kp: usize, out: usize, n: i32, ycck: bool): void {
  if (ycck) yccRow(c0, c1, c2, out, n);
  for (let x = 0; x < n; x++) {
    const k = <u32>load<u8>(kp + x);
    const o = out + <usize>(x * 3);
    let r: u32, g: u32, b: u32;
    if (ycck) {
      // YCC → RGB gives the complement of the stored CMY (Adobe YCCK).
      r = 255 - <u32>load<u8>(o);
      g = 255 - <u32>load<u8>(o + 1);
      b = 255 - <u32>load<u8>(o + 2);
    } else {
      r = load<u8>(c0 + x);
      g = load<u8>(c1 + x);
      b = load<u8>(c2 + x);
    }
    store<u8>(o, <u8>((r * k + 127) / 255));
    store<u8>(o + 1, <u8>((g * k + 127) / 255));
    store<u8>(o + 2, <u8>((b * k + 127) / 255));
  }
}

/**
 * One row of `n` RGB triples into grey: libjpeg's rgb_gray_convert, Y = 0.299 R + 0.587 G +
 * 0.114 B in 16-bit fixed point, rounded (the three weights sum to exactly 2^16).
 */
export function greyRow(rgb: usize, out: usize, n: i32): void {
  for (let x = 0; x < n; x++) {
    const p = rgb + <usize>(x * 3);
    const y = 19595 * <u32>load<u8>(p) + 38470 * <u32>load<u8>(p + 1) + 7471 * <u32>load<u8>(p + 2) + 32768;
    store<u8>(out + x, <u8>(y >> 16));
  }
}
