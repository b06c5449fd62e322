// maxpool_fwd: y[n,c,oh,ow] = max over the S×S window at (oh·S, ow·S) of x[n,c,·,·], windows
// not overlapping (stride = size S, no padding; rows/columns past OH·S, OW·S are dropped).
// Also writes which input element won (flat index into x; the first one on ties) for
// maxpool_bwd.
//
// Bindings (group 0):
//   0  storage, read    x: array<f32>       N·C·H·W
//   1  storage, rw      y: array<f32>       N·C·OH·OW
//   2  storage, rw      arg: array<u32>     N·C·OH·OW
// Dispatch: one invocation per output, workgroups of 256 over x then y.

// The geometry is fixed per pipeline (override constants), so that the divisions below
// compile to multiplications: on CPU drivers a division by a uniform costs more than the
// rest of the kernel.
override COUNT: u32;
override H: u32;
override W: u32;
override OH: u32;
override OW: u32;
override S: u32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> arg: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let o = gid.x + gid.y * nwg.x * 256u;
  if (o >= COUNT) {
    return;
  }
  let plane = OH * OW;
  let nc = o / plane;
  let rem = o - nc * plane;
  let oh = rem / OW;
  let ow = rem - oh * OW;
  let first = (nc * H + oh * S) * W + ow * S;
  var best = x[first];
  var at = first;
  for (var dh = 0u; dh < S; dh++) {
    for (var dw = 0u; dw < S; dw++) {
      let i = first + dh * W + dw;
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
