// maxpool_fwd: y[n,c,oh,ow] = max over the S×S window at (oh·S, ow·S) of x[n,c,·,·], windows
// not overlapping (stride = size S, no padding; rows/columns past OH·S, OW·S are dropped).
// Also writes which input element won (flat index into x; the first one on ties) for
// maxpool_bwd.
//
// Bindings (group 0):
//   0  uniform          Params {count = N·C·OH·OW, H, W, OH, OW, S}
//   1  storage, read    x: array<f32>       N·C·H·W
//   2  storage, rw      y: array<f32>       N·C·OH·OW
//   3  storage, rw      arg: array<u32>     N·C·OH·OW
// Dispatch: one invocation per output, workgroups of 256 over x then y.

struct Params {
  count: u32,
  H: u32,
  W: u32,
  OH: u32,
  OW: u32,
  S: u32,
  _a: u32,
  _b: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> arg: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let o = gid.x + gid.y * nwg.x * 256u;
  if (o >= p.count) {
    return;
  }
  let plane = p.OH * p.OW;
  let nc = o / plane;
  let rem = o - nc * plane;
  let oh = rem / p.OW;
  let ow = rem - oh * p.OW;
  let first = (nc * p.H + oh * p.S) * p.W + ow * p.S;
  var best = x[first];
  var at = first;
  for (var dh = 0u; dh < p.S; dh++) {
    for (var dw = 0u; dw < p.S; dw++) {
      let i = first + dh * p.W + dw;
      let v = x[i];
      if (v > best) {
        best = v;
        at = i;
      }
    }
  }
  y[o] = best;
  arg[o] = at;
}
