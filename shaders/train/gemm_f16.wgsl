// gemm_f16: C[M,N] = op(A) · op(B) (+ bias[N]) (then ReLU), A and B stored as f16, C in f32,
//   row-major. Needs the device feature `shader-f16`. Transposes as in gemm.wgsl: op(A) is
//   A[M,K], or A stored as [K,M] when TRANS_A; op(B) is B[K,N], or B stored [N,K] when TRANS_B.
//
//   ACC_F16 false (default)  f16 storage: products and sums in f32. The only error beyond
//                            gemm.wgsl's is the operands' rounding to f16 (cast_f16.wgsl).
//   ACC_F16 true             f16 compute: fma and the running sums in f16 too, each step
//                            rounded to 11 significant bits (relative error 2^-11 per step).
//   Either way the sum is widened to f32 before the bias and ReLU, and C is f32.
//
// Bindings (group 0):
//   0  uniform          Params {M, N, K}
//   1  storage, read    a: array<f16>      M·K values (the binding rounds up to whole words)
//   2  storage, read    b: array<f16>      K·N values
//   3  storage, read    bias: array<f32>   N values (read only when BIAS)
//   4  storage, rw      c: array<f32>      M·N values
// Dispatch: as gemm.wgsl: workgroups of WG invocations along N; workgroup (x, y) computes rows
//   y·RM … y·RM+RM-1 and columns x·WG·RN + lane + j·WG (j < RN): RM×RN outputs per invocation.
//
// Register tiles and no workgroup memory, as gemm.wgsl (whose header says why: on lavapipe a
// 16×16 workgroup-memory tiling measured 10× slower). The two accumulation modes are two
// functions, not one loop with a branch per step: the override picks one when the pipeline is
// made, and each keeps its accumulators in its own type. C stays f32 because a binding's type
// cannot follow an override; f16 results would be a second kernel.

enable f16;

struct Params {
  M: u32,
  N: u32,
  K: u32,
  _pad: u32,
}

override TRANS_A: bool = false;
override TRANS_B: bool = false;
override BIAS: bool = false;
override RELU: bool = false;
override ACC_F16: bool = false;
override WG: u32 = 16u;
override RM: u32 = 8u; // rows per invocation, ≤ MAX_R
override RN: u32 = 8u; // columns per invocation, ≤ MAX_R
const MAX_R = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f16>;
@group(0) @binding(2) var<storage, read> b: array<f16>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

// This invocation's rows and columns, clamped to the last one past the edge: their loads stay
// in bounds and their results are never stored.
var<private> rows: array<u32, MAX_R>;
var<private> cols: array<u32, MAX_R>;
var<private> row0: u32;
var<private> col0: u32;

fn loadA(i: u32, k: u32) -> f16 {
  if (TRANS_A) {
    return a[k * p.M + i];
  }
  return a[i * p.K + k];
}

fn loadB(k: u32, j: u32) -> f16 {
  if (TRANS_B) {
    return b[j * p.K + k];
  }
  return b[k * p.N + j];
}

// Stores output (i, j) of the tile, with the epilogue, when it is inside C.
fn store(i: u32, j: u32, sum: f32) {
  let r = row0 + i;
  let col = col0 + j * WG;
  if (r < p.M && col < p.N) {
    var v = sum;
    if (BIAS) {
      v += bias[col];
    }
    if (RELU) {
      v = max(v, 0.0);
    }
    c[r * p.N + col] = v;
  }
}

fn tileF32() {
  var acc: array<array<f32, MAX_R>, MAX_R>;
  for (var k = 0u; k < p.K; k++) {
    var bv: array<f32, MAX_R>;
    for (var j = 0u; j < RN; j++) {
      bv[j] = f32(loadB(k, cols[j]));
    }
    for (var i = 0u; i < RM; i++) {
      let av = f32(loadA(rows[i], k));
      for (var j = 0u; j < RN; j++) {
        acc[i][j] = fma(av, bv[j], acc[i][j]);
      }
    }
  }
  for (var i = 0u; i < RM; i++) {
    for (var j = 0u; j < RN; j++) {
      store(i, j, acc[i][j]);
    }
  }
}

fn tileF16() {
  var acc: array<array<f16, MAX_R>, MAX_R>;
  for (var k = 0u; k < p.K; k++) {
    var bv: array<f16, MAX_R>;
    for (var j = 0u; j < RN; j++) {
      bv[j] = loadB(k, cols[j]);
    }
    for (var i = 0u; i < RM; i++) {
      let av = loadA(rows[i], k);
      for (var j = 0u; j < RN; j++) {
        acc[i][j] = fma(av, bv[j], acc[i][j]);
      }
    }
  }
  for (var i = 0u; i < RM; i++) {
    for (var j = 0u; j < RN; j++) {
      store(i, j, f32(acc[i][j]));
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  row0 = wid.y * RM;
  col0 = wid.x * WG * RN + lid.x;
  for (var i = 0u; i < RM; i++) {
    rows[i] = min(row0 + i, p.M - 1u);
  }
  for (var j = 0u; j < RN; j++) {
    cols[j] = min(col0 + j * WG, p.N - 1u);
  }
  if (ACC_F16) {
    tileF16();
  } else {
    tileF32();
  }
}
