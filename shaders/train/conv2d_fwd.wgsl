// conv2d_fwd: y[n,co,oh,ow] = Σ_{ci,kh,kw} x[n,ci,oh+kh-P,ow+kw-P] · w[co,ci,kh,kw] (+ bias[co])
//   (then ReLU); stride 1, zero padding P, NCHW f32. Implicit GEMM: no im2col buffer.
//
// Bindings (group 0):
//   0  uniform          Params {N, C (in), H, W, K (out), KH, KW, P, OH, OW}
//   1  storage, read    x: array<f32>      N·C·H·W
//   2  storage, read    w: array<f32>      K·C·KH·KW
//   3  storage, read    bias: array<f32>   K (read only when BIAS)
//   4  storage, rw      y: array<f32>      N·K·OH·OW
// Dispatch: workgroups of WG invocations; workgroup (x, y) computes output channels
//   y·RC … y·RC+RC-1 for the output pixels (flattened over n, oh, ow) x·WG·RP + lane + r·WG,
//   r < RP. The weight reads are the same for every invocation of a workgroup (broadcast on
//   CPU drivers, see gemm.wgsl); each input read serves RC channels.

struct Params {
  N: u32, C: u32, H: u32, W: u32,
  K: u32, KH: u32, KW: u32, P: u32,
  OH: u32, OW: u32, _a: u32, _b: u32,
}

override BIAS: bool = false;
override RELU: bool = false;
override WG: u32 = 16u;
override RP: u32 = 4u; // pixels per invocation, ≤ MAX_R
override RC: u32 = 8u; // output channels per invocation, ≤ MAX_R
const MAX_R = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let plane = p.OH * p.OW;
  let pixels = p.N * plane;
  let k0 = wid.y * RC;
  // Per pixel: where its window starts in x (as signed rows/cols: padding goes negative).
  var base: array<u32, MAX_R>;
  var ih0: array<i32, MAX_R>;
  var iw0: array<i32, MAX_R>;
  for (var r = 0u; r < RP; r++) {
    let px = min(wid.x * WG * RP + lid.x + r * WG, pixels - 1u);
    let n = px / plane;
    let rem = px - n * plane;
    let oh = rem / p.OW;
    base[r] = n * p.C * p.H * p.W;
    ih0[r] = i32(oh) - i32(p.P);
    iw0[r] = i32(rem - oh * p.OW) - i32(p.P);
  }
  var kk: array<u32, MAX_R>;
  for (var c = 0u; c < RC; c++) {
    kk[c] = min(k0 + c, p.K - 1u);
  }
  var acc: array<array<f32, MAX_R>, MAX_R>;
  let taps = p.KH * p.KW;
  for (var ci = 0u; ci < p.C; ci++) {
    for (var kh = 0u; kh < p.KH; kh++) {
      for (var kw = 0u; kw < p.KW; kw++) {
        var xv: array<f32, MAX_R>;
        for (var r = 0u; r < RP; r++) {
          let ih = ih0[r] + i32(kh);
          let iw = iw0[r] + i32(kw);
          var v = 0.0;
          if (ih >= 0 && ih < i32(p.H) && iw >= 0 && iw < i32(p.W)) {
            v = x[base[r] + (ci * p.H + u32(ih)) * p.W + u32(iw)];
          }
          xv[r] = v;
        }
        let tap = ci * taps + kh * p.KW + kw;
        for (var c = 0u; c < RC; c++) {
          let wv = w[kk[c] * p.C * taps + tap];
          for (var r = 0u; r < RP; r++) {
            acc[c][r] = fma(xv[r], wv, acc[c][r]);
          }
        }
      }
    }
  }
  for (var r = 0u; r < RP; r++) {
    let px = wid.x * WG * RP + lid.x + r * WG;
    if (px >= pixels) {
      continue;
    }
    let n = px / plane;
    let rem = px - n * plane;
    for (var c = 0u; c < RC; c++) {
      let k = k0 + c;
      if (k < p.K) {
        var v = acc[c][r];
        if (BIAS) {
          v += bias[k];
        }
        if (RELU) {
          v = max(v, 0.0);
        }
        y[(n * p.K + k) * plane + rem] = v;
      }
    }
  }
}
