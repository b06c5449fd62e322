// Dequantization and inverse DCT of one block (T.81 A.3.3), level shift (+128, A.3.1) and
// clamping to 0…255; plus the reduced transforms of scaled decoding.
//
//   s(y,x) = 1/4 Σu Σv C(u) C(v) S(v,u) cos((2x+1)uπ/16) cos((2y+1)vπ/16),  C(0) = 1/√2
//
// Block layout. Coefficients are i16 in natural order: entry v·8 + u holds S(v,u) (u the
// horizontal frequency), so vector v of the block (8 × i16 = one v128) is row v, lanes u. The
// zig-zag table maps straight into it (scan.ts).
//
// The full-size transform is the accurate integer one of the IJG's libjpeg (its "islow"
// method, djpeg's default, after Loeffler, Ligtenberg and Moschytz, "Practical fast 1-D DCT
// algorithms with 11 multiplications", ICASSP 1989): 13-bit fixed-point constants, two extra
// fraction bits kept between the passes, each pass descaled with rounding, columns (vertical)
// first. The same integer arithmetic in the same order gives djpeg's samples exactly, not just
// close ones (test/decode/idct.test.ts checks it against a scalar version). One 1-D pass, for
// inputs X0…X7 (the transform scaled by √2 against T.81, the 1/8 removed at the end):
//
//   even:  t0 = (X0 + X4)·2^13          t1 = (X0 − X4)·2^13
//          t2 = X2·a + X6·(a − b)       t3 = X2·(a + c) + X6·a      a = √2·c6, b = √2(c2 + c6), c = √2(c2 − c6)
//          e0 = t0 + t3  e3 = t0 − t3   e1 = t1 + t2  e2 = t1 − t2
//   odd:   o0…o3, each X1·k1 + X3·k3 + X5·k5 + X7·k7 (≈ √2 cos((2n+1)kπ/16) · 2^13; the O
//          constants below, collected from the LLM flow's products)
//   out:   f0 = e0 + o3, f7 = e0 − o3, f1 = e1 + o2, f6 = e1 − o2,
//          f2 = e2 + o1, f5 = e2 − o1, f3 = e3 + o0, f4 = e3 − o0               (ck = cos(kπ/16))
//
// Each product pair is one i32x4.dot_i16x8_s on inputs interleaved two by two (8 lanes of i16 in,
// 4 lanes of i32 out), so a pass handles 8 columns at once. Pass 1 narrows to i16 with
// saturation, as libjpeg-turbo's SIMD kernels do (coefficients an 8-bit encoder makes stay far
// inside; corrupt ones give wrong but bounded samples), pass 2 has the level shift in its
// rounding bias, and the saturating narrows to u8 clamp. Shuffles cost more than arithmetic in
// JavaScriptCore (bun), so the transpose between the passes is folded into the pairing of
// pass 2's inputs (pass2), 16 shuffles where a transpose and the pairing took 40.

// FIX(x) = round(x · 2^13), the libjpeg convention (its jidctint.c documents the derivation).
const FIX_0_298631336 = 2446; // √2 (−c1 + c3 + c5 − c7)
const FIX_0_390180644 = 3196; // √2 (c3 − c5)
const FIX_0_541196100 = 4433; // √2 c6
const FIX_0_765366865 = 6270; // √2 (c2 − c6)
const FIX_0_899976223 = 7373; // √2 (c3 − c7)
const FIX_1_175875602 = 9633; // √2 c3
const FIX_1_501321110 = 12299; // √2 (c1 + c3 − c5 − c7)
const FIX_1_847759065 = 15137; // √2 (c2 + c6)
const FIX_1_961570560 = 16069; // √2 (c3 + c5)
const FIX_2_053119869 = 16819; // √2 (c1 + c3 − c5 + c7)
const FIX_2_562915447 = 20995; // √2 (c1 + c3)
const FIX_3_072711026 = 25172; // √2 (c1 + c3 + c5 − c7)

