// avgpool_fwd: global average pooling, y[n,c] = mean over h, w of x[n,c,h,w].
//
// Bindings (group 0):
//   0  uniform          Params {count = N·C, HW}
//   1  storage, read    x: array<f32>   N·C·HW
//   2  storage, rw      y: array<f32>   N·C
// Dispatch: one invocation per (n, c), workgroups of 64 over x then y.

struct Params {
  count: u32,
  HW: u32,
  _a: u32,
  _b: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let o = gid.x + gid.y * nwg.x * 64u;
  if (o >= p.count) {
    return;
  }
  var s = 0.0;
  for (var i = 0u; i < p.HW; i++) {
    s += x[o * p.HW + i];
  }
  y[o] = s / f32(p.HW);
}
