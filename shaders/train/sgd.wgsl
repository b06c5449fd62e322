// sgd: SGD with momentum and weight decay, as torch.optim.SGD (dampening 0, not Nesterov):
//   v = momentum·v + (g + wd·w);  w = w − lr·v
//
// Bindings (group 0):
//   0  uniform          Params {count, lr, momentum, wd}
//   1  storage, rw      w: array<f32>
//   2  storage, read    g: array<f32>
//   3  storage, rw      v: array<f32>
// Dispatch: one invocation per value, workgroups of 256 over x then y. One dispatch updates
//   every parameter of a model: they share one buffer (TensorArena).

struct Params {
  count: u32,
  lr: f32,
  momentum: f32,
  wd: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < p.count) {
    let vel = p.momentum * v[i] + g[i] + p.wd * w[i];
    v[i] = vel;
    w[i] = w[i] - p.lr * vel;
  }
}