// The LLM odd part: z1 = X7+X1, z2 = X5+X3, z3 = X7+X3, z4 = X5+X1, z5 = (z3+z4)·F1.175,
//   o0 = X7·F0.298 − z1·F0.899 − z3·F1.961 + z5      o1 = X5·F2.053 − z2·F2.562 − z4·F0.390 + z5
//   o2 = X3·F3.072 − z2·F2.562 − z3·F1.961 + z5      o3 = X1·F1.501 − z1·F0.899 − z4·F0.390 + z5
// Collected per input (integers, so exactly the same sums): o(n) = X1·k1 + X3·k3 + X5·k5 + X7·k7.
const O0_1 = FIX_1_175875602 - FIX_0_899976223;
const O0_3 = FIX_1_175875602 - FIX_1_961570560;
const O0_5 = FIX_1_175875602;
const O0_7 = FIX_0_298631336 - FIX_0_899976223 - FIX_1_961570560 + FIX_1_175875602;
const O1_1 = FIX_1_175875602 - FIX_0_390180644;
const O1_3 = FIX_1_175875602 - FIX_2_562915447;
const O1_5 = FIX_2_053119869 - FIX_2_562915447 - FIX_0_390180644 + FIX_1_175875602;
const O1_7 = FIX_1_175875602;
const O2_1 = FIX_1_175875602;
const O2_3 = FIX_3_072711026 - FIX_2_562915447 - FIX_1_961570560 + FIX_1_175875602;
const O2_5 = FIX_1_175875602 - FIX_2_562915447;
const O2_7 = FIX_1_175875602 - FIX_1_961570560;
const O3_1 = FIX_1_501321110 - FIX_0_899976223 - FIX_0_390180644 + FIX_1_175875602;
const O3_3 = FIX_1_175875602;
const O3_5 = FIX_1_175875602 - FIX_0_390180644;
const O3_7 = FIX_1_175875602 - FIX_0_899976223;
// Even part.
const E_A = FIX_0_541196100;
const E_AB = FIX_0_541196100 - FIX_1_847759065;
const E_AC = FIX_0_541196100 + FIX_0_765366865;

const PASS1_SHIFT = 11; // 13 − 2: two fraction bits stay for pass 2
const PASS2_SHIFT = 18; // 13 + 2 + 3: the 1/8 of the 2-D transform's scaling too

/** A dot_i16x8_s operand: the pair (p, q) in every i32 lane. */
// @ts-ignore: decorator
@inline function pair(p: i32, q: i32): v128 {
  return i32x4.splat((q << 16) | (p & 0xffff));
}

