// relu_bwd: dx[i] = dy[i] where y[i] > 0, else 0. It takes ReLU's output y (y > 0 exactly
// where the input was > 0), so layers with a fused ReLU need not keep their pre-activation.
//
// Bindings (group 0):
//   0  uniform          Params {count}
//   1  storage, read    y: array<f32>
//   2  storage, read    dy: array<f32>
//   3  storage, rw      dx: array<f32>
// Dispatch: one invocation per element, workgroups of 256 over x then y.

struct Params {
  count: u32,
  _a: u32,
  _b: u32,
  _c: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < p.count) {
    dx[i] = select(0.0, dy[i], y[i] > 0.0);
  }
}
