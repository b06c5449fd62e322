// sum_axes: out[j] = Σ_{o < O, i < I} src[(o·J + j)·I + i], a [O, J, I] tensor summed over its
// outer and inner axes. Bias gradients (dense: O = batch, I = 1; conv: O = batch, I = H·W) and
// the split partial sums of conv2d_bwd_filter (O = splits, I = 1).
//
// Bindings (group 0):
//   0  uniform          Params {O, J}
//   1  storage, read    src: array<f32>   O·J·I
//   2  storage, rw      out: array<f32>   J
// Dispatch, two modes (the override SERIAL):
//   tree (SERIAL false): one workgroup of 64 per j (x, then y past 65535); the 64 invocations
//     stride over the O·I terms and add their partial sums as a tree in workgroup memory;
//   serial (SERIAL true, for few terms per j): one invocation per j, workgroups of 64 over x
//     then y, adding its O·I terms in order. A workgroup per j and a barrier tree for a handful
//     of terms (the split sums: O = 8, I = 1) cost far more than the adds on CPU drivers.
// Both add in a fixed order: the same result every run.

struct Params {
  O: u32,
  J: u32,
}

// The inner size is an override constant (fixed per pipeline): the tree mode divides by it per
// term, and on CPU drivers a division by a uniform costs more than the add.
override I: u32;

const WG = 64u;
override SERIAL: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  if (SERIAL) {
    let jj = (wid.x + wid.y * nwg.x) * WG + lid;
    if (jj < p.J) {
      var acc = 0.0;
      for (var o = 0u; o < p.O; o++) {
        let row = (o * p.J + jj) * I;
        for (var i = 0u; i < I; i++) {
          acc += src[row + i];
        }
      }
      out[jj] = acc;
    }
    return;
  }
  let j = wid.x + wid.y * nwg.x;
  var s = 0.0;
  if (j < p.J) {
    let terms = p.O * I;
    for (var t = lid; t < terms; t += WG) {
      let o = t / I;
      s += src[(o * p.J + j) * I + (t - o * I)];
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