/** i16 lanes 0…3 of a and b interleaved: a0 b0 a1 b1 a2 b2 a3 b3. */
// @ts-ignore: decorator
@inline function ilvLo(a: v128, b: v128): v128 {
  return i8x16.shuffle(a, b, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
}
/** i16 lanes 4…7 of a and b interleaved. */
// @ts-ignore: decorator
@inline function ilvHi(a: v128, b: v128): v128 {
  return i8x16.shuffle(a, b, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
}

// The dot operands live in memory, filled once at instantiation: a v128.const costs several
// instructions in JavaScriptCore (bun), a load one (measured: the full IDCT ~15 % faster in bun,
// ~4 % slower in V8, whose constants were cheap).
const KT: usize = memory.data(16 * 16, 16);
// Their slots: the even part's t0…t3 from (X0,X4), (X2,X6); o(n) from (X1,X3) (A) and (X5,X7)
// (B); and, for blocks whose X4…X7 are zero, e0…e3 straight from (X0,X2).
const K_T0 = 0, K_T1 = 1, K_T2 = 2, K_T3 = 3;
const K_O0A = 4, K_O0B = 5, K_O1A = 6, K_O1B = 7, K_O2A = 8, K_O2B = 9, K_O3A = 10, K_O3B = 11;
const K_E0L = 12, K_E3L = 13, K_E1L = 14, K_E2L = 15;
// @ts-ignore: decorator
@inline function k(i: i32): v128 {
  return v128.load(KT + (<usize>i << 4));
}
function initK(): void {
  v128.store(KT + (<usize>K_T0 << 4), pair(8192, 8192));
  v128.store(KT + (<usize>K_T1 << 4), pair(8192, -8192));
  v128.store(KT + (<usize>K_T2 << 4), pair(E_A, E_AB));
  v128.store(KT + (<usize>K_T3 << 4), pair(E_AC, E_A));
  v128.store(KT + (<usize>K_O0A << 4), pair(O0_1, O0_3));
  v128.store(KT + (<usize>K_O0B << 4), pair(O0_5, O0_7));
  v128.store(KT + (<usize>K_O1A << 4), pair(O1_1, O1_3));
  v128.store(KT + (<usize>K_O1B << 4), pair(O1_5, O1_7));
  v128.store(KT + (<usize>K_O2A << 4), pair(O2_1, O2_3));
  v128.store(KT + (<usize>K_O2B << 4), pair(O2_5, O2_7));
  v128.store(KT + (<usize>K_O3A << 4), pair(O3_1, O3_3));
  v128.store(KT + (<usize>K_O3B << 4), pair(O3_5, O3_7));
  v128.store(KT + (<usize>K_E0L << 4), pair(8192, E_AC));
  v128.store(KT + (<usize>K_E3L << 4), pair(8192, -E_AC));
  v128.store(KT + (<usize>K_E1L << 4), pair(8192, E_A));
  v128.store(KT + (<usize>K_E2L << 4), pair(8192, -E_A));
}
initK();

// Scratch: W holds one pass's i32 results (8 outputs × lo, hi), T the dequantized block.
const W: usize = memory.data(16 * 16, 16);
const T: usize = memory.data(8 * 16, 16);

/**
 * Four lanes of one 1-D pass, from inputs interleaved in pairs (X0,X4) (X2,X6) (X1,X3) (X5,X7):
 * f(n) + bias, shifted right by `shift`, as i32x4 into W + n·32 (+ 16 for the high lanes).
 */
// @ts-ignore: decorator
@inline function half(p04: v128, p26: v128, p13: v128, p57: v128, bias: v128, shift: i32, w: usize): void {
  const t0 = i32x4.add(i32x4.dot_i16x8_s(p04, k(K_T0)), bias);
  const t1 = i32x4.add(i32x4.dot_i16x8_s(p04, k(K_T1)), bias);
  const t2 = i32x4.dot_i16x8_s(p26, k(K_T2));
  const t3 = i32x4.dot_i16x8_s(p26, k(K_T3));
  const e0 = i32x4.add(t0, t3);
  const e3 = i32x4.sub(t0, t3);
  const e1 = i32x4.add(t1, t2);
  const e2 = i32x4.sub(t1, t2);
  const o0 = i32x4.add(i32x4.dot_i16x8_s(p13, k(K_O0A)), i32x4.dot_i16x8_s(p57, k(K_O0B)));
  const o1 = i32x4.add(i32x4.dot_i16x8_s(p13, k(K_O1A)), i32x4.dot_i16x8_s(p57, k(K_O1B)));
  const o2 = i32x4.add(i32x4.dot_i16x8_s(p13, k(K_O2A)), i32x4.dot_i16x8_s(p57, k(K_O2B)));
  const o3 = i32x4.add(i32x4.dot_i16x8_s(p13, k(K_O3A)), i32x4.dot_i16x8_s(p57, k(K_O3B)));
  butterfly(e0, e1, e2, e3, o0, o1, o2, o3, shift, w);
}

/** The last butterfly of a half pass: f(n) = e(n) + o(3−n), f(7−n) = e(n) − o(3−n), descaled into W's rows. */
// @ts-ignore: decorator
@inline function butterfly(e0: v128, e1: v128, e2: v128, e3: v128, o0: v128, o1: v128, o2: v128, o3: v128, shift: i32, w: usize): void {
  v128.store(w, i32x4.shr_s(i32x4.add(e0, o3), shift));
  v128.store(w + 224, i32x4.shr_s(i32x4.sub(e0, o3), shift));
  v128.store(w + 32, i32x4.shr_s(i32x4.add(e1, o2), shift));
  v128.store(w + 192, i32x4.shr_s(i32x4.sub(e1, o2), shift));
  v128.store(w + 64, i32x4.shr_s(i32x4.add(e2, o1), shift));
  v128.store(w + 160, i32x4.shr_s(i32x4.sub(e2, o1), shift));
  v128.store(w + 96, i32x4.shr_s(i32x4.add(e3, o0), shift));
  v128.store(w + 128, i32x4.shr_s(i32x4.sub(e3, o0), shift));
}

/** `half` for inputs whose X4…X7 are zero (low-frequency blocks), from pairs (X0,X2) (X1,X3). */
// @ts-ignore: decorator
@inline function halfLow(p02: v128, p13: v128, bias: v128, shift: i32, w: usize): void {
  const e0 = i32x4.add(i32x4.dot_i16x8_s(p02, k(K_E0L)), bias);
  const e3 = i32x4.add(i32x4.dot_i16x8_s(p02, k(K_E3L)), bias);
  const e1 = i32x4.add(i32x4.dot_i16x8_s(p02, k(K_E1L)), bias);
  const e2 = i32x4.add(i32x4.dot_i16x8_s(p02, k(K_E2L)), bias);
  const o0 = i32x4.dot_i16x8_s(p13, k(K_O0A));
  const o1 = i32x4.dot_i16x8_s(p13, k(K_O1A));
  const o2 = i32x4.dot_i16x8_s(p13, k(K_O2A));
  const o3 = i32x4.dot_i16x8_s(p13, k(K_O3A));
  butterfly(e0, e1, e2, e3, o0, o1, o2, o3, shift, w);
}

/** One full 1-D pass over the 8 i16 vectors at `src` (X_k at src + 16k), results in W. */
// @ts-ignore: decorator
@inline function pass(src: usize, bias: v128, shift: i32): void {
  const x0 = v128.load(src);
  const x1 = v128.load(src + 16);
  const x2 = v128.load(src + 32);
  const x3 = v128.load(src + 48);
  const x4 = v128.load(src + 64);
  const x5 = v128.load(src + 80);
  const x6 = v128.load(src + 96);
  const x7 = v128.load(src + 112);
  half(ilvLo(x0, x4), ilvLo(x2, x6), ilvLo(x1, x3), ilvLo(x5, x7), bias, shift, W);
  half(ilvHi(x0, x4), ilvHi(x2, x6), ilvHi(x1, x3), ilvHi(x5, x7), bias, shift, W + 16);
}

/**
 * Pass 2 over pass 1's results in W (vectors y, i32 lanes u), results in W again (vectors x,
 * lanes y). Its inputs X_u (lanes y), interleaved in pairs, come from W's rows in two shuffle
 * levels (rows 2j, 2j + 1 → their (X0,X4), (X2,X6) pairs in A_j, (X1,X3), (X5,X7) in B_j; then
 * the halves of A_j, B_j side by side), which is the transpose and the interleave at once.
 */
// @ts-ignore: decorator
@inline function pass2(): void {
  const k = bias2();
  const r0 = i16x8.narrow_i32x4_s(v128.load(W), v128.load(W + 16));
  const r1 = i16x8.narrow_i32x4_s(v128.load(W + 32), v128.load(W + 48));
  const r2 = i16x8.narrow_i32x4_s(v128.load(W + 64), v128.load(W + 80));
  const r3 = i16x8.narrow_i32x4_s(v128.load(W + 96), v128.load(W + 112));
  const r4 = i16x8.narrow_i32x4_s(v128.load(W + 128), v128.load(W + 144));
  const r5 = i16x8.narrow_i32x4_s(v128.load(W + 160), v128.load(W + 176));
  const r6 = i16x8.narrow_i32x4_s(v128.load(W + 192), v128.load(W + 208));
  const r7 = i16x8.narrow_i32x4_s(v128.load(W + 224), v128.load(W + 240));
  const a0 = i8x16.shuffle(r0, r1, 0, 1, 8, 9, 16, 17, 24, 25, 4, 5, 12, 13, 20, 21, 28, 29);
  const a1 = i8x16.shuffle(r2, r3, 0, 1, 8, 9, 16, 17, 24, 25, 4, 5, 12, 13, 20, 21, 28, 29);
  const a2 = i8x16.shuffle(r4, r5, 0, 1, 8, 9, 16, 17, 24, 25, 4, 5, 12, 13, 20, 21, 28, 29);
  const a3 = i8x16.shuffle(r6, r7, 0, 1, 8, 9, 16, 17, 24, 25, 4, 5, 12, 13, 20, 21, 28, 29);
  const b0 = i8x16.shuffle(r0, r1, 2, 3, 6, 7, 18, 19, 22, 23, 10, 11, 14, 15, 26, 27, 30, 31);
  const b1 = i8x16.shuffle(r2, r3, 2, 3, 6, 7, 18, 19, 22, 23, 10, 11, 14, 15, 26, 27, 30, 31);
  const b2 = i8x16.shuffle(r4, r5, 2, 3, 6, 7, 18, 19, 22, 23, 10, 11, 14, 15, 26, 27, 30, 31);
  const b3 = i8x16.shuffle(r6, r7, 2, 3, 6, 7, 18, 19, 22, 23, 10, 11, 14, 15, 26, 27, 30, 31);
  half(i64x2.shuffle(a0, a1, 0, 2), i64x2.shuffle(a0, a1, 1, 3), i64x2.shuffle(b0, b1, 0, 2), i64x2.shuffle(b0, b1, 1, 3), k, PASS2_SHIFT, W);
  half(i64x2.shuffle(a2, a3, 0, 2), i64x2.shuffle(a2, a3, 1, 3), i64x2.shuffle(b2, b3, 0, 2), i64x2.shuffle(b2, b3, 1, 3), k, PASS2_SHIFT, W + 16);
}

/**
 * The samples of pass 2 (W: vectors x, i32 lanes y, level shift included) clamped to bytes and
 * transposed into 8 rows of 8 at `dst`.
 */
// @ts-ignore: decorator
@inline function storeRows(dst: usize, stride: i32): void {
  // P(2j) = bytes of x = 2j (lanes y 0–7) then x = 2j + 1.
  const p01 = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(v128.load(W), v128.load(W + 16)), i16x8.narrow_i32x4_s(v128.load(W + 32), v128.load(W + 48)));
  const p23 = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(v128.load(W + 64), v128.load(W + 80)), i16x8.narrow_i32x4_s(v128.load(W + 96), v128.load(W + 112)));
  const p45 = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(v128.load(W + 128), v128.load(W + 144)), i16x8.narrow_i32x4_s(v128.load(W + 160), v128.load(W + 176)));
  const p67 = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(v128.load(W + 192), v128.load(W + 208)), i16x8.narrow_i32x4_s(v128.load(W + 224), v128.load(W + 240)));
  // Byte pairs (x = 2j, 2j + 1) per y, then the pairs of x 0–3 per y (s0: y 0–3, s1: y 4–7) …
  const q01 = i8x16.shuffle(p01, p01, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  const q23 = i8x16.shuffle(p23, p23, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  const q45 = i8x16.shuffle(p45, p45, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  const q67 = i8x16.shuffle(p67, p67, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  const s0 = ilvLo(q01, q23);
  const s1 = ilvHi(q01, q23);
  const t0 = ilvLo(q45, q67);
  const t1 = ilvHi(q45, q67);
  // … and x 4–7 beside them: rows y, y + 1 in one vector.
  const r01 = i32x4.shuffle(s0, t0, 0, 4, 1, 5);
  const r23 = i32x4.shuffle(s0, t0, 2, 6, 3, 7);
  const r45 = i32x4.shuffle(s1, t1, 0, 4, 1, 5);
  const r67 = i32x4.shuffle(s1, t1, 2, 6, 3, 7);
  const st = <usize>stride;
  v128.store_lane<i64>(dst, r01, 0);
  v128.store_lane<i64>(dst + st, r01, 1);
  v128.store_lane<i64>(dst + 2 * st, r23, 0);
  v128.store_lane<i64>(dst + 3 * st, r23, 1);
  v128.store_lane<i64>(dst + 4 * st, r45, 0);
  v128.store_lane<i64>(dst + 5 * st, r45, 1);
  v128.store_lane<i64>(dst + 6 * st, r67, 0);
  v128.store_lane<i64>(dst + 7 * st, r67, 1);
}

// Rounding biases: half of each pass's last unit; pass 2's carries the level shift (+128).
// @ts-ignore: decorator
@inline function bias1(): v128 {
  return i32x4.splat(1 << (PASS1_SHIFT - 1));
}
// @ts-ignore: decorator
@inline function bias2(): v128 {
  return i32x4.splat((1 << (PASS2_SHIFT - 1)) + (128 << PASS2_SHIFT));
}

/** Full 8×8 IDCT of block `blk` (natural order) with table `qi` (natural u16) into 8 rows of 8 bytes at `dst`. */
export function idct8(blk: usize, qi: usize, dst: usize, stride: i32): void {
  // Dequantize (16-bit products, as libjpeg-turbo's SIMD kernels: valid data fits).
  for (let v = 0; v < 8; v++) {
    const o = <usize>v << 4;
    v128.store(T + o, i16x8.mul(v128.load(blk + o), v128.load(qi + o)));
  }
  pass(T, bias1(), PASS1_SHIFT); // columns: vectors y, lanes u
  pass2(); //                       rows: vectors x, lanes y
  storeRows(dst, stride);
}

/**
 * idct8 for blocks whose non-zero coefficients all have u ≤ 3 and v ≤ 3 (zig-zag index ≤ 9,
 * the common case after quantization): pass 1 on 4 inputs and 4 lanes, pass 2 on 4 inputs.
 * The same sums as idct8 with the zero terms left out, so the same samples.
 */
export function idct8Low(blk: usize, qi: usize, dst: usize, stride: i32): void {
  const x0 = i16x8.mul(v128.load(blk), v128.load(qi));
  const x1 = i16x8.mul(v128.load(blk + 16), v128.load(qi + 16));
  const x2 = i16x8.mul(v128.load(blk + 32), v128.load(qi + 32));
  const x3 = i16x8.mul(v128.load(blk + 48), v128.load(qi + 48));
  halfLow(ilvLo(x0, x2), ilvLo(x1, x3), bias1(), PASS1_SHIFT, W); // vectors y, lanes u 0–3
  // Pass 2's inputs X0…X3 (lanes y) as pairs (X0,X2), (X1,X3): rows y, y + 1 narrowed into one
  // vector, their pairs gathered, then the halves side by side (as in pass2).
  const n01 = i16x8.narrow_i32x4_s(v128.load(W), v128.load(W + 32)); //   y0: u0–3, y1: u0–3
  const n23 = i16x8.narrow_i32x4_s(v128.load(W + 64), v128.load(W + 96));
  const n45 = i16x8.narrow_i32x4_s(v128.load(W + 128), v128.load(W + 160));
  const n67 = i16x8.narrow_i32x4_s(v128.load(W + 192), v128.load(W + 224));
  const a01 = i8x16.shuffle(n01, n01, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15); // (X0,X2) y0 y1, (X1,X3) y0 y1
  const a23 = i8x16.shuffle(n23, n23, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  const a45 = i8x16.shuffle(n45, n45, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  const a67 = i8x16.shuffle(n67, n67, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  const k2 = bias2();
  halfLow(i64x2.shuffle(a01, a23, 0, 2), i64x2.shuffle(a01, a23, 1, 3), k2, PASS2_SHIFT, W);
  halfLow(i64x2.shuffle(a45, a67, 0, 2), i64x2.shuffle(a45, a67, 1, 3), k2, PASS2_SHIFT, W + 16);
  storeRows(dst, stride);
}

// ---- DC-only blocks and the reduced (scaled) transforms, in f32 ----

/** QF for quantization table `q` (64 × u16, natural order) into `out` (64 × f32, natural order): Q(v,u)/4. */
export function buildQF(q: usize, out: usize): void {
  for (let i = 0; i < 64; i++) store<f32>(out + (<usize>i << 2), <f32>load<u16>(q + (<usize>i << 1)) * 0.25);
}

/** Row v of a block, dequantized: lanes u = 0…3 (`hi` false) or 4…7. */
// @ts-ignore: decorator
@inline function row(blk: usize, qf: usize, v: i32, hi: bool): v128 {
  const s = v128.load(blk + (<usize>v << 4));
  const w = hi ? i32x4.extend_high_i16x8_s(s) : i32x4.extend_low_i16x8_s(s);
  return f32x4.mul(f32x4.convert_i32x4_s(w), v128.load(qf + (<usize>v << 5) + (hi ? 16 : 0)));
}

// 2^23: added to an integral f32 in 0…255, it leaves the integer in the low mantissa bits.
const MAGIC: f32 = 8388608;

/**
 * Samples 0…255 of four results: clamp(trunc(x), 0, 255), as i32 lanes. In f32 first (clamp,
 * then floor, which is trunc on x ≥ 0), then the integer read from the mantissa after adding
 * 2^23: a few single instructions, where i32x4.trunc_sat_f32x4_s is a sequence (it handles NaN
 * and overflow, which cannot occur here). The same integers as trunc_sat and saturation.
 */
// @ts-ignore: decorator
@inline function toSample(x: v128): v128 {
  const c = f32x4.floor(f32x4.pmax(f32x4.pmin(x, f32x4.splat(255)), f32x4.splat(0)));
  return i32x4.sub(f32x4.add(c, f32x4.splat(MAGIC)), i32x4.splat(0x4b000000));
}

/**
 * The sample every position of a block takes when only its DC is non-zero: floor((DC·Q + 4)/8)
 * + 128, clamped, which is also what idct8's integer passes give such a block (pass 1 makes
 * 4·DC·Q exactly, pass 2 descales it by 2^5 with rounding), in a few f32 operations.
 */
// @ts-ignore: decorator
@inline export function dcSample(blk: usize, qf: usize): i32 {
  const v = (<f32>load<i16>(blk) * load<f32>(qf) + 257) * 0.5;
  const i = <i32>v;
  return i < 0 ? 0 : i > 255 ? 255 : i;
}

/** Fills an n×n block with the DC sample (all AC zero: the whole IDCT reduces to this). */
export function idctDC(blk: usize, qf: usize, dst: usize, stride: i32, n: i32): void {
  const s = dcSample(blk, qf);
  if (n == 8) {
    const v = i8x16.splat(<i8>s);
    for (let y = 0; y < 8; y++) v128.store_lane<i64>(dst + <usize>(y * stride), v, 0);
  } else {
    for (let y = 0; y < n; y++) memory.fill(dst + <usize>(y * stride), <u8>s, n);
  }
}

// Reduced transforms for scaled output (1/2, 1/4 of the size). Output sample m of N is the
// mean of the r = 8/N full-resolution samples it covers, computed straight from the
// coefficients: averaging the basis functions of A.3.3 over those samples gives
//   f_N(m) = Σ_{k<8} C(k) X_k · (1/r) Σ_{j<r} cos((2(r·m + j) + 1)kπ/16)
// (a box filter, exact up to rounding; some k drop out, e.g. k = 4 when N = 4). It is what
// libjpeg-turbo's reduced IDCTs approximate, so djpeg -scale agrees with it closely.
// MR[N][k][m] (k < 8, m < 4, lanes m ≥ N zero) holds those weights, 8 × v128 per N.
const M4: usize = memory.data(8 * 16, 16);
const M2: usize = memory.data(8 * 16, 16);
let reducedReady = false;

function buildReduced(): void {
  for (let t = 0; t < 2; t++) {
    const n = t == 0 ? 4 : 2;
    const r = 8 / n;
    const table = t == 0 ? M4 : M2;
    for (let k = 0; k < 8; k++) {
      for (let m = 0; m < 4; m++) {
        let w: f64 = 0;
        if (m < n) {
          for (let j = 0; j < r; j++) w += Math.cos(((2 * (r * m + j) + 1) * k * Math.PI) / 16);
          w = (w / r) * (k == 0 ? Math.SQRT1_2 : 1.0);
        }
        store<f32>(table + ((<usize>(k * 4 + m)) << 2), <f32>w);
      }
    }
  }
  reducedReady = true;
}

/**
 * Whether an n×n reduced transform (n = 4 or 2) reads frequency k (of u or v) at all: the box
 * filter cancels some exactly (k = 4 when n = 4; k = 2, 4, 6 when n = 2), their weights in MR
 * being rounding noise (~1e-17). A progressive decode at that scale need not keep them (scan.ts,
 * planStorage): against the other terms, of order 1, such a product is far below an f32 ulp.
 */
export function reducedUses(n: i32, k: i32): bool {
  if (!reducedReady) buildReduced();
  const m = n == 4 ? M4 : M2;
  for (let i = 0; i < n; i++) if (Mathf.abs(load<f32>(m + ((<usize>(k * 4 + i)) << 2))) > 1e-6) return true;
  return false;
}

// Between the two stages of idctReduced: the dequantized rows v (lanes u 0–3, then 4–7) in RD,
// then S[y] (lanes u, same split) in RS.
const RD: usize = memory.data(16 * 16, 16);
const RS: usize = memory.data(8 * 32, 16);

/** N×N output (N = 4 or 2): box-filtered IDCT of the whole block (see above). */
export function idctReduced(blk: usize, qf: usize, dst: usize, stride: i32, n: i32): void {
  if (!reducedReady) buildReduced();
  const m = n == 4 ? M4 : M2;
  for (let v = 0; v < 8; v++) {
    v128.store(RD + (<usize>v << 5), row(blk, qf, v, false));
    v128.store(RD + (<usize>v << 5) + 16, row(blk, qf, v, true));
  }
  // Level shift and rounding: +257 on the dequantized DC is +128.5 on every sample (DC reaches
  // the output as S(0,0)·C(0)², QF holding Q/4), and truncation of a value ≥ 0 is floor.
  v128.store(RD, f32x4.add(v128.load(RD), f32x4(257, 0, 0, 0)));
  // Down the columns first: S[y][u] = Σv M[v][y] D(v,u), vectors over u (the rows as stored) …
  for (let y = 0; y < n; y++) {
    let lo = f32x4.splat(0);
    let hi = f32x4.splat(0);
    for (let v = 0; v < 8; v++) {
      const w = v128.load32_splat(m + ((<usize>(v * 4 + y)) << 2));
      lo = f32x4.add(lo, f32x4.mul(v128.load(RD + (<usize>v << 5)), w));
      hi = f32x4.add(hi, f32x4.mul(v128.load(RD + (<usize>v << 5) + 16), w));
    }
    v128.store(RS + (<usize>y << 5), lo);
    v128.store(RS + (<usize>y << 5) + 16, hi);
  }
  // … then across: out[y] (lanes x) = Σu S[y][u] M[u], M's rows being vectors over x already,
  // so no transpose is needed anywhere.
  for (let y = 0; y < n; y++) {
    let acc = f32x4.splat(0);
    for (let u = 0; u < 8; u++) {
      acc = f32x4.add(acc, f32x4.mul(v128.load32_splat(RS + (<usize>y << 5) + (<usize>u << 2)), v128.load(m + (<usize>u << 4))));
    }
    const i = toSample(acc);
    const b = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(i, i), i16x8.narrow_i32x4_s(i, i));
    if (n == 4) v128.store_lane<i32>(dst + <usize>(y * stride), b, 0);
    else v128.store_lane<i16>(dst + <usize>(y * stride), b, 0);
  }
}

/** Zig-zag positions 0…LOW_LAST all have u ≤ 3 and v ≤ 3 (Figure A.6): idct8Low suffices. */
export const LOW_LAST = 9;

/**
 * An n×n IDCT of any supported size (8, 4, 2, 1). `last` is the zig-zag index of the last
 * non-zero coefficient (0: DC only; 63 when unknown).
 */
export function idctBlock(blk: usize, qf: usize, qi: usize, dst: usize, stride: i32, n: i32, last: i32): void {
  if (last == 0 || n == 1) idctDC(blk, qf, dst, stride, n);
  else if (n != 8) idctReduced(blk, qf, dst, stride, n);
  else if (last <= LOW_LAST) idct8Low(blk, qi, dst, stride);
  else idct8(blk, qi, dst, stride);
}

const QFT: usize = memory.data(64 * 4, 16);

/**
 * Test entry: IDCT of `blk` (64 i16, natural order) with quantization table `q` (64 u16,
 * natural order) into an n×n block at `dst`. `last` picks the path as the decoder does
 * (0: DC only, ≤ LOW_LAST: low frequencies only, 63: any).
 */
export function idctTest(blk: usize, q: usize, dst: usize, stride: i32, n: i32, last: i32): void {
  buildQF(q, QFT);
  idctBlock(blk, QFT, q, dst, stride, n, last);
}
