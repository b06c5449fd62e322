// gather_rows: out[b, :] = src[index[b], :], rows of L 32-bit words copied bit for bit (f32
// images or u32 labels). Makes a shuffled batch from a dataset kept on the GPU (the --no-io
// upper bound of train.ts): only the B indices cross the bus per step.
//
// Bindings (group 0):
//   0  uniform          Params {count = B·L}
//   1  storage, read    src: array<u32>     rows·L
//   2  storage, read    index: array<u32>   B
//   3  storage, rw      out: array<u32>     B·L
// Dispatch: one invocation per output word, workgroups of 256 over x then y.

struct Params {
  count: u32,
}

// Shape values divided by per element are override constants (fixed per pipeline): on CPU
// drivers a division by a uniform costs more than the rest of the kernel.
override L: u32;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < p.count) {
    let b = i / L;
    out[i] = src[index[b] * L + (i - b * L)];
  }
}
