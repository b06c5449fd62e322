// bias_add: y[o, c, i] += bias[c] in place, for y of shape [O, C, I] (dense: I = 1; NCHW
// feature maps: I = H·W). gemm and conv2d_fwd fuse their bias; this is for the other layers.
//
// Bindings (group 0):
//   0  uniform          Params {count = O·C·I}
//   1  storage, read    bias: array<f32>   C values
//   2  storage, rw      y: array<f32>
// Dispatch: one invocation per element, workgroups of 256 over x then y.

struct Params {
  count: u32,
}

// Shape values divided by per element are override constants (fixed per pipeline): on CPU
// drivers a division by a uniform costs more than the rest of the kernel.
override C: u32;
override I: u32;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < p.count) {
    y[i] += bias[(i / I) % C];
  }
}
