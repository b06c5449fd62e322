// batchnorm_stats: per-channel batch statistics of x [N, C, I] (I = H·W, or 1 after a dense
// layer) for training-mode batch norm: stats = [mean(C) | biased variance(C)], and the running
// estimates used in eval mode move towards them, as torch.nn.BatchNorm:
//   running_mean += momentum·(mean − running_mean)
//   running_var  += momentum·(var·M/(M−1) − running_var)     (M = N·I, unbiased)
// The variance is a second pass over x around the mean (no E[x²] − E[x]² cancellation).
//
// Bindings (group 0):
//   0  uniform          Params {N, momentum: f32}
//   1  storage, read    x: array<f32>         N·C·I
//   2  storage, rw      stats: array<f32>     2·C
//   3  storage, rw      running: array<f32>   2·C  [mean | var]
// Dispatch: one workgroup of 64 per channel; fixed-order tree sums in workgroup memory.

struct Params {
  N: u32,
  momentum: f32,
}

// Shape values divided by per element are override constants (fixed per pipeline): on CPU
// drivers a division by a uniform costs more than the rest of the kernel.
override C: u32;
override I: u32;

const WG = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> stats: array<f32>;
@group(0) @binding(3) var<storage, read_write> running: array<f32>;

var<workgroup> partial: array<f32, WG>;

fn channelSum(lid: u32) -> f32 {
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      partial[lid] += partial[lid + stride];
    }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let c = wid.x;
  let M = p.N * I;
  var s = 0.0;
  for (var t = lid; t < M; t += WG) {
    let n = t / I;
    s += x[(n * C + c) * I + (t - n * I)];
  }
  partial[lid] = s;
  let mean = channelSum(lid) / f32(M);
  var q = 0.0;
  for (var t = lid; t < M; t += WG) {
    let n = t / I;
    let d = x[(n * C + c) * I + (t - n * I)] - mean;
    q += d * d;
  }
  partial[lid] = q;
  let sq = channelSum(lid);
  if (lid == 0u) {
    let variance = sq / f32(M);
    stats[c] = mean;
    stats[C + c] = variance;
    let unbiased = sq / f32(max(M, 2u) - 1u);
    running[c] += p.momentum * (mean - running[c]);
    running[C + c] += p.momentum * (unbiased - running[C + c]);
  }
}
