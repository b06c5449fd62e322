// augment: the preprocessing pass with each sample's geometric ops, colour ops and erased box
// (planned on the CPU by src/decode/augment.ts, whose NOTE [ Augmentations ] defines every op
// against torchvision's; owner src/gpu/augment.ts). Per output pixel: its position mapped back
// through the geometric ops (fill where it leaves the image), then sample.wgsl's crop, mirror
// and resampling there, / 255, the colour ops in the sample's order, (v - mean) / std, then the
// erased box.
// A contrast step blends towards its image's grey mean at that point of the chain: the mean
// is a reduction over the whole image, so `grey_mean` computes it first, one dispatch per
// contrast step (SLOT), each resampling the image and running the steps before it.
//
// Bindings: sample.wgsl's (params: here scale = 1 / std, bias = -mean / std; src; dst), then
//   3  storage, read    aug: array<u32>    AUG_WORDS words per image:
//        0 steps (≤ 7), 1 op codes (4 bits a step, step 0 lowest), 2-8 factors (f32),
//        9-12 erased box x, y, w, h (output pixels; w = 0: none), 13-15 erase values (f32),
//        16-31 the geometric ops and fill (shaders/preprocess/warp.wgsl, put before this text)
//   4  storage, rw      means: array<f32>  MEANS × PARTS per image: for each contrast step, the
//        sums of grey over PARTS slices of the image (their total / pixels is the mean)
// Entry points:
//   grey_mean  (PARTS, batch, 1) workgroups of 256: a slice of image b's sum for its SLOT-th
//              contrast step (PARTS workgroups an image, so that a batch fills a large GPU)
//   main       (ceil(outW·outH / 64), batch, 1) workgroups of 64, as crop_resize_normalize's

override SLOT: u32 = 0u;
const MEANS: u32 = 2u;
const PARTS: u32 = 16u;
const OP_BRIGHTNESS: u32 = 1u;
const OP_CONTRAST: u32 = 2u;
const OP_SATURATION: u32 = 3u;
const OP_HUE: u32 = 4u;
const OP_SOLARIZE: u32 = 5u;
const OP_POSTERIZE: u32 = 6u;

@group(0) @binding(4) var<storage, read_write> means: array<f32>;

// torchvision's rgb_to_grayscale; one output channel is its own grey.
fn grey(v: vec3<f32>) -> f32 {
  if (OUT_CHANNELS == 1u) {
    return v.x;
  }
  return dot(v, vec3<f32>(0.2989, 0.587, 0.114));
}

fn blend(v: vec3<f32>, to: f32, f: f32) -> vec3<f32> {
  return clamp(f * v + (1.0 - f) * to, vec3<f32>(0.0), vec3<f32>(1.0));
}

// torchvision's adjust_hue: _rgb2hsv, h shifted mod 1, _hsv2rgb.
fn shiftHue(v: vec3<f32>, f: f32) -> vec3<f32> {
  let maxc = max(v.x, max(v.y, v.z));
  let minc = min(v.x, min(v.y, v.z));
  let isFlat = maxc == minc;
  let chroma = maxc - minc;
  let s = chroma / select(maxc, 1.0, isFlat);
  let d = select(chroma, 1.0, isFlat);
  let c = (vec3<f32>(maxc) - v) / d;
  var h: f32;
  if (maxc == v.x) {
    h = c.z - c.y;
  } else if (maxc == v.y) {
    h = 2.0 + c.x - c.z;
  } else {
    h = 4.0 + c.y - c.x;
  }
  h = fract(h / 6.0 + 1.0);
  h = h + f;
  h = h - floor(h);
  let i6 = floor(h * 6.0);
  let fr = h * 6.0 - i6;
  let p = clamp(maxc * (1.0 - s), 0.0, 1.0);
  let q = clamp(maxc * (1.0 - s * fr), 0.0, 1.0);
  let t = clamp(maxc * (1.0 - s * (1.0 - fr)), 0.0, 1.0);
  switch (u32(i6) % 6u) {
    case 0u: { return vec3<f32>(maxc, t, p); }
    case 1u: { return vec3<f32>(q, maxc, p); }
    case 2u: { return vec3<f32>(p, maxc, t); }
    case 3u: { return vec3<f32>(p, q, maxc); }
    case 4u: { return vec3<f32>(t, p, maxc); }
    default: { return vec3<f32>(maxc, p, q); }
  }
}

