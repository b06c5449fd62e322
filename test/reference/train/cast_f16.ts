/**
 * CPU reference of shaders/train/cast_f16.wgsl: f32 → IEEE 754 binary16, round to nearest,
 * ties to even. Written with f64 arithmetic (scale to the binade's ulp, round the quotient)
 * rather than the shader's bit shifts, so that the two do not share a mistake. None of the
 * three runtimes has Float16Array or Math.f16round everywhere yet (Node 22 lacks both).
 */

/** The largest finite f16 plus half its ulp (32): from here on, values round to inf. */
const INF_FROM = 65520;
/** Smallest normal f16. */
export const F16_MIN_NORMAL = 2 ** -14;
/** Unit roundoff of f16 (half an ulp of 1: 11 significant bits). */
export const F16_EPS = 2 ** -11;

/**
 * The f16 bits of `x` after rounding it to f32 (as the GPU sees it). NaN gives 0x7e00 (or 0xfe00):
 * JS does not keep a NaN's sign or payload, so compare NaNs as NaNs.
 */
export function f16Bits(x: number): number {
  const v = Math.fround(x);
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a >= INF_FROM) return sign | 0x7c00;
  // e: exponent of a's binade, at least -14 (the subnormals share the binade of 2^-14's ulp).
  let e = a === 0 ? -14 : Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  e = Math.max(e, -14);
  const ulp = 2 ** (e - 10);
  const q = a / ulp; // exact: a power-of-two scaling of an f32 in f64
  let n = Math.floor(q);
  const r = q - n;
  if (r > 0.5 || (r === 0.5 && n % 2 === 1)) n++;
  if (n === 2048) {
    n = 1024;
    e++;
  }
  // n < 1024 only in the subnormal binade: exponent field 0.
  return n < 1024 ? sign | n : sign | ((e + 15) << 10) | (n - 1024);
}

/** The value of f16 bits (exact in f64). */
export function f16Value(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  if (e === 0) return sign * m * 2 ** -24;
  return sign * (1024 + m) * 2 ** (e - 25);
}

/** `x` rounded to the nearest f16 (via f32), as a number. */
export function roundF16(x: number): number {
  return f16Value(f16Bits(x));
}

/** castF16Ref(src)[i] = f16Bits(src[i]). */
export function castF16Ref(src: ArrayLike<number>): Uint16Array {
  return Uint16Array.from({ length: src.length }, (_, i) => f16Bits(src[i]));
}
