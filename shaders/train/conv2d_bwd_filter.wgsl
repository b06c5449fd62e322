// conv2d_bwd_filter: the weight gradient of conv2d_fwd (stride 1, padding P), split over the
// batch: part[s,co,t] = Σ_{n in split s} Σ_{oh,ow} dy[n,co,oh,ow] · x[n,ci,oh+kh-P,ow+kw-P]
//   where t = (ci·KH + kh)·KW + kw. With one split this is dw itself; with S splits
//   sum_axes.wgsl adds the S partial results (more workgroups for wide GPUs, same order of
//   additions every run: no atomics).
//
// Bindings (group 0):
//   0  uniform          Params {N, C (in), H, W, K (out), KH, KW, P, OH, OW, S (splits)}
//   1  storage, read    dy: array<f32>     N·K·OH·OW
//   2  storage, read    x: array<f32>      N·C·H·W
//   3  storage, rw      part: array<f32>   S·K·C·KH·KW
// Dispatch: workgroup (x, y, z) computes output channels y·RC … y·RC+RC-1 for taps
//   x·WG·RT + lane + j·WG (j < RT), over the samples of split z. dy reads are broadcast.

struct Params {
  N: u32, C: u32, H: u32, W: u32,
  K: u32, KH: u32, KW: u32, P: u32,
  OH: u32, OW: u32, S: u32, _b: u32,
}

override WG: u32 = 16u;
override RT: u32 = 4u; // taps per invocation, ≤ MAX_R
override RC: u32 = 8u; // output channels per invocation, ≤ MAX_R
const MAX_R = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> part: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let taps = p.C * p.KH * p.KW;
  let plane = p.H * p.W;
  let oplane = p.OH * p.OW;
  let k0 = wid.y * RC;
  // Per tap: its input channel's offset and its (kh, kw) shift.
  var xoff: array<u32, MAX_R>;
  var dh: array<i32, MAX_R>;
  var dw: array<i32, MAX_R>;
  for (var j = 0u; j < RT; j++) {
    let t = min(wid.x * WG * RT + lid.x + j * WG, taps - 1u);
    let ci = t / (p.KH * p.KW);
    let r = t - ci * p.KH * p.KW;
    let kh = r / p.KW;
    xoff[j] = ci * plane;
    dh[j] = i32(kh) - i32(p.P);
    dw[j] = i32(r - kh * p.KW) - i32(p.P);
  }
  var kk: array<u32, MAX_R>;
  for (var c = 0u; c < RC; c++) {
    kk[c] = min(k0 + c, p.K - 1u);
  }
  let per = (p.N + p.S - 1u) / p.S;
  let n0 = wid.z * per;
  let n1 = min(n0 + per, p.N);
  var acc: array<array<f32, MAX_R>, MAX_R>;
  for (var n = n0; n < n1; n++) {
    let xn = n * p.C * plane;
    let gn = n * p.K * oplane;
    for (var oh = 0u; oh < p.OH; oh++) {
      for (var ow = 0u; ow < p.OW; ow++) {
        var xv: array<f32, MAX_R>;
        for (var j = 0u; j < RT; j++) {
          let ih = i32(oh) + dh[j];
          let iw = i32(ow) + dw[j];
          var v = 0.0;
          if (ih >= 0 && ih < i32(p.H) && iw >= 0 && iw < i32(p.W)) {
            v = x[xn + xoff[j] + u32(ih) * p.W + u32(iw)];
          }
          xv[j] = v;
        }
        let o = gn + oh * p.OW + ow;
        for (var c = 0u; c < RC; c++) {
          let g = dy[o + kk[c] * oplane];
          for (var j = 0u; j < RT; j++) {
            acc[c][j] = fma(g, xv[j], acc[c][j]);
          }
        }
      }
    }
  }
  for (var j = 0u; j < RT; j++) {
    let t = wid.x * WG * RT + lid.x + j * WG;
    for (var c = 0u; c < RC; c++) {
      let k = k0 + c;
      if (t < taps && k < p.K) {
        part[(wid.z * p.K + k) * taps + t] = acc[c][j];
      }
    }
  }
}
