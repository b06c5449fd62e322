// batchnorm_bwd_reduce: the parameter gradients of training-mode batch norm, per channel:
//   dbeta[c] = Σ dy,   dgamma[c] = Σ dy · x̂   with x̂ = (x − mean) / √(var + ε)
// over n and i of x, dy [N, C, I]. batchnorm_bwd_data reuses both sums.
//
// Bindings (group 0):
//   0  uniform          Params {N, eps: f32}
//   1  storage, read    x: array<f32>
//   2  storage, read    dy: array<f32>
//   3  storage, read    stats: array<f32>   2·C  [mean | var] of the batch
//   4  storage, rw      dgamma: array<f32>  C
//   5  storage, rw      dbeta: array<f32>   C
// Dispatch: one workgroup of 64 per channel; fixed-order tree sums in workgroup memory.

struct Params {
  N: u32,
  eps: f32,
}

// Shape values divided by per element are override constants (fixed per pipeline): on CPU
// drivers a division by a uniform costs more than the rest of the kernel.
override C: u32;
override I: u32;

const WG = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read_write> dgamma: array<f32>;
@group(0) @binding(5) var<storage, read_write> dbeta: array<f32>;

var<workgroup> sumDy: array<f32, WG>;
var<workgroup> sumDyX: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let c = wid.x;
  let M = p.N * I;
  let mean = stats[c];
  let invStd = inverseSqrt(stats[C + c] + p.eps);
  var a = 0.0;
  var b = 0.0;
  for (var t = lid; t < M; t += WG) {
    let n = t / I;
    let i = (n * C + c) * I + (t - n * I);
    let g = dy[i];
    a += g;
    b += g * (x[i] - mean) * invStd;
  }
  sumDy[lid] = a;
  sumDyX[lid] = b;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      sumDy[lid] += sumDy[lid + stride];
      sumDyX[lid] += sumDyX[lid + stride];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    dbeta[c] = sumDy[0];
    dgamma[c] = sumDyX[0];
  }
}
