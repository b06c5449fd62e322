// cast_f16: dst = src rounded to f16, round to nearest, ties to even; two values per u32 word.
//   Values beyond f16's range (|x| ≥ 65520) become ±inf, values below half the smallest
//   subnormal (2^-25) become ±0, NaN stays NaN (quiet, same sign), -0 stays -0.
//
// Bindings (group 0):
//   0  uniform          Params {count}
//   1  storage, read    src: array<f32>   count values
//   2  storage, rw      dst: array<u32>   ⌈count / 2⌉ words
// Dispatch: one invocation per word, workgroups of 256 over x then y (grid() in src/gpu/kernel.ts).
//
//   dst word w:  bits 31 … 16          bits 15 … 0
//                f16 of src[2w + 1]    f16 of src[2w]       (little-endian: array<f16> reads
//                                                            value 2w first)
//   The high half of the last word of an odd count is 0.
//
// Why integer arithmetic and not f16(x) or pack2x16float: WGSL leaves the rounding of a
// narrowing conversion to the implementation (either neighbour), and lets a value just past
// the largest f16 become that value or inf. These bits are the same on every device, and the
// kernel needs no `shader-f16`, so f16 operands can be made on any adapter.

struct Params {
  count: u32,
  _a: u32,
  _b: u32,
  _c: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

// IEEE 754 binary32 → binary16 bits (low 16 bits of the result).
//   f32: sign 1 | exponent 8 (bias 127) | mantissa 23;  f16: sign 1 | exponent 5 (bias 15) | mantissa 10
fn f16Bits(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  let sign = (u >> 16u) & 0x8000u;
  let e = (u >> 23u) & 0xffu;
  let m = u & 0x7fffffu;
  if (e == 0xffu) {
    // inf, or NaN with its top mantissa bits and the quiet bit set.
    return sign | 0x7c00u | select(0u, 0x200u | (m >> 13u), m != 0u);
  }
  if (e >= 143u) {
    return sign | 0x7c00u; // ≥ 2^16: past the largest f16 (65504) by more than half an ulp
  }
  if (e >= 113u) {
    // Normal f16 (exponent e − 112 in 1 … 30): drop 13 mantissa bits. A carry out of the
    // mantissa moves to the next exponent, and from 30 to 31 that is inf: both are right.
    let h = ((e - 112u) << 10u) | (m >> 13u);
    let rest = m & 0x1fffu;
    return sign | (h + select(0u, 1u, rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)));
  }
  if (e < 102u) {
    return sign; // below 2^-25, half the smallest subnormal (f32 subnormals included)
  }
  // Subnormal f16: the value is (m | 2^23) · 2^(e − 150) = h · 2^-24, so shift right by 126 − e
  // (14 … 24). Rounding up from 1023 gives 0x400, the smallest normal: also right.
  let full = m | 0x800000u;
  let shift = 126u - e;
  let h = full >> shift;
  let rest = full & ((1u << shift) - 1u);
  let half = 1u << (shift - 1u);
  return sign | (h + select(0u, 1u, rest > half || (rest == half && (h & 1u) == 1u)));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = gid.x + gid.y * nwg.x * 256u;
  let i = 2u * w;
  if (i < p.count) {
    var hi = 0u;
    if (i + 1u < p.count) {
      hi = f16Bits(src[i + 1u]);
    }
    dst[w] = f16Bits(src[i]) | (hi << 16u);
  }
}
