// The per-image record of the packed preprocessing input (NOTE [ Packed preprocessing input ] in
// src/gpu/pack.ts), read by both preprocessing kernels: their owners put this text before theirs,
// which declare `src: array<u32>` (WGSL has no includes).

struct Record {
  offset: u32,   // bytes from the start of src
  width: u32,
  height: u32,
  channels: u32,
  mirror: bool,
  crop: vec4<f32>, // x0, y0, w, h in source pixels
}

fn record(b: u32) -> Record {
  let rec = b * 8u;
  let flags = src[rec + 3u];
  return Record(src[rec], src[rec + 1u], src[rec + 2u], flags & 0xfu, (flags & 0x100u) != 0u,
    vec4<f32>(bitcast<f32>(src[rec + 4u]), bitcast<f32>(src[rec + 5u]), bitcast<f32>(src[rec + 6u]), bitcast<f32>(src[rec + 7u])));
}
