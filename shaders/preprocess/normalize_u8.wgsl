// normalize_u8: bytes (HWC, any channel count ≤ 4) → f32, out = byte * scale[c] + bias[c]
// where scale = 1 / (255 * std) and bias = -mean / std, c = index % channels.
//
// Bindings (group 0):
//   0  uniform          Params
//   1  storage, read    src: array<u32>   the bytes, 4 per word, little-endian
//   2  storage, rw      dst: array<f32>   count values
// Dispatch: one invocation per source word (4 bytes), workgroups of 256 laid out in 2D
//   (x ≤ 65535) so that batches over 64 M bytes still fit; see src/gpu/normalize.ts.

struct Params {
  count: u32,      // bytes to convert
  channels: u32,   // 1..4
  rowWords: u32,   // words covered by one row of workgroups (numWorkgroups.x * 256)
  _pad: u32,
  scale: vec4<f32>,
  bias: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let word = gid.x + gid.y * params.rowWords;
  let first = word * 4u;
  if (first >= params.count) {
    return;
  }
  let packed = src[word];
  for (var k = 0u; k < 4u; k = k + 1u) {
    let i = first + k;
    if (i < params.count) {
      let c = i % params.channels;
      let byte = f32((packed >> (8u * k)) & 0xffu);
      dst[i] = byte * params.scale[c] + params.bias[c];
    }
  }
}
