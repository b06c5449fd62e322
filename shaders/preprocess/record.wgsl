// The per-image record of the packed preprocessing input (NOTE [ Packed preprocessing input ] in
// src/gpu/pack.ts), read by both preprocessing kernels: their owners put this text before theirs,
// which declare `src: array<u32>` (WGSL has no includes).

struct Record {
  offset: u32,   // bytes from the start of src
  width: u32,
  height: u32,
  channels: u32,
  mirror: bool,
  crop: vec4<f32>, // x0, y0, w, h in the frame's pixels
  origin: vec2<u32>, // where the pixels lie in their frame (a box decoded alone); 0 for a whole image
}

fn record(b: u32) -> Record {
  let rec = b * 8u;
  let flags = src[rec + 3u];
  let w = src[rec + 1u];
  let h = src[rec + 2u];
  return Record(src[rec], w & 0xffffu, h & 0xffffu, flags & 0xfu, (flags & 0x100u) != 0u,
    vec4<f32>(bitcast<f32>(src[rec + 4u]), bitcast<f32>(src[rec + 5u]), bitcast<f32>(src[rec + 6u]), bitcast<f32>(src[rec + 7u])),
    vec2<u32>(w >> 16u, h >> 16u));
}
