// blur: torchvision's GaussianBlur over the augmented tensor (src/decode/augment.ts's NOTE
// [ Augmentations ]; owner src/gpu/augment.ts), for the images whose table entry has a sigma:
// a separable kernel of KSIZE taps, w_i ∝ exp(−½·(x_i / σ)²), x_i = i − (KSIZE − 1) / 2,
// normalized, the image extended by reflection (torch's "reflect": …, 2, 1 | 0, 1, 2, … | …).
// The pass runs on normalized values: blur and (v − mean) / std commute, the weights summing
// to 1. The blurred images' erased box is written here, after the blur, not by augment.wgsl.
//   across: dst (scratch) = src (tensor) blurred along rows;  down: dst (tensor) = src (scratch)
//   blurred along columns, then the erased box. Images without a sigma are left alone.
//
// Bindings (group 0): 0 uniform Params; 1 storage, read src: array<f32>; 2 storage, rw
//   dst: array<f32>; 3 the augmentation table (warp.wgsl, put before this text): words 32
//   sigma (f32; 0: no blur), 33 the kernel's taps, 9-15 the erased box and its values.
// Dispatch: grid(n·c·h·w, 64), one value an invocation (row length in Params).

override NCHW: bool = true;

struct Params {
  n: u32,
  channels: u32,
  height: u32,
  width: u32,
  rowLength: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

// Torch's reflect padding of index i into [0, n − 1] (n = 1: 0).
fn mirrorIndex(i: i32, n: i32) -> i32 {
  if (n == 1) {
    return 0;
  }
  let period = 2 * (n - 1);
  var j = i % period;
  if (j < 0) {
    j = j + period;
  }
  return select(j, period - j, j >= n);
}

// Element e as (image, channel, y, x), and the index of (image, channel, y', x').
struct At {
  b: u32,
  c: u32,
  y: u32,
  x: u32,
}

fn locate(e: u32) -> At {
  let per = p.channels * p.height * p.width;
  let b = e / per;
  let k = e % per;
  if (NCHW) {
    return At(b, k / (p.height * p.width), (k / p.width) % p.height, k % p.width);
  }
  return At(b, k % p.channels, k / (p.channels * p.width), (k / p.channels) % p.width);
}

fn indexOf(a: At, y: u32, x: u32) -> u32 {
  let per = p.channels * p.height * p.width;
  if (NCHW) {
    return a.b * per + (a.c * p.height + y) * p.width + x;
  }
  return a.b * per + (y * p.width + x) * p.channels + a.c;
}

// The blur of element a along one axis (rows: along x), or the element itself without a sigma.
fn blurred(a: At, rows: bool) -> f32 {
  let base = a.b * AUG_WORDS;
  let sigma = bitcast<f32>(aug[base + 32u]);
  if (sigma <= 0.0) {
    return src[indexOf(a, a.y, a.x)];
  }
  let taps = i32(aug[base + 33u]);
  let mid = f32(taps - 1) * 0.5;
  var sum = 0.0;
  var wsum = 0.0;
  for (var i = 0; i < taps; i = i + 1) {
    let t = (f32(i) - mid) / sigma;
    let w = exp(-0.5 * t * t);
    wsum = wsum + w;
    let d = i - (taps - 1) / 2;
    if (rows) {
      sum = sum + w * src[indexOf(a, a.y, u32(mirrorIndex(i32(a.x) + d, i32(p.width))))];
    } else {
      sum = sum + w * src[indexOf(a, u32(mirrorIndex(i32(a.y) + d, i32(p.height))), a.x)];
    }
  }
  return sum / wsum;
}

@compute @workgroup_size(64)
fn across(@builtin(global_invocation_id) gid: vec3<u32>) {
  let e = gid.x + gid.y * p.rowLength;
  if (e >= p.n * p.channels * p.height * p.width) {
    return;
  }
  let a = locate(e);
  if (bitcast<f32>(aug[a.b * AUG_WORDS + 32u]) > 0.0) {
    dst[e] = blurred(a, true);
  }
}

@compute @workgroup_size(64)
fn down(@builtin(global_invocation_id) gid: vec3<u32>) {
  let e = gid.x + gid.y * p.rowLength;
  if (e >= p.n * p.channels * p.height * p.width) {
    return;
  }
  let a = locate(e);
  let base = a.b * AUG_WORDS;
  if (bitcast<f32>(aug[base + 32u]) <= 0.0) {
    return;
  }
  var v = blurred(a, false);
  if (a.x >= aug[base + 9u] && a.x < aug[base + 9u] + aug[base + 11u] && a.y >= aug[base + 10u] && a.y < aug[base + 10u] + aug[base + 12u]) {
    v = bitcast<f32>(aug[base + 13u + a.c]);
  }
  dst[e] = v;
}
