// Chroma upsampling of one output row (T.81 leaves the filter to the application, A.1.1).
//
// The filter is the triangular ("fancy") one libjpeg-turbo applies by default, so that our
// output matches djpeg's: each output sample is 3/4 of the nearer input sample plus 1/4 of the
// next one out, in each upsampled direction, which is linear interpolation for chroma sited
// midway between luma samples (JFIF's siting). Edges replicate the last real sample, where the
// "real" width and height are the component's own (ceil(X·Hi/Hmax), A.1.1), not the MCU padding.
// Rounding biases alternate (libjpeg-turbo's choice, to avoid a drift in one direction):
//
//   2×1   even: (3·a + left  + 1) >> 2        odd: (3·a + right + 2) >> 2
//   2×2   s = 3·near + far (the row above for even output rows, below for odd ones)
//         even: (3·s + s_left + 8) >> 4       odd: (3·s + s_right + 7) >> 4
//   1×2   (3·near + far + 1) >> 2 for even rows, + 2 for odd rows
//
// Other integer ratios (4:1:1 and friends) replicate samples, as libjpeg does for them; so do
// 2×1 and 2×2 when the component is at most 2 samples wide (libjpeg's jdsample.c needs 3).
//
// Row buffer layout for the horizontal step (i16 "column sums", one margin slot each side):
//
//   CS:  [ s(0) | s(0) s(1) … s(w−1) | s(w−1) | spare for 8-wide reads ]
//          ^ left margin                 ^ right margin

const CS_CAP = 8192 + 64; // i16 entries; wider components take the scalar path
const CS: usize = memory.data(CS_CAP * 2, 16);

