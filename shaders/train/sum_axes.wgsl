// sum_axes: out[j] = Σ_{o < O, i < I} src[(o·J + j)·I + i], a [O, J, I] tensor summed over its
// outer and inner axes. Bias gradients (dense: O = batch, I = 1; conv: O = batch, I = H·W) and
// the split partial sums of conv2d_bwd_filter (O = splits, I = 1).
//
// Bindings (group 0):
//   0  uniform          Params {O, J, I}
//   1  storage, read    src: array<f32>   O·J·I
//   2  storage, rw      out: array<f32>   J
// Dispatch: one workgroup of 64 per j (x, then y past 65535); the 64 invocations stride over
//   the O·I terms and add their partial sums as a tree in workgroup memory (fixed order).

struct Params {
  O: u32,
  J: u32,
  I: u32,
  _pad: u32,
}

const WG = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let j = wid.x + wid.y * nwg.x;
  var s = 0.0;
  if (j < p.J) {
    let terms = p.O * p.I;
    for (var t = lid; t < terms; t += WG) {
      let o = t / p.I;
      s += src[(o * p.J + j) * p.I + (t - o * p.I)];
    }
  }
  partial[lid] = s;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      partial[lid] += partial[lid + stride];
    }
    workgroupBarrier();
  }
  if (lid == 0u && j < p.J) {
    out[j] = partial[0];
  }
}
