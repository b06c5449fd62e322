// The augmentation table and the geometric ops' walk back, shared by augment.wgsl and
// mask_nearest.wgsl (their owners put this text before theirs: WGSL has no includes), so that
// a mask moves exactly as its image.
//
//   3  storage, read    aug: array<u32>    AUG_WORDS words per image (src/gpu/augment.ts
//        writes them; augment.wgsl lists the colour words): 16 geometric ops (≤ 2), 17-22
//        and 23-28 their inverse matrices (f32, torchvision's [a, b, c, d, e, f], from the
//        image's centre), 29-31 the fill (f32, in [0, 1]); 32-33 the blur (blur.wgsl)

const AUG_WORDS: u32 = 40u;

@group(0) @binding(3) var<storage, read> aug: array<u32>;

fn word(i: u32) -> f32 {
  return bitcast<f32>(aug[i]);
}

// Where output pixel `pixel` of image b comes from, in the output's pixels before the geometric
// ops: each op's matrix, last op first; w = 0 where a step leaves the image (at or past half a
// pixel beyond its edge pixels), else 1.
fn warpBack(b: u32, pixel: u32, outW: u32, outH: u32) -> vec3<f32> {
  let base = b * AUG_WORDS;
  let size = vec2<f32>(f32(outW), f32(outH));
  let centre = size * 0.5 - 0.5;
  var q = vec2<f32>(f32(pixel % outW), f32(pixel / outW));
  for (var k = aug[base + 16u]; k > 0u; k = k - 1u) {
    let m = base + 17u + (k - 1u) * 6u;
    let c = q - centre;
    q = vec2<f32>(word(m) * c.x + word(m + 1u) * c.y + word(m + 2u), word(m + 3u) * c.x + word(m + 4u) * c.y + word(m + 5u)) + centre;
    if (any(q < vec2<f32>(-0.5)) || any(q >= size - 0.5)) {
      return vec3<f32>(q, 0.0);
    }
  }
  return vec3<f32>(q, 1.0);
}
