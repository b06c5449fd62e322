// mask_nearest: the masks of a batch (u8 HWC, blob labels decoded by the read path) → one u32
// tensor [batch, outH, outW], cropped and mirrored exactly as their images were (the same
// plans, scaled to each mask's size by src/gpu/preprocess.ts) and resampled by nearest
// neighbour, since a mask's values are classes and must not blend. The value is the mask's
// first channel (grey masks; a colour mask's red). The geometric augmentations move it as they
// move the image (shaders/preprocess/warp.wgsl, the same table); where they bring in pixels from
// outside, the mask is 0.
//
// Nearest, per axis, with s = crop length / output length:
//   source index of output pixel o = clamp(floor(crop0 + (o + 0.5) * s), 0, n - 1)
// (the output pixel's centre, as PIL's NEAREST).
//
// Bindings (group 0):
//   0  uniform          Params (the image kernel's: outW, outH first)
//   1  storage, read    src: array<u32>   the packed masks (NOTE [ Packed preprocessing input ] in pack.ts)
//   2  storage, rw      dst: array<u32>   batch × outH × outW values
//   3  storage, read    aug: array<u32>   the batch's augmentation table (warp.wgsl)
// Dispatch: (ceil(outW·outH / 64), batch, 1) workgroups of 64.

struct Params {
  outW: u32,
  outH: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn byteAt(i: u32) -> u32 {
  return (src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn nearest(o: f32, crop0: f32, cropLen: f32, outLen: u32, n: u32) -> u32 {
  let t = crop0 + (o + 0.5) * (cropLen / f32(outLen));
  return u32(clamp(i32(floor(t)), 0, i32(n) - 1));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let outW = params.outW;
  let outH = params.outH;
  let pixel = gid.x;
  if (pixel >= outW * outH) {
    return;
  }
  let b = gid.y;
  let r = record(b); // shaders/preprocess/record.wgsl

  let back = warpBack(b, pixel, outW, outH);
  if (back.z == 0.0) {
    dst[b * outW * outH + pixel] = 0u;
    return;
  }
  var ox = back.x;
  if (r.mirror) {
    ox = f32(outW) - 1.0 - ox;
  }
  let x = nearest(ox, r.crop.x, r.crop.z, outW, r.width);
  let y = nearest(back.y, r.crop.y, r.crop.w, outH, r.height);
  dst[b * outW * outH + pixel] = byteAt(r.offset + (y * r.width + x) * r.channels);
}
