// maxpool_bwd: dx[i] = dy[o] if input i won its window o in maxpool_fwd, else 0. Windows do
// not overlap, so each input has at most one window: one write per input, no atomics, and no
// separate zero fill.
//   With RELU_GATE, dx[i] is also 0 where x[i] ≤ 0: x is the output of a fused ReLU, so this
//   is that ReLU's backward (relu_bwd) done in the same pass.
//
// Bindings (group 0):
//   0  storage, read    dy: array<f32>      N·C·OH·OW
//   1  storage, read    arg: array<u32>     N·C·OH·OW
//   2  storage, rw      dx: array<f32>      N·C·H·W
//   3  storage, read    x: array<f32>       N·C·H·W, the pooled input (read only when RELU_GATE)
// Dispatch: one invocation per input element, workgroups of 256 over x then y.

// The geometry is fixed per pipeline (override constants), so that the divisions below
// compile to multiplications: on CPU drivers a division by a uniform costs more than the
// rest of the kernel.
override COUNT: u32;
override H: u32;
override W: u32;
override OH: u32;
override OW: u32;
override S: u32;
override RELU_GATE: bool = false;

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> arg: array<u32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= COUNT) {
    return;
  }
  let plane = H * W;
  let nc = i / plane;
  let rem = i - nc * plane;
  let oh = (rem / W) / S;
  let ow = (rem % W) / S;
  var g = 0.0;
  if (oh < OH && ow < OW) {
    let o = (nc * OH + oh) * OW + ow;
    if (arg[o] == i && (!RELU_GATE || x[i] > 0.0)) {
      g = dy[o];
    }
  }
  dx[i] = g;
}
