// gemm: C[M,N] = op(A) · op(B) (+ bias[N]) (then ReLU), row-major, C and bias f32.
//   op(A) is A[M,K], or A stored as [K,M] when TRANS_A; op(B) is B[K,N], or B stored [N,K]
//   when TRANS_B. Dense layers need NN (forward), NT (input gradient) and TN (weight gradient).
//
// Element types: A and B are `Operand`, the products and running sums `Acc`, both f32 in this
// text. src/train/ops/gemm_f16.ts compiles the same text with f16 operands (the device feature
// `shader-f16`): Acc f32 is f16 storage, whose only error beyond f32's is the operands'
// rounding to f16 (cast_f16.wgsl); Acc f16 is f16 compute, each fma rounded to 11 significant
// bits. They are aliases, not override constants, because an override cannot choose a type.
// Either way the sum is widened to f32 before the bias and ReLU.
//
// Bindings (group 0):
//   0  uniform          Params {M, N, K}
//   1  storage, read    a: array<Operand>  M·K values (f16: the binding rounds up to whole words)
//   2  storage, read    b: array<Operand>  K·N values
//   3  storage, read    bias: array<f32>   N values (read only when BIAS)
//   4  storage, rw      c: array<f32>      M·N values
// Dispatch: workgroups of WG invocations along N; workgroup (x, y) computes rows y·RM … y·RM+RM-1
//   and columns x·WG·RN + lane + j·WG (j < RN): a register tile of RM×RN outputs per invocation.
//
// Why register tiles and no workgroup memory: every A value a workgroup reads has the same
// address in all its invocations, so CPU drivers (lavapipe) load it once and broadcast it,
// while each B load serves RM multiply-adds; a 16×16 workgroup-memory tiling measured 10×
// slower on lavapipe (barriers become coroutine switches there). See src/train/ops/gemm.ts.

alias Operand = f32;
alias Acc = f32;

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
override WG: u32 = 16u;
override RM: u32 = 8u; // rows per invocation, ≤ MAX_R
override RN: u32 = 8u; // columns per invocation, ≤ MAX_R
const MAX_R = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<Operand>;
@group(0) @binding(2) var<storage, read> b: array<Operand>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

fn loadA(i: u32, k: u32) -> Operand {
  if (TRANS_A) {
    return a[k * p.M + i];
  }
  return a[i * p.K + k];
}

fn loadB(k: u32, j: u32) -> Operand {
  if (TRANS_B) {
    return b[j * p.K + k];
  }
  return b[k * p.N + j];
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let row0 = wid.y * RM;
  let col0 = wid.x * WG * RN + lid.x;
  // Rows and columns past the edge are clamped to the last one: their loads stay in bounds
  // and their results are never stored.
  var rows: array<u32, MAX_R>;
  var cols: array<u32, MAX_R>;
  for (var i = 0u; i < RM; i++) {
    rows[i] = min(row0 + i, p.M - 1u);
  }
  for (var j = 0u; j < RN; j++) {
    cols[j] = min(col0 + j * WG, p.N - 1u);
  }
  var acc: array<array<Acc, MAX_R>, MAX_R>;
  for (var k = 0u; k < p.K; k++) {
    var bv: array<Acc, MAX_R>;
    for (var j = 0u; j < RN; j++) {
      bv[j] = Acc(loadB(k, cols[j]));
    }
    for (var i = 0u; i < RM; i++) {
      let av = Acc(loadA(rows[i], k));
      for (var j = 0u; j < RN; j++) {
        acc[i][j] = fma(av, bv[j], acc[i][j]);
      }
    }
  }
  for (var i = 0u; i < RM; i++) {
    let r = row0 + i;
    for (var j = 0u; j < RN; j++) {
      let col = col0 + j * WG;
      if (r < p.M && col < p.N) {
        var v = f32(acc[i][j]);
        if (BIAS) {
          v += bias[col];
        }
        if (RELU) {
          v = max(v, 0.0);
        }
        c[r * p.N + col] = v;
      }
    }
  }
}
