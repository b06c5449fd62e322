// mix: MixUp or CutMix over a batch tensor (src/decode/mix.ts's NOTE [ MixUp and CutMix ]; owner
// src/gpu/mix.ts): each image blends with the one before it in the batch (the first with the
// last), read from a copy of the tensor taken just before, so that every image mixes with its
// neighbour as it was.
//   MIXUP: dst = w·own + (1 − w)·other;  CutMix: inside the box dst = other, elsewhere unchanged.
//
// Bindings (group 0):
//   0  uniform          Params
//   1  storage, read    src: array<f32>   the tensor as it was
//   2  storage, rw      dst: array<f32>   the tensor, mixed in place
// Dispatch: grid(n·per, 64) (src/gpu/kernel.ts): one value an invocation.

override MIXUP: bool = true;
override NCHW: bool = true;

struct Params {
  n: u32,
  channels: u32,
  height: u32,
  width: u32,
  x1: u32,
  y1: u32,
  x2: u32,
  y2: u32,
  weight: f32,
  rowLength: u32, // invocations per grid row: num_workgroups.x · 64
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let per = p.channels * p.height * p.width;
  let e = gid.x + gid.y * p.rowLength;
  if (e >= p.n * per) {
    return;
  }
  let i = e / per;
  let k = e % per;
  let other = ((i + p.n - 1u) % p.n) * per + k;
  if (MIXUP) {
    dst[e] = p.weight * src[e] + (1.0 - p.weight) * src[other];
    return;
  }
  var x: u32;
  var y: u32;
  if (NCHW) {
    x = k % p.width;
    y = (k / p.width) % p.height;
  } else {
    x = (k / p.channels) % p.width;
    y = k / (p.channels * p.width);
  }
  if (x >= p.x1 && x < p.x2 && y >= p.y1 && y < p.y2) {
    dst[e] = src[other];
  }
}
