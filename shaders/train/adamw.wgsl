// adamw: Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW:
//   w = w − lr·wd·w;  m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//   w = w − lr · (m·c1) / (√(v·c2) + ε)   with c1 = 1/(1−β1^t), c2 = 1/(1−β2^t) for step t
// (the CPU computes c1 and c2 per step; wd = 0 is plain Adam).
//
// Bindings (group 0):
//   0  uniform          Params {count, lr, beta1, beta2, eps, wd, c1, c2}
//   1  storage, rw      w: array<f32>
//   2  storage, read    g: array<f32>
//   3  storage, rw      m: array<f32>
//   4  storage, rw      v: array<f32>
// Dispatch: one invocation per value, workgroups of 256 over x then y; one dispatch for every
//   parameter of a model.

struct Params {
  count: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  wd: f32,
  c1: f32,
  c2: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.count) {
    return;
  }
  let grad = g[i];
  let mi = p.beta1 * m[i] + (1.0 - p.beta1) * grad;
  let vi = p.beta2 * v[i] + (1.0 - p.beta2) * grad * grad;
  m[i] = mi;
  v[i] = vi;
  let decayed = w[i] * (1.0 - p.lr * p.wd);
  w[i] = decayed - p.lr * (mi * p.c1) / (sqrt(vi * p.c2) + p.eps);
}
