// Inverse DCT of one 8×8 block (T.81 A.3.3), separable, in f32 with v128 rows:
//   s(y,x) = 1/4 Σu Σv C(u) C(v) S(v,u) cos((2x+1)uπ/16) cos((2y+1)vπ/16),  C(0) = 1/√2
// then the level shift (+128, A.3.1) and clamping to 0..255.
//
// Block layout in memory (row-major, v = row):
//   in:  64 × f32 dequantized coefficients   (256 bytes)
//   out: 64 × u8 samples, row stride `stride`

// Static storage (memory.data, below __heap_base) rather than StaticArray: nothing managed,
// and the image arena in memory.ts owns everything above __heap_base.
// cosTable[u * 8 + x] = C(u)/2 · cos((2x+1)uπ/16), built once.
const cosTable: usize = memory.data(64 * 4, 16);
let cosReady = false;

function buildCos(): void {
  for (let u = 0; u < 8; u++) {
    const cu: f64 = u == 0 ? Math.SQRT1_2 : 1.0;
    for (let x = 0; x < 8; x++) {
      store<f32>(cosTable + ((u * 8 + x) << 2), <f32>((cu / 2) * Math.cos(((2 * x + 1) * u * Math.PI) / 16)));
    }
  }
  cosReady = true;
}

// Scratch for the row pass: 64 f32 (rows transformed, columns pending).
const tmp: usize = memory.data(64 * 4, 16);

/** IDCT of the block at `src` (64 f32) into `dst` (8 rows of 8 u8, `stride` bytes apart). */
export function idct8x8(src: usize, dst: usize, stride: i32): void {
  if (!cosReady) buildCos();
  const table = cosTable;
  const t = tmp;
  // Rows: tmp[v][x] = Σu S(v,u) c(u,x). Each x-half is one v128 of 4 lanes.
  for (let v = 0; v < 8; v++) {
    let lo = f32x4.splat(0);
    let hi = f32x4.splat(0);
    for (let u = 0; u < 8; u++) {
      const s = f32x4.splat(load<f32>(src + ((v * 8 + u) << 2)));
      lo = f32x4.add(lo, f32x4.mul(s, v128.load(table + ((u * 8) << 2))));
      hi = f32x4.add(hi, f32x4.mul(s, v128.load(table + ((u * 8 + 4) << 2))));
    }
    v128.store(t + ((v * 8) << 2), lo);
    v128.store(t + ((v * 8 + 4) << 2), hi);
  }
  // Columns: out[y][x] = Σv c(v,y) tmp[v][x] + 128, rounded and clamped.
  const shift = f32x4.splat(128.5);
  for (let y = 0; y < 8; y++) {
    let lo = shift;
    let hi = shift;
    for (let v = 0; v < 8; v++) {
      const c = f32x4.splat(load<f32>(table + ((v * 8 + y) << 2)));
      lo = f32x4.add(lo, f32x4.mul(c, v128.load(t + ((v * 8) << 2))));
      hi = f32x4.add(hi, f32x4.mul(c, v128.load(t + ((v * 8 + 4) << 2))));
    }
    // floor(x + 0.5) then clamp: truncation toward zero is floor once clamped at 0.
    const zero = f32x4.splat(0);
    const top = f32x4.splat(255);
    const a = i32x4.trunc_sat_f32x4_s(f32x4.min(f32x4.max(lo, zero), top));
    const b = i32x4.trunc_sat_f32x4_s(f32x4.min(f32x4.max(hi, zero), top));
    const bytes = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(a, b), i16x8.narrow_i32x4_s(a, b));
    v128.store_lane<i64>(dst + y * stride, bytes, 0);
  }
}
