// softmax_xent: softmax cross-entropy fused with its gradient, for logits z [B, C] and integer
// labels, each row's target λ·onehot(label) + (1 − λ)·onehot(other) (MixUp and CutMix's,
// src/decode/mix.ts; λ = 1 and other = label for a batch that is not mixed, which gives the
// plain loss exactly). Per row: loss = log Σ_c exp(z_c − max) − Σ_c target_c·(z_c − max);
// dz = (softmax(z) − target) · scale (scale = 1/B gives the gradient of the batch's mean
// loss). Adds the batch's loss sum, the rows whose argmax (first on ties) is the label, and the
// row count to stats[0..2], so a whole epoch's loss and accuracy are read back once.
//
// Bindings (group 0):
//   0  uniform          Params {B, C, scale: f32}
//   1  storage, read    z: array<f32>       B·C
//   2  storage, read    labels: array<u32>  2B + 1: the labels, each row's other label, λ (f32 bits)
//   3  storage, rw      dz: array<f32>      B·C
//   4  storage, rw      stats: array<f32>   3 running sums: loss, correct, rows
// Dispatch: one workgroup of 64 (a few thousand values per batch; one workgroup keeps the
//   sums in a fixed order without atomics).

struct Params {
  B: u32,
  C: u32,
  scale: f32,
  _pad: u32,
}

const WG = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> z: array<f32>;
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read_write> dz: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;

var<workgroup> lossSum: array<f32, WG>;
var<workgroup> hitSum: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  var loss = 0.0;
  var hits = 0.0;
  for (var r = lid; r < p.B; r += WG) {
    let row = r * p.C;
    var top = z[row];
    var best = 0u;
    for (var c = 1u; c < p.C; c++) {
      let v = z[row + c];
      if (v > top) {
        top = v;
        best = c;
      }
    }
    var sum = 0.0;
    for (var c = 0u; c < p.C; c++) {
      sum += exp(z[row + c] - top);
    }
    let label = labels[r];
    let other = labels[p.B + r];
    let lam = bitcast<f32>(labels[2u * p.B]);
    loss += log(sum) - (lam * (z[row + min(label, p.C - 1u)] - top) + (1.0 - lam) * (z[row + min(other, p.C - 1u)] - top));
    hits += select(0.0, 1.0, best == label);
    let inv = 1.0 / sum;
    for (var c = 0u; c < p.C; c++) {
      let q = exp(z[row + c] - top) * inv;
      dz[row + c] = (q - (lam * select(0.0, 1.0, c == label) + (1.0 - lam) * select(0.0, 1.0, c == other))) * p.scale;
    }
  }
  lossSum[lid] = loss;
  hitSum[lid] = hits;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      lossSum[lid] += lossSum[lid + stride];
      hitSum[lid] += hitSum[lid + stride];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    stats[0] += lossSum[0];
    stats[1] += hitSum[0];
    stats[2] += f32(p.B);
  }
}
