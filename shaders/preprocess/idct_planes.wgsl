// idct_planes: quantized DCT blocks of a batch of JPEGs → one u8 sample plane per component.
// Per block (T.81 A.3.3, A.3.1): dequantize, 8×8 IDCT, level shift, clamp, with the same
// integer arithmetic as the WASM decoder (wasm/jpeg/idct.ts: libjpeg's accurate integer
// "islow" transform, after Loeffler, Ligtenberg and Moschytz, ICASSP 1989), so a sample here is
// the CPU decoder's sample exactly, not a close one:
//   - products of a coefficient and its quantizer kept to 16 bits (wrapping), as the WASM
//     decoder's and libjpeg-turbo's SIMD dequantization keep them;
//   - columns first, 13-bit constants, the pass descaled by 2^11 with rounding and held to i16
//     with saturation (two fraction bits stay for the rows);
//   - rows, descaled by 2^18 with rounding, + 128, clamped to 0…255.
// i32 arithmetic wraps in WGSL as in WASM, so even corrupt coefficients give the same samples.
//
// Bindings (group 0):
//   0  storage, read    coef: array<u32>    the upload (NOTE [ Coefficient upload ] in idct.ts):
//                                           header, component records, quant tables, blocks
//   1  storage, rw      planes: array<u32>  each component's padded plane, BLOCKS_W·8 bytes a row
// Dispatch: one invocation per block of the batch, workgroups of 64 spread over x and y
//   (grid() in src/gpu/kernel.ts); a thread finds its component by binary search over
//   FIRST_BLOCK.

@group(0) @binding(0) var<storage, read> coef: array<u32>;
@group(0) @binding(1) var<storage, read_write> planes: array<u32>;

// FIX(x) = round(x · 2^13), as wasm/jpeg/idct.ts names them (ck = cos(kπ/16)).
const F0298: i32 = 2446; //  √2 (−c1 + c3 + c5 − c7)
const F0390: i32 = 3196; //  √2 (c3 − c5)
const F0541: i32 = 4433; //  √2 c6
const F0765: i32 = 6270; //  √2 (c2 − c6)
const F0899: i32 = 7373; //  √2 (c3 − c7)
const F1175: i32 = 9633; //  √2 c3
const F1501: i32 = 12299; // √2 (c1 + c3 − c5 − c7)
const F1847: i32 = 15137; // √2 (c2 + c6)
const F1961: i32 = 16069; // √2 (c3 + c5)
const F2053: i32 = 16819; // √2 (c1 + c3 − c5 + c7)
const F2562: i32 = 20995; // √2 (c1 + c3)
const F3072: i32 = 25172; // √2 (c1 + c3 + c5 − c7)
const PASS1_SHIFT: u32 = 11u;
const PASS2_SHIFT: u32 = 18u;

// Coefficient k (natural order) of the block starting at word w, times its quantizer, kept to
// 16 bits: two i16 a word, low half first.
fn dequantized(w: u32, quant: u32, k: u32) -> i32 {
  let word = coef[w + (k >> 1u)];
  let half = select(word & 0xffffu, word >> 16u, (k & 1u) == 1u);
  let c = i32(half << 16u) >> 16u;
  return ((c * i32(coef[quant + k])) << 16u) >> 16u;
}

// One 1-D pass of the islow flow on x[0…7], each output descaled by 2^shift with rounding
// (`bias` holds the rounding and, for the rows, the level shift).
fn idct1d(x: array<i32, 8>, bias: i32, shift: u32) -> array<i32, 8> {
  // Even part.
  let z1 = (x[2] + x[6]) * F0541;
  let t2 = z1 - x[6] * F1847;
  let t3 = z1 + x[2] * F0765;
  let t0 = (x[0] + x[4]) << 13u;
  let t1 = (x[0] - x[4]) << 13u;
  let e0 = t0 + t3;
  let e3 = t0 - t3;
  let e1 = t1 + t2;
  let e2 = t1 - t2;
  // Odd part.
  let y1 = x[7] + x[1];
  let y2 = x[5] + x[3];
  let y3 = x[7] + x[3];
  let y4 = x[5] + x[1];
  let z5 = (y3 + y4) * F1175;
  let a1 = y1 * -F0899;
  let a2 = y2 * -F2562;
  let a3 = y3 * -F1961 + z5;
  let a4 = y4 * -F0390 + z5;
  let o0 = x[7] * F0298 + a1 + a3;
  let o1 = x[5] * F2053 + a2 + a4;
  let o2 = x[3] * F3072 + a2 + a3;
  let o3 = x[1] * F1501 + a1 + a4;
  return array<i32, 8>(
    (e0 + o3 + bias) >> shift, (e1 + o2 + bias) >> shift, (e2 + o1 + bias) >> shift, (e3 + o0 + bias) >> shift,
    (e3 - o0 + bias) >> shift, (e2 - o1 + bias) >> shift, (e1 - o2 + bias) >> shift, (e0 - o3 + bias) >> shift,
  );
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let block = gid.x + gid.y * groups.x * 64u;
  let comps = coef[0];
  if (block >= coef[1]) {
    return;
  }
  let compAt = coef[4];
  // Last component whose FIRST_BLOCK ≤ block.
  var lo = 0u;
  var hi = comps - 1u;
  while (lo < hi) {
    let mid = (lo + hi + 1u) / 2u;
    if (coef[compAt + mid * 8u] <= block) {
      lo = mid;
    } else {
      hi = mid - 1u;
    }
  }
  let rec = compAt + lo * 8u;
  let local = block - coef[rec];
  let blocksW = coef[rec + 1u];
  let src = coef[rec + 3u] + local * 32u;
  let quant = coef[rec + 4u];
  let planeByte = coef[rec + 5u];
  let stride = coef[rec + 6u];

  // Columns: ws[y][u] from the column u of coefficients, held to i16.
  var ws: array<i32, 64>;
  for (var u = 0u; u < 8u; u = u + 1u) {
    var col: array<i32, 8>;
    for (var v = 0u; v < 8u; v = v + 1u) {
      col[v] = dequantized(src, quant, v * 8u + u);
    }
    let out = idct1d(col, 1 << (PASS1_SHIFT - 1u), PASS1_SHIFT);
    for (var y = 0u; y < 8u; y = y + 1u) {
      ws[y * 8u + u] = clamp(out[y], -32768, 32767);
    }
  }
  // Rows: samples, + 128 in the rounding bias; four samples to a word.
  let bx = local % blocksW;
  let by = local / blocksW;
  for (var y = 0u; y < 8u; y = y + 1u) {
    var row: array<i32, 8>;
    for (var x = 0u; x < 8u; x = x + 1u) {
      row[x] = ws[y * 8u + x];
    }
    let s = idct1d(row, (1 << (PASS2_SHIFT - 1u)) + (128 << PASS2_SHIFT), PASS2_SHIFT);
    var words = vec2<u32>(0u, 0u);
    for (var x = 0u; x < 8u; x = x + 1u) {
      let sample = u32(clamp(s[x], 0, 255));
      words[x >> 2u] = words[x >> 2u] | (sample << ((x & 3u) * 8u));
    }
    let at = (planeByte + (by * 8u + y) * stride + bx * 8u) >> 2u;
    planes[at] = words.x;
    planes[at + 1u] = words.y;
  }
}
