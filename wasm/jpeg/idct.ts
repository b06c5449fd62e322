// Dequantization and inverse DCT of one block (T.81 A.3.3), level shift (+128, A.3.1) and
// clamping to 0…255, in f32 with v128 vectors; plus the reduced transforms of scaled decoding.
//
//   s(y,x) = 1/4 Σu Σv C(u) C(v) S(v,u) cos((2x+1)uπ/16) cos((2y+1)vπ/16),  C(0) = 1/√2
//
// Block layout. Coefficients are i16 in *transposed* natural order: entry u·8 + v holds S(v,u)
// (u the horizontal frequency). The zig-zag table maps straight into it (scan.ts), so the
// first pass can run down columns with no shuffle:
//
//   row u of the block (8 × i16 = one v128):  S(0,u) S(1,u) … S(7,u)
//   QF (64 × f32, same layout):               Q(v,u) / 4, the 1/4 of A.3.3 folded in
//
// The 8-point transform is split into even and odd halves (derived from the definition):
//   even:  a0 = c4(X0+X4)  a1 = c4(X0−X4)  p = c2·X2 + c6·X6  q = c6·X2 − c2·X6
//          e0 = a0+p  e1 = a1+q  e2 = a1−q  e3 = a0−p
//   odd:   o(n) = Σ_{k odd} X_k cos((2n+1)kπ/16), a 4×4 product
//   out:   f(n) = e(n) + o(n),  f(7−n) = e(n) − o(n)                  (ck = cos(kπ/16))
// Pass 1 runs along u on vectors whose lanes are v, an 8×8 transpose follows, and pass 2 runs
// along v with lanes x, so the output rows come out in memory order.
//
// Rounding and level shift cost nothing: +257 on the dequantized DC becomes +128.5 on every
// sample (DC reaches the output as S(0,0)·C(0)²), and truncation of a value ≥ 0 is floor; the
// saturating narrows clamp to 0…255.

const C1: f32 = 0.98078528040323044913; // cos(π/16)
const C2: f32 = 0.92387953251128675613;
const C3: f32 = 0.83146961230254523708;
const C4: f32 = 0.70710678118654752440;
const C5: f32 = 0.55557023301960222474;
const C6: f32 = 0.38268343236508977173;
const C7: f32 = 0.19509032201612826785;

/** QF for quantization table `q` (64 × u16, natural order) into `out` (64 × f32). */
export function buildQF(q: usize, out: usize): void {
  for (let v = 0; v < 8; v++) {
    for (let u = 0; u < 8; u++) {
      store<f32>(out + ((<usize>(u * 8 + v)) << 2), <f32>load<u16>(q + ((<usize>(v * 8 + u)) << 1)) * 0.25);
    }
  }
}

// @ts-ignore: decorator
@inline function mul(a: v128, b: v128): v128 {
  return f32x4.mul(a, b);
}
// @ts-ignore: decorator
@inline function add(a: v128, b: v128): v128 {
  return f32x4.add(a, b);
}
// @ts-ignore: decorator
@inline function sub(a: v128, b: v128): v128 {
  return f32x4.sub(a, b);
}

/** Row u of the block, dequantized: lanes v = 0…3 (`hi` false) or 4…7. */
// @ts-ignore: decorator
@inline function row(blk: usize, qf: usize, u: i32, hi: bool): v128 {
  const s = v128.load(blk + (<usize>u << 4));
  const w = hi ? i32x4.extend_high_i16x8_s(s) : i32x4.extend_low_i16x8_s(s);
  return mul(f32x4.convert_i32x4_s(w), v128.load(qf + (<usize>u << 5) + (hi ? 16 : 0)));
}

/** The last step of both passes: f(n) = e(n) + o(n), f(7−n) = e(n) − o(n), into vectors p + n·32. */
// @ts-ignore: decorator
@inline function butterfly(p: usize, e0: v128, e1: v128, e2: v128, e3: v128, o0: v128, o1: v128, o2: v128, o3: v128): void {
  v128.store(p, add(e0, o0));
  v128.store(p + 224, sub(e0, o0));
  v128.store(p + 32, add(e1, o1));
  v128.store(p + 192, sub(e1, o1));
  v128.store(p + 64, add(e2, o2));
  v128.store(p + 160, sub(e2, o2));
  v128.store(p + 96, add(e3, o3));
  v128.store(p + 128, sub(e3, o3));
}

// Scratch between the passes: 16 vectors.
const T: usize = memory.data(16 * 16, 16);

/**
 * One 1-D pass over 8 vectors at `p` (spaced 32 bytes: lo and hi interleaved), in place.
 * Vectors k = 0…7 are X_k; results f(0…7) replace them.
 */
