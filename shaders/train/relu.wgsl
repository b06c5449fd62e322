// relu: y[i] = max(x[i], 0).
//
// Bindings (group 0):
//   0  uniform          Params {count}
//   1  storage, read    x: array<f32>
//   2  storage, rw      y: array<f32>
// Dispatch: one invocation per element, workgroups of 256 over x then y (grid() in src/gpu/kernel.ts).

struct Params {
  count: u32,
  _a: u32,
  _b: u32,
  _c: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < p.count) {
    y[i] = max(x[i], 0.0);
  }
}
