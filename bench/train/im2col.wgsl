// im2col (benchmark only, the alternative to conv2d_fwd.wgsl's implicit GEMM): unfolds x
// [N,C,H,W] into cols [N·OH·OW, C·KH·KW] (stride 1, zero padding P), so that
// y = cols · wᵀ is one gemm.wgsl call (giving NHWC rows).
//
// Bindings (group 0):
//   0  uniform          Params {N, C, H, W, K, KH, KW, P, OH, OW}
//   1  storage, read    x: array<f32>
//   2  storage, rw      cols: array<f32>
// Dispatch: one invocation per value of cols, workgroups of 256 over x then y.

struct Params {
  N: u32, C: u32, H: u32, W: u32,
  K: u32, KH: u32, KW: u32, P: u32,
  OH: u32, OW: u32, _a: u32, _b: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> cols: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  let taps = p.C * p.KH * p.KW;
  if (i >= p.N * p.OH * p.OW * taps) {
    return;
  }
  let row = i / taps;
  let t = i - row * taps;
  let plane = p.OH * p.OW;
  let n = row / plane;
  let rem = row - n * plane;
  let oh = rem / p.OW;
  let ow = rem - oh * p.OW;
  let c = t / (p.KH * p.KW);
  let r = t - c * p.KH * p.KW;
  let kh = r / p.KW;
  let ih = i32(oh + kh) - i32(p.P);
  let iw = i32(ow + r - kh * p.KW) - i32(p.P);
  var v = 0.0;
  if (ih >= 0 && ih < i32(p.H) && iw >= 0 && iw < i32(p.W)) {
    v = x[((n * p.C + c) * p.H + u32(ih)) * p.W + u32(iw)];
  }
  cols[i] = v;
}