// @ts-ignore: decorator
@inline function pass(p: usize): void {
  const x0 = v128.load(p);
  const x1 = v128.load(p + 32);
  const x2 = v128.load(p + 64);
  const x3 = v128.load(p + 96);
  const x4 = v128.load(p + 128);
  const x5 = v128.load(p + 160);
  const x6 = v128.load(p + 192);
  const x7 = v128.load(p + 224);
  const c1 = f32x4.splat(C1), c2 = f32x4.splat(C2), c3 = f32x4.splat(C3), c4 = f32x4.splat(C4);
  const c5 = f32x4.splat(C5), c6 = f32x4.splat(C6), c7 = f32x4.splat(C7);
  const a0 = mul(add(x0, x4), c4);
  const a1 = mul(sub(x0, x4), c4);
  const pp = add(mul(x2, c2), mul(x6, c6));
  const qq = sub(mul(x2, c6), mul(x6, c2));
  const e0 = add(a0, pp);
  const e3 = sub(a0, pp);
  const e1 = add(a1, qq);
  const e2 = sub(a1, qq);
  const o0 = add(add(mul(x1, c1), mul(x3, c3)), add(mul(x5, c5), mul(x7, c7)));
  const o1 = sub(sub(mul(x1, c3), mul(x3, c7)), add(mul(x5, c1), mul(x7, c5)));
  const o2 = add(sub(mul(x1, c5), mul(x3, c1)), add(mul(x5, c7), mul(x7, c3)));
  const o3 = sub(add(mul(x1, c7), mul(x5, c3)), add(mul(x3, c5), mul(x7, c1)));
  butterfly(p, e0, e1, e2, e3, o0, o1, o2, o3);
}

/** `pass` for inputs whose X4…X7 are zero (the low-frequency blocks of idct8Low). */
// @ts-ignore: decorator
@inline function passLow(p: usize): void {
  const x0 = v128.load(p);
  const x1 = v128.load(p + 32);
  const x2 = v128.load(p + 64);
  const x3 = v128.load(p + 96);
  const c1 = f32x4.splat(C1), c2 = f32x4.splat(C2), c3 = f32x4.splat(C3), c4 = f32x4.splat(C4);
  const c5 = f32x4.splat(C5), c6 = f32x4.splat(C6), c7 = f32x4.splat(C7);
  const a = mul(x0, c4);
  const pp = mul(x2, c2);
  const qq = mul(x2, c6);
  const e0 = add(a, pp);
  const e3 = sub(a, pp);
  const e1 = add(a, qq);
  const e2 = sub(a, qq);
  const o0 = add(mul(x1, c1), mul(x3, c3));
  const o1 = sub(mul(x1, c3), mul(x3, c7));
  const o2 = sub(mul(x1, c5), mul(x3, c1));
  const o3 = sub(mul(x1, c7), mul(x3, c5));
  butterfly(p, e0, e1, e2, e3, o0, o1, o2, o3);
}

/** Transposes the 4×4 f32 tile of vectors at a, a+32, a+64, a+96 into b, b+32, b+64, b+96. */
// @ts-ignore: decorator
@inline function transpose4(a: usize, b: usize): void {
  const r0 = v128.load(a);
  const r1 = v128.load(a + 32);
  const r2 = v128.load(a + 64);
  const r3 = v128.load(a + 96);
  const t0 = i32x4.shuffle(r0, r1, 0, 4, 1, 5);
  const t1 = i32x4.shuffle(r2, r3, 0, 4, 1, 5);
  const t2 = i32x4.shuffle(r0, r1, 2, 6, 3, 7);
  const t3 = i32x4.shuffle(r2, r3, 2, 6, 3, 7);
  v128.store(b, i64x2.shuffle(t0, t1, 0, 2));
  v128.store(b + 32, i64x2.shuffle(t0, t1, 1, 3));
  v128.store(b + 64, i64x2.shuffle(t2, t3, 0, 2));
  v128.store(b + 96, i64x2.shuffle(t2, t3, 1, 3));
}

const U: usize = memory.data(16 * 16, 16);

/** Full 8×8 IDCT of block `blk` with table `qf` into 8 rows of 8 bytes at `dst`. */
export function idct8(blk: usize, qf: usize, dst: usize, stride: i32): void {
  // Load: T[u] lo at T + u·32, hi at T + u·32 + 16.
  for (let u = 0; u < 8; u++) {
    v128.store(T + (<usize>u << 5), row(blk, qf, u, false));
    v128.store(T + (<usize>u << 5) + 16, row(blk, qf, u, true));
  }
  // The level shift and rounding bias, on the dequantized DC (lane v = 0 of row u = 0).
  v128.store(T, f32x4.add(v128.load(T), f32x4(257, 0, 0, 0)));
  pass(T); //      lanes v = 0…3: A[x][v]
  pass(T + 16); // lanes v = 4…7
  // Transpose A (vectors x, lanes v) into U (vectors v, lanes x).
  transpose4(T, U); //                 x 0–3, v 0–3  → v 0–3, lanes x 0–3
  transpose4(T + 128, U + 16); //      x 4–7, v 0–3  → v 0–3, lanes x 4–7
  transpose4(T + 16, U + 128); //      x 0–3, v 4–7  → v 4–7, lanes x 0–3
  transpose4(T + 144, U + 144); //     x 4–7, v 4–7  → v 4–7, lanes x 4–7
  pass(U);
  pass(U + 16);
  store8x8(dst, stride);
}

