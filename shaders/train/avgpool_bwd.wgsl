// avgpool_bwd: the gradient of global average pooling, dx[n,c,h,w] = dy[n,c] / (H·W).
//
// Bindings (group 0):
//   0  uniform          Params {count = N·C·HW}
//   1  storage, read    dy: array<f32>   N·C
//   2  storage, rw      dx: array<f32>   N·C·HW
// Dispatch: one invocation per input element, workgroups of 256 over x then y.

struct Params {
  count: u32,
}

// Shape values divided by per element are override constants (fixed per pipeline): on CPU
// drivers a division by a uniform costs more than the rest of the kernel.
override HW: u32;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < p.count) {
    dx[i] = dy[i / HW] / f32(HW);
  }
}
