// batchnorm_apply: y = (x − mean[c]) / √(var[c] + ε) · gamma[c] + beta[c] (then ReLU), for x
// [N, C, I]. Training mode passes the batch's stats (batchnorm_stats), eval mode the running
// ones: the same kernel, other buffers.
//
// Bindings (group 0):
//   0  uniform          Params {count = N·C·I, eps: f32}
//   1  storage, read    x: array<f32>
//   2  storage, read    stats: array<f32>   2·C  [mean | var]
//   3  storage, read    gamma: array<f32>   C
//   4  storage, read    beta: array<f32>    C
//   5  storage, rw      y: array<f32>
// Dispatch: one invocation per element, workgroups of 256 over x then y.

struct Params {
  count: u32,
  eps: f32,
}

// Shape values divided by per element are override constants (fixed per pipeline): on CPU
// drivers a division by a uniform costs more than the rest of the kernel.
override C: u32;
override I: u32;

override RELU: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> stats: array<f32>;
@group(0) @binding(3) var<storage, read> gamma: array<f32>;
@group(0) @binding(4) var<storage, read> beta: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.count) {
    return;
  }
  let c = (i / I) % C;
  var v = (x[i] - stats[c]) * inverseSqrt(stats[C + c] + p.eps) * gamma[c] + beta[c];
  if (RELU) {
    v = max(v, 0.0);
  }
  y[i] = v;
}