/**
 * idct8 for blocks whose non-zero coefficients all have u ≤ 3 and v ≤ 3 (zig-zag index ≤ 9,
 * the common case after quantization): pass 1 runs on 4 inputs and one half, pass 2 on 4
 * inputs, about 40 % of the work.
 */
export function idct8Low(blk: usize, qf: usize, dst: usize, stride: i32): void {
  for (let u = 0; u < 4; u++) v128.store(T + (<usize>u << 5), row(blk, qf, u, false));
  v128.store(T, f32x4.add(v128.load(T), f32x4(257, 0, 0, 0)));
  passLow(T); // lanes v = 0…3; v = 4…7 are zero
  transpose4(T, U);
  transpose4(T + 128, U + 16);
  const z = f32x4.splat(0);
  for (let v = 4; v < 8; v++) {
    v128.store(U + (<usize>v << 5), z);
    v128.store(U + (<usize>v << 5) + 16, z);
  }
  passLow(U);
  passLow(U + 16);
  store8x8(dst, stride);
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

/** Rounds, clamps and stores the 8 result rows in U. */
// @ts-ignore: decorator
@inline function store8x8(dst: usize, stride: i32): void {
  // Row y = U + y·32 (lanes x 0–3) and U + y·32 + 16 (x 4–7).
  for (let y = 0; y < 8; y += 2) {
    const a = i16x8.narrow_i32x4_s(toSample(v128.load(U + (<usize>y << 5))), toSample(v128.load(U + (<usize>y << 5) + 16)));
    const b = i16x8.narrow_i32x4_s(toSample(v128.load(U + (<usize>(y + 1) << 5))), toSample(v128.load(U + (<usize>(y + 1) << 5) + 16)));
    const bytes = i8x16.narrow_i16x8_u(a, b);
    v128.store_lane<i64>(dst + <usize>(y * stride), bytes, 0);
    v128.store_lane<i64>(dst + <usize>((y + 1) * stride), bytes, 1);
  }
}

/** The sample every position of a block takes when only its DC is non-zero. */
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

// Between the two stages of idctReduced: RT[x] (lanes v = 0…3 at RT + x·32, 4…7 at + 16), then
// R[v] (lanes x) at R + v·32, its transpose.
const RT: usize = memory.data(8 * 16, 16);
const R: usize = memory.data(8 * 32, 16);

/** N×N output (N = 4 or 2): box-filtered IDCT of the whole block (see above). */
export function idctReduced(blk: usize, qf: usize, dst: usize, stride: i32, n: i32): void {
  if (!reducedReady) buildReduced();
  const m = n == 4 ? M4 : M2;
  // R[v][x] = Σu D(v,u) M[u][x], summed in the order u = 0…7 from +0 (as it always was: the
  // bytes depend on it), with vectors over v: D's rows u as idct8 loads them, dequantized once.
  for (let u = 0; u < 8; u++) {
    v128.store(T + (<usize>u << 5), row(blk, qf, u, false));
    v128.store(T + (<usize>u << 5) + 16, row(blk, qf, u, true));
  }
  v128.store(T, f32x4.add(v128.load(T), f32x4(257, 0, 0, 0))); // level shift and rounding, as in idct8
  for (let x = 0; x < n; x++) {
    let lo = f32x4.splat(0);
    let hi = f32x4.splat(0);
    for (let u = 0; u < 8; u++) {
      const w = v128.load32_splat(m + ((<usize>(u * 4 + x)) << 2));
      lo = f32x4.add(lo, f32x4.mul(v128.load(T + (<usize>u << 5)), w));
      hi = f32x4.add(hi, f32x4.mul(v128.load(T + (<usize>u << 5) + 16), w));
    }
    v128.store(RT + (<usize>x << 5), lo);
    v128.store(RT + (<usize>x << 5) + 16, hi);
  }
  transpose4(RT, R); //       x 0–3, v 0–3 → v 0–3, lanes x (lanes ≥ n unused)
  transpose4(RT + 16, R + 128); // x 0–3, v 4–7 → v 4–7
  // out[y] (lanes x) = Σv M[v][y] R[v]
  for (let y = 0; y < n; y++) {
    let acc = f32x4.splat(0);
    for (let v = 0; v < 8; v++) {
      acc = f32x4.add(acc, f32x4.mul(v128.load32_splat(m + ((<usize>(v * 4 + y)) << 2)), v128.load(R + (<usize>v << 5))));
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
export function idctBlock(blk: usize, qf: usize, dst: usize, stride: i32, n: i32, last: i32): void {
  if (last == 0 || n == 1) idctDC(blk, qf, dst, stride, n);
  else if (n != 8) idctReduced(blk, qf, dst, stride, n);
  else if (last <= LOW_LAST) idct8Low(blk, qf, dst, stride);
  else idct8(blk, qf, dst, stride);
}

const QFT: usize = memory.data(64 * 4, 16);

/**
 * Test entry: IDCT of `blk` (64 i16, transposed natural order) with quantization table `q`
 * (64 u16, natural order) into an n×n block at `dst`.
 */
export function idctTest(blk: usize, q: usize, dst: usize, stride: i32, n: i32): void {
  buildQF(q, QFT);
  idctBlock(blk, QFT, dst, stride, n, 63);
}
