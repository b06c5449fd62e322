// conv2d_bwd_data: the input gradient of conv2d_fwd (stride 1, padding P):
//   dx[n,ci,ih,iw] = Σ_{co,kh,kw} dy[n,co,ih+P-kh,iw+P-kw] · w[co,ci,kh,kw]
//   over the (oh, ow) = (ih+P-kh, iw+P-kw) inside the output.
//
// Bindings (group 0):
//   0  uniform          Params {N, C (in), H, W, K (out), KH, KW, P, OH, OW}
//   1  storage, read    dy: array<f32>     N·K·OH·OW
//   2  storage, read    w: array<f32>      K·C·KH·KW
//   3  storage, rw      dx: array<f32>     N·C·H·W
// Dispatch: as conv2d_fwd with the roles swapped: workgroup (x, y) computes input channels
//   y·RC … for input pixels x·WG·RP + lane + r·WG; weight reads are broadcast.

struct Params {
  N: u32, C: u32, H: u32, W: u32,
  K: u32, KH: u32, KW: u32, P: u32,
  OH: u32, OW: u32, _a: u32, _b: u32,
}

override WG: u32 = 16u;
override RP: u32 = 4u;
override RC: u32 = 8u;
const MAX_R = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let plane = p.H * p.W;
  let oplane = p.OH * p.OW;
  let pixels = p.N * plane;
  let c0 = wid.y * RC;
  var base: array<u32, MAX_R>;
  var oh0: array<i32, MAX_R>;
  var ow0: array<i32, MAX_R>;
  for (var r = 0u; r < RP; r++) {
    let px = min(wid.x * WG * RP + lid.x + r * WG, pixels - 1u);
    let n = px / plane;
    let rem = px - n * plane;
    let ih = rem / p.W;
    base[r] = n * p.K * oplane;
    oh0[r] = i32(ih) + i32(p.P);
    ow0[r] = i32(rem - ih * p.W) + i32(p.P);
  }
  var cc: array<u32, MAX_R>;
  for (var c = 0u; c < RC; c++) {
    cc[c] = min(c0 + c, p.C - 1u);
  }
  var acc: array<array<f32, MAX_R>, MAX_R>;
  let taps = p.KH * p.KW;
  for (var k = 0u; k < p.K; k++) {
    for (var kh = 0u; kh < p.KH; kh++) {
      for (var kw = 0u; kw < p.KW; kw++) {
        var gv: array<f32, MAX_R>;
        for (var r = 0u; r < RP; r++) {
          let oh = oh0[r] - i32(kh);
          let ow = ow0[r] - i32(kw);
          var v = 0.0;
          if (oh >= 0 && oh < i32(p.OH) && ow >= 0 && ow < i32(p.OW)) {
            v = dy[base[r] + k * oplane + u32(oh) * p.OW + u32(ow)];
          }
          gv[r] = v;
        }
        for (var c = 0u; c < RC; c++) {
          let wv = w[(k * p.C + cc[c]) * taps + kh * p.KW + kw];
          for (var r = 0u; r < RP; r++) {
            acc[c][r] = fma(gv[r], wv, acc[c][r]);
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
      let ci = c0 + c;
      if (ci < p.C) {
        dx[(n * p.C + ci) * plane + rem] = acc[c][r];
      }
    }
  }
}
