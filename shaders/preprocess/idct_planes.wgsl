// idct_planes: quantized DCT blocks of a batch of JPEGs → one u8 sample plane per component.
// Per block (T.81 A.3.3, A.3.1): F(v,u) = Sq(v,u)·Q(v,u); s = M·F·Mᵀ with
// M[x][u] = C(u)/2·cos((2x+1)uπ/16); sample = clamp(floor(s + 128.5), 0, 255), the rounding the
// WASM decoder uses, so both round halves the same way.
//
// Bindings (group 0):
//   0  uniform          basis: M, 64 f32 row-major (x·8 + u), from src/gpu/idct.ts
//   1  storage, read    coef: array<u32>    the upload (NOTE [ Coefficient upload ] in idct.ts):
//                                           header, component records, quant tables, blocks
//   2  storage, rw      planes: array<u32>  each component's padded plane, BLOCKS_W·8 bytes a row
// Dispatch: one invocation per block of the batch, workgroups of 64 spread over x and y
//   (grid() in src/gpu/kernel.ts); a thread finds its component by binary search over
//   FIRST_BLOCK.

@group(0) @binding(0) var<uniform> basis: array<vec4<f32>, 16>;
@group(0) @binding(1) var<storage, read> coef: array<u32>;
@group(0) @binding(2) var<storage, read_write> planes: array<u32>;

fn m(x: u32, u: u32) -> f32 {
  let i = x * 8u + u;
  return basis[i >> 2u][i & 3u];
}

// Coefficient k (natural order) of the block starting at word w: two i16 a word, low half first.
fn coefficient(w: u32, k: u32) -> f32 {
  let word = coef[w + (k >> 1u)];
  let half = select(word & 0xffffu, word >> 16u, (k & 1u) == 1u);
  return f32(i32(half << 16u) >> 16u);
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

  // Rows pass: t[v][x] = Σu F(v,u)·M[x][u].
  var t: array<f32, 64>;
  for (var v = 0u; v < 8u; v = v + 1u) {
    var f: array<f32, 8>;
    for (var u = 0u; u < 8u; u = u + 1u) {
      let k = v * 8u + u;
      f[u] = coefficient(src, k) * f32(coef[quant + k]);
    }
    for (var x = 0u; x < 8u; x = x + 1u) {
      var acc = 0.0;
      for (var u = 0u; u < 8u; u = u + 1u) {
        acc = acc + f[u] * m(x, u);
      }
      t[v * 8u + x] = acc;
    }
  }
  // Columns pass: s[y][x] = Σv M[y][v]·t[v][x]; four samples to a word.
  let bx = local % blocksW;
  let by = local / blocksW;
  for (var y = 0u; y < 8u; y = y + 1u) {
    var words = vec2<u32>(0u, 0u);
    for (var x = 0u; x < 8u; x = x + 1u) {
      var acc = 0.0;
      for (var v = 0u; v < 8u; v = v + 1u) {
        acc = acc + m(y, v) * t[v * 8u + x];
      }
      let sample = u32(clamp(floor(acc + 128.5), 0.0, 255.0));
      words[x >> 2u] = words[x >> 2u] | (sample << ((x & 3u) * 8u));
    }
    let at = (planeByte + (by * 8u + y) * stride + bx * 8u) >> 2u;
    planes[at] = words.x;
    planes[at + 1u] = words.y;
  }
}
