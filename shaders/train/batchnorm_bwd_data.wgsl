// batchnorm_bwd_data: the input gradient of training-mode batch norm (M = N·I values per
// channel, the batch's mean and variance depend on every x):
//   dx = gamma · invStd · (dy − dbeta/M − x̂ · dgamma/M),   x̂ = (x − mean) · invStd
// with dbeta = Σ dy and dgamma = Σ dy·x̂ from batchnorm_bwd_reduce.
//
// Bindings (group 0):
//   0  uniform          Params {count = N·C·I, eps: f32}
//   1  storage, read    x: array<f32>
//   2  storage, read    dy: array<f32>
//   3  storage, read    stats: array<f32>    2·C  [mean | var] of the batch
//   4  storage, read    gamma: array<f32>    C
//   5  storage, read    dgamma: array<f32>   C
//   6  storage, read    dbeta: array<f32>    C
//   7  storage, rw      dx: array<f32>
// Dispatch: one invocation per element, workgroups of 256 over x then y.

struct Params {
  count: u32,
  eps: f32,
}

// Shape values divided by per element are override constants (fixed per pipeline): on CPU
// drivers a division by a uniform costs more than the rest of the kernel.
override C: u32;
override I: u32;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> gamma: array<f32>;
@group(0) @binding(5) var<storage, read> dgamma: array<f32>;
@group(0) @binding(6) var<storage, read> dbeta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.count) {
    return;
  }
  let c = (i / I) % C;
  let M = f32(p.count / C);
  let invStd = inverseSqrt(stats[C + c] + p.eps);
  let xhat = (x[i] - stats[c]) * invStd;
  dx[i] = gamma[c] * invStd * (dy[i] - dbeta[c] / M - xhat * dgamma[c] / M);
}
