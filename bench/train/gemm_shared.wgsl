// gemm_shared (benchmark only, the textbook alternative to gemm.wgsl): C[M,N] = A[M,K]·B[K,N]
// with 16×16 tiles of A and B staged in workgroup memory, one output per invocation.
//
// Bindings (group 0):
//   0  uniform          Params {M, N, K}
//   1  storage, read    a: array<f32>
//   2  storage, read    b: array<f32>
//   3  storage, rw      c: array<f32>
// Dispatch: workgroups of 16×16 over (⌈N/16⌉, ⌈M/16⌉).

struct Params {
  M: u32,
  N: u32,
  K: u32,
  _pad: u32,
}

const T = 16u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tb: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let row = wid.y * T + lid.y;
  let col = wid.x * T + lid.x;
  var acc = 0.0;
  for (var k0 = 0u; k0 < p.K; k0 += T) {
    let ka = k0 + lid.x;
    let kb = k0 + lid.y;
    ta[lid.y][lid.x] = select(0.0, a[min(row, p.M - 1u) * p.K + min(ka, p.K - 1u)], row < p.M && ka < p.K);
    tb[lid.y][lid.x] = select(0.0, b[min(kb, p.K - 1u) * p.N + min(col, p.N - 1u)], kb < p.K && col < p.N);
    workgroupBarrier();
    for (var k = 0u; k < T; k++) {
      acc = fma(ta[lid.y][k], tb[k][lid.x], acc);
    }
    workgroupBarrier();
  }
  if (row < p.M && col < p.N) {
    c[row * p.N + col] = acc;
  }
}