/** Horizontal 2× of the column sums in CS (w entries from CS+2) into `out`, with biases. */
function horizontal2(out: usize, w: i32, b0: i16, b1: i16, shift: i32): void {
  store<i16>(CS, load<i16>(CS + 2));
  store<i16>(CS + 2 + (<usize>w << 1), load<i16>(CS + (<usize>w << 1)));
  const three = i16x8.splat(3);
  const be = i16x8.splat(b0);
  const bo = i16x8.splat(b1);
  for (let i = 0; i < w; i += 8) {
    const p = CS + 2 + (<usize>i << 1);
    const c = i16x8.mul(v128.load(p), three);
    const even = i16x8.shr_s(i16x8.add(i16x8.add(c, v128.load(p - 2)), be), shift);
    const odd = i16x8.shr_s(i16x8.add(i16x8.add(c, v128.load(p + 2)), bo), shift);
    const bytes = i8x16.narrow_i16x8_u(even, odd); // e0…e7 o0…o7
    v128.store(out + (<usize>i << 1), i8x16.shuffle(bytes, bytes, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
  }
}

/** 2×1: one input row `in` of w samples → 2w samples at `out`. */
export function h2v1(inp: usize, w: i32, out: usize): void {
  if (w + 16 > CS_CAP) {
    replicate(inp, w, 2, out, 2 * w);
    return;
  }
  // Column sums are 4·a, so the 2×2 formula with shift 4 gives (3a + left + 1) >> 2 when
  // the biases are 4 and 8: (4x + 4) >> 4 = (x + 1) >> 2 and (4x + 8) >> 4 = (x + 2) >> 2.
  for (let i = 0; i < w; i += 16) {
    const v = v128.load(inp + i);
    v128.store(CS + 2 + (<usize>i << 1), i16x8.shl(i16x8.extend_low_i8x16_u(v), 2));
    v128.store(CS + 18 + (<usize>i << 1), i16x8.shl(i16x8.extend_high_i8x16_u(v), 2));
  }
  horizontal2(out, w, 4, 8, 4);
}

/** Column sums 3·near + far of w samples into CS. */
function columnSums(near: usize, far: usize, w: i32): void {
  const three = i16x8.splat(3);
  for (let i = 0; i < w; i += 16) {
    const n = v128.load(near + i);
    const f = v128.load(far + i);
    v128.store(CS + 2 + (<usize>i << 1), i16x8.add(i16x8.mul(i16x8.extend_low_i8x16_u(n), three), i16x8.extend_low_i8x16_u(f)));
    v128.store(CS + 18 + (<usize>i << 1), i16x8.add(i16x8.mul(i16x8.extend_high_i8x16_u(n), three), i16x8.extend_high_i8x16_u(f)));
  }
}

// A second column-sum buffer, so that both chroma components of a row can be summed before
// color.ts's yccRowH2V2 filters them across and converts in one pass (CS holds Cb's, CS2 Cr's).
const CS2: usize = memory.data(CS_CAP * 2, 16);

/** True when h2v2Sums takes a component w samples wide (else h2v2's scalar path must). */
export function h2v2Fits(w: i32): bool {
  return w + 16 <= CS_CAP;
}

/**
 * The vertical half of h2v2 for one output row: column sums 3·near + far of w samples, edges
 * replicated (one margin slot each side), into CS (`second` false) or CS2. Returns the address
 * of sum 0; sums −1 and w are the margins. For yccRowH2V2, which does the horizontal half.
 */
export function h2v2Sums(near: usize, far: usize, w: i32, second: bool): usize {
  const cs = second ? CS2 : CS;
  const three = i16x8.splat(3);
  for (let i = 0; i < w; i += 16) {
    const n = v128.load(near + i);
    const f = v128.load(far + i);
    v128.store(cs + 2 + (<usize>i << 1), i16x8.add(i16x8.mul(i16x8.extend_low_i8x16_u(n), three), i16x8.extend_low_i8x16_u(f)));
    v128.store(cs + 18 + (<usize>i << 1), i16x8.add(i16x8.mul(i16x8.extend_high_i8x16_u(n), three), i16x8.extend_high_i8x16_u(f)));
  }
  store<i16>(cs, load<i16>(cs + 2));
  store<i16>(cs + 2 + (<usize>w << 1), load<i16>(cs + (<usize>w << 1)));
  return cs + 2;
}

/** 2×2: output row from input rows `near` and `far` (w samples each) → 2w samples at `out`. */
export function h2v2(near: usize, far: usize, w: i32, out: usize): void {
  if (w + 16 > CS_CAP) {
    // Very wide chroma (over 16k output pixels): the vertical step in scalar, then 2× replicate
    // would differ from djpeg; keep the filter, scalar.
    for (let i = 0; i < w; i++) {
      const s = 3 * <i32>load<u8>(near + i) + <i32>load<u8>(far + i);
      const l = i > 0 ? 3 * <i32>load<u8>(near + i - 1) + <i32>load<u8>(far + i - 1) : s;
      const r = i < w - 1 ? 3 * <i32>load<u8>(near + i + 1) + <i32>load<u8>(far + i + 1) : s;
      store<u8>(out + (i << 1), <u8>((3 * s + l + 8) >> 4));
      store<u8>(out + (i << 1) + 1, <u8>((3 * s + r + 7) >> 4));
    }
    return;
  }
  columnSums(near, far, w);
  horizontal2(out, w, 8, 7, 4);
}

/** 1×2: output row from `near` and `far` (w samples) → w samples at `out`; `odd` picks the bias. */
export function h1v2(near: usize, far: usize, w: i32, out: usize, odd: bool): void {
  const three = i16x8.splat(3);
  const bias = i16x8.splat(odd ? 2 : 1);
  for (let i = 0; i < w; i += 16) {
    const n = v128.load(near + i);
    const f = v128.load(far + i);
    const lo = i16x8.shr_s(i16x8.add(i16x8.add(i16x8.mul(i16x8.extend_low_i8x16_u(n), three), i16x8.extend_low_i8x16_u(f)), bias), 2);
    const hi = i16x8.shr_s(i16x8.add(i16x8.add(i16x8.mul(i16x8.extend_high_i8x16_u(n), three), i16x8.extend_high_i8x16_u(f)), bias), 2);
    v128.store(out + i, i8x16.narrow_i16x8_u(lo, hi));
  }
}

/** Any integer ratio by replication: `n` output samples, each input sample `r` times. */
export function replicate(inp: usize, w: i32, r: i32, out: usize, n: i32): void {
  for (let x = 0; x < n; x++) {
    let i = x / r;
    if (i >= w) i = w - 1;
    store<u8>(out + x, load<u8>(inp + i));
  }
}
