// maxpool_bwd: dx[i] = dy[o] if input i won its window o in maxpool_fwd, else 0. Windows do
// not overlap, so each input has at most one window: one write per input, no atomics, and no
// separate zero fill.
//
// Bindings (group 0):
//   0  uniform          Params {count = N·C·H·W, H, W, OH, OW, S}
//   1  storage, read    dy: array<f32>      N·C·OH·OW
//   2  storage, read    arg: array<u32>     N·C·OH·OW
//   3  storage, rw      dx: array<f32>      N·C·H·W
// Dispatch: one invocation per input element, workgroups of 256 over x then y.

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
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> arg: array<u32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.count) {
    return;
  }
  let plane = p.H * p.W;
  let nc = i / plane;
  let rem = i - nc * plane;
  let oh = (rem / p.W) / p.S;
  let ow = (rem % p.W) / p.S;
  var g = 0.0;
  if (oh < p.OH && ow < p.OW) {
    let o = (nc * p.OH + oh) * p.OW + ow;
    if (arg[o] == i) {
      g = dy[o];
    }
  }
  dx[i] = g;
}