fn applyOp(v: vec3<f32>, op: u32, f: f32, mean: f32) -> vec3<f32> {
  switch (op) {
    case OP_BRIGHTNESS: { return clamp(f * v, vec3<f32>(0.0), vec3<f32>(1.0)); }
    case OP_CONTRAST: { return blend(v, mean, f); }
    case OP_SATURATION: {
      if (OUT_CHANNELS == 1u) {
        return v;
      }
      return blend(v, grey(v), f);
    }
    case OP_HUE: {
      if (OUT_CHANNELS == 1u) {
        return v;
      }
      return shiftHue(v, f);
    }
    case OP_SOLARIZE: { return select(v, 1.0 - v, v >= vec3<f32>(f)); }
    case OP_POSTERIZE: {
      let levels = exp2(f);
      return clamp(floor(v * levels), vec3<f32>(0.0), vec3<f32>(levels - 1.0)) / levels;
    }
    default: { return v; }
  }
}

// Image b's first `count` steps on v; contrast steps take their means in order.
fn steps(b: u32, v0: vec3<f32>, count: u32) -> vec3<f32> {
  let base = b * AUG_WORDS;
  let codes = aug[base + 1u];
  var v = v0;
  var slot = 0u;
  for (var i = 0u; i < count; i = i + 1u) {
    let op = (codes >> (4u * i)) & 0xfu;
    var mean = 0.0;
    if (op == OP_CONTRAST) {
      mean = meanOf(b, slot);
      slot = slot + 1u;
    }
    v = applyOp(v, op, bitcast<f32>(aug[base + 2u + i]), mean);
  }
  return v;
}

// The sample of output pixel `pixel` in [0, 1], as the tensor's channels hold it: through the
// geometric ops, last first, back to a position in the crop, or the fill where one leaves it.
fn unit(b: u32, pixel: u32) -> vec3<f32> {
  let base = b * AUG_WORDS;
  if (aug[base + 16u] == 0u) {
    return outChannels(b, sample(b, pixel)) / 255.0;
  }
  let back = warpBack(b, pixel, params.outW, params.outH);
  if (back.z == 0.0) {
    return vec3<f32>(word(base + 29u), word(base + 30u), word(base + 31u));
  }
  let size = vec2<f32>(f32(params.outW), f32(params.outH));
  var q = back.xy;
  let r = record(b);
  if (r.mirror) {
    q.x = size.x - 1.0 - q.x;
  }
  let s = r.crop.zw / size;
  let ax = axisAt(r.crop.x + (q.x + 0.5) * s.x - 0.5, s.x, r.width, r.origin.x);
  let ay = axisAt(r.crop.y + (q.y + 0.5) * s.y - 0.5, s.y, r.height, r.origin.y);
  return outChannels(b, gather(r, ax, ay)) / 255.0;
}

// Image b's grey mean at its slot-th contrast step: the slices' sums, added in a fixed order.
fn meanOf(b: u32, slot: u32) -> f32 {
  let at = (b * MEANS + slot) * PARTS;
  var sum = 0.0;
  for (var g = 0u; g < PARTS; g = g + 1u) {
    sum = sum + means[at + g];
  }
  return sum / f32(params.outW * params.outH);
}

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn grey_mean(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let b = wid.y;
  let base = b * AUG_WORDS;
  let count = aug[base];
  let codes = aug[base + 1u];
  // Which step is this image's SLOT-th contrast (count when it has none).
  var at = count;
  var seen = 0u;
  for (var i = 0u; i < count; i = i + 1u) {
    if (((codes >> (4u * i)) & 0xfu) == OP_CONTRAST) {
      if (seen == SLOT && at == count) {
        at = i;
      }
      seen = seen + 1u;
    }
  }
  let n = params.outW * params.outH;
  var sum = 0.0;
  if (at < count) {
    for (var p = wid.x * 256u + lid.x; p < n; p = p + 256u * PARTS) {
      sum = sum + grey(steps(b, unit(b, p), at));
    }
  }
  partial[lid.x] = sum;
  workgroupBarrier();
  for (var stride = 128u; stride > 0u; stride = stride >> 1u) {
    if (lid.x < stride) {
      partial[lid.x] = partial[lid.x] + partial[lid.x + stride];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u && at < count) {
    means[(b * MEANS + SLOT) * PARTS + wid.x] = partial[0];
  }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let pixel = gid.x;
  let outW = params.outW;
  if (pixel >= outW * params.outH) {
    return;
  }
  let b = gid.y;
  let base = b * AUG_WORDS;
  var v = steps(b, unit(b, pixel), aug[base]) * params.scale.xyz + params.bias.xyz;
  let x = pixel % outW;
  let y = pixel / outW;
  let ex = aug[base + 9u];
  let ey = aug[base + 10u];
  // A blurred image's box is erased after the blur (blur.wgsl).
  let blurs = bitcast<f32>(aug[base + 32u]) > 0.0;
  if (!blurs && x >= ex && x < ex + aug[base + 11u] && y >= ey && y < ey + aug[base + 12u]) {
    v = vec3<f32>(bitcast<f32>(aug[base + 13u]), bitcast<f32>(aug[base + 14u]), bitcast<f32>(aug[base + 15u]));
  }
  put(b, pixel, v);
}
