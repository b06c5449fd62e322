// The sampling half of the preprocessing pass, shared by its two kernels (their owners put this
// text after record.wgsl and before theirs: WGSL has no includes): crop_resize_normalize.wgsl
// writes each sample normalized; augment.wgsl runs the per-sample colour ops and erasing on it
// first (src/gpu/augment.ts).
//
// Per output pixel: crop box (from the per-image table, planned on the CPU by src/gpu/pack.ts),
// mirror, resample, gray→RGB.
//
// Resampling, per axis, with s = crop length / output length (the shrink factor):
//   centre of output pixel o in source pixels:  t = crop0 + (o + 0.5) * s - 0.5
//   support r = 1 (bilinear) when s <= ANTIALIAS_ABOVE, else r = s (PIL's antialiased
//   triangle filter: each source pixel weighs max(0, 1 - |j - t| / r)), taps clamped to the
//   image and the weights renormalized, which for r = 1 is bilinear with edge clamping.
//
// Bindings (group 0), the same in every kernel of the pass:
//   0  uniform          Params
//   1  storage, read    src: array<u32>   the packed batch: table, then pixels, 4 bytes a word
//                                         (NOTE [ Packed preprocessing input ] in pack.ts)
//   2  storage, rw      dst: array<f32>   batch × OUT_CHANNELS × outH × outW values

override NCHW: bool = true;         // false: NHWC
override OUT_CHANNELS: u32 = 3u;    // 1 or 3
override ANTIALIAS_ABOVE: f32 = 2.0;

struct Params {
  outW: u32,
  outH: u32,
  _pad0: u32,
  _pad1: u32,
  scale: vec4<f32>,
  bias: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn byteAt(i: u32) -> f32 {
  return f32((src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu);
}

// Taps [lo, hi], in the frame's pixels, clamped to the pixels held: [origin, origin + n - 1]
// (a whole image: origin 0). The box and t are the frame's, so a box decoded alone
// (src/decode/crop.ts planRegion: it holds every tap the whole image would give) reads the same
// taps with the same weights, bit for bit.
struct Axis {
  t: f32,
  r: f32,
  lo: i32,
  hi: i32,
}

fn axis(o: u32, crop0: f32, cropLen: f32, outLen: u32, n: u32, origin: u32) -> Axis {
  let s = cropLen / f32(outLen);
  return axisAt(crop0 + (f32(o) + 0.5) * s - 0.5, s, n, origin);
}

// The taps around source position t (in the frame's pixels) for a shrink factor s.
fn axisAt(t: f32, s: f32, n: u32, origin: u32) -> Axis {
  let r = select(1.0, s, s > ANTIALIAS_ABOVE);
  let first = i32(origin);
  let last = first + i32(n) - 1;
  // Taps with a weight > 0: |j - t| < r.
  var lo = max(i32(floor(t - r)) + 1, first);
  var hi = min(i32(ceil(t + r)) - 1, last);
  if (lo > hi) {
    // The box lies wholly outside the image: repeat the nearest edge pixel.
    lo = clamp(i32(round(t)), first, last);
    hi = lo;
    return Axis(f32(lo), 1.0, lo, hi);
  }
  return Axis(t, r, lo, hi);
}

fn weight(j: i32, a: Axis) -> f32 {
  return max(0.0, 1.0 - abs(f32(j) - a.t) / a.r);
}

// Output pixel `pixel` (row order) of image b, resampled from its crop box, mirrored as the
// record says: r, g, b in 0..255 (a grey source repeated in all three).
fn sample(b: u32, pixel: u32) -> vec3<f32> {
  let outW = params.outW;
  let r = record(b); // shaders/preprocess/record.wgsl
  let oy = pixel / outW;
  var ox = pixel % outW;
  if (r.mirror) {
    ox = outW - 1u - ox;
  }
  let ax = axis(ox, r.crop.x, r.crop.z, outW, r.width, r.origin.x);
  let ay = axis(oy, r.crop.y, r.crop.w, params.outH, r.height, r.origin.y);
  return gather(r, ax, ay);
}

// The weighted sum of image r's taps ax × ay (weights renormalized): r, g, b in 0..255.
fn gather(r: Record, ax: Axis, ay: Axis) -> vec3<f32> {
  let width = r.width;
  let channels = r.channels;
  let x0 = i32(r.origin.x);
  let y0 = i32(r.origin.y);
  var acc = vec3<f32>(0.0);
  var wsumY = 0.0;
  var wsumX = 0.0;
  for (var x = ax.lo; x <= ax.hi; x = x + 1) {
    wsumX = wsumX + weight(x, ax);
  }
  for (var y = ay.lo; y <= ay.hi; y = y + 1) {
    let wy = weight(y, ay);
    wsumY = wsumY + wy;
    let row = r.offset + u32(y - y0) * width * channels;
    var line = vec3<f32>(0.0);
    for (var x = ax.lo; x <= ax.hi; x = x + 1) {
      let wx = weight(x, ax);
      let at = row + u32(x - x0) * channels;
      if (channels == 1u) {
        line = line + vec3<f32>(wx * byteAt(at), 0.0, 0.0);
      } else {
        line = line + wx * vec3<f32>(byteAt(at), byteAt(at + 1u), byteAt(at + 2u));
      }
    }
    acc = acc + wy * line;
  }
  var v = acc / (wsumX * wsumY);
  if (channels == 1u) {
    v = vec3<f32>(v.x, v.x, v.x);
  }
  return v;
}

// A sample as the tensor's channels hold it: r, g, b, or with one output channel its ITU-R BT.601
// luma (torchvision's Grayscale and PIL's "L"; a grey source as it is) in all three.
fn outChannels(b: u32, v: vec3<f32>) -> vec3<f32> {
  if (OUT_CHANNELS == 1u) {
    let g = select(dot(v, vec3<f32>(0.299, 0.587, 0.114)), v.x, record(b).channels == 1u);
    return vec3<f32>(g, g, g);
  }
  return v;
}

// Writes output pixel `pixel` of image b in the tensor's layout (with one channel: v.x).
fn put(b: u32, pixel: u32, v: vec3<f32>) {
  let plane = params.outW * params.outH;
  if (OUT_CHANNELS == 1u) {
    dst[b * plane + pixel] = v.x;
    return;
  }
  for (var c = 0u; c < 3u; c = c + 1u) {
    if (NCHW) {
      dst[(b * 3u + c) * plane + pixel] = v[c];
    } else {
      dst[(b * plane + pixel) * 3u + c] = v[c];
    }
  }
}
