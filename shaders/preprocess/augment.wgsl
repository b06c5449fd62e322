// augment: the preprocessing pass with each sample's geometric ops, colour ops and erased box
// (planned on the CPU by src/decode/augment.ts, whose NOTE [ Augmentations ] defines every op
// against torchvision's; owner src/gpu/augment.ts). Per output pixel: its position mapped back
// through the geometric ops (fill where it leaves the image), then sample.wgsl's crop, mirror
// and resampling there, / 255, the colour ops in the sample's order, (v - mean) / std, then the
// erased box.
// A contrast step blends towards its image's grey mean at that point of the chain, and an
// autocontrast step stretches each channel's range there: reductions over the whole image, so
// `stats` computes them first, one dispatch per such step (SLOT), each resampling the image and
// running the steps before it. A sharpness step blends with the 3×3 smoothing of the image at
// that point: the pixel's neighbours are sampled and run through the steps before it too.
//
// Bindings: sample.wgsl's (params: here scale = 1 / std, bias = -mean / std; src; dst), then
//   3  storage, read    aug: array<u32>    AUG_WORDS words per image:
//        0 steps (≤ 7), 1 op codes (4 bits a step, step 0 lowest), 2-8 factors (f32),
//        9-12 erased box x, y, w, h (output pixels; w = 0: none), 13-15 erase values (f32),
//        16-31 the geometric ops and fill (shaders/preprocess/warp.wgsl, put before this text)
//   4  storage, rw      means: array<f32>  MEANS × (PARTS + 1) × 8 per image: for each contrast
//        or autocontrast step, over PARTS slices of the image, then over the whole (`combine`
//        adds them up once, so that a pixel reads one record), the sum of grey, each channel's
//        minimum and maximum (r, g, b), and a word unused
// Entry points:
//   stats      (PARTS / 64, batch, 1) workgroups of 64: one slice of image b's figures for its
//              SLOT-th contrast or autocontrast step an invocation (PARTS slices an image, so
//              that a batch fills a large GPU)
//   combine    (1, batch, 1) workgroups of 1: the slices' figures into the whole image's
//   main       (ceil(outW·outH / 64), batch, 1) workgroups of 64, as crop_resize_normalize's

override SLOT: u32 = 0u;
const MEANS: u32 = 2u;
const PARTS: u32 = 256u;
const OP_BRIGHTNESS: u32 = 1u;
const OP_CONTRAST: u32 = 2u;
const OP_SATURATION: u32 = 3u;
const OP_HUE: u32 = 4u;
const OP_SOLARIZE: u32 = 5u;
const OP_POSTERIZE: u32 = 6u;
const OP_AUTOCONTRAST: u32 = 7u;
const OP_SHARPNESS: u32 = 8u;
const BIG: f32 = 3.0e38;

// An image's figures at a contrast or autocontrast step: its grey mean, each channel's range.
struct Stats {
  mean: f32,
  lo: vec3<f32>,
  hi: vec3<f32>,
}

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

fn applyOp(v: vec3<f32>, op: u32, f: f32, st: Stats) -> vec3<f32> {
  switch (op) {
    case OP_BRIGHTNESS: { return clamp(f * v, vec3<f32>(0.0), vec3<f32>(1.0)); }
    case OP_CONTRAST: { return blend(v, st.mean, f); }
    case OP_AUTOCONTRAST: {
      // torchvision's autocontrast: (v − min) / (max − min) per channel; a flat channel as it is.
      let flat = st.hi <= st.lo;
      let lo = select(st.lo, vec3<f32>(0.0), flat);
      let scale = select(1.0 / (st.hi - st.lo), vec3<f32>(1.0), flat);
      return clamp((v - lo) * scale, vec3<f32>(0.0), vec3<f32>(1.0));
    }
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

fn isReduction(op: u32) -> bool {
  return op == OP_CONTRAST || op == OP_AUTOCONTRAST;
}

fn opAt(b: u32, i: u32) -> u32 {
  return (aug[b * AUG_WORDS + 1u] >> (4u * i)) & 0xfu;
}

// Image b's steps [first, to) on v; contrast and autocontrast steps take their figures in order
// (slots counted from the chain's start). A sharpness step is left to `chain`.
fn steps(b: u32, v0: vec3<f32>, first: u32, to: u32) -> vec3<f32> {
  var v = v0;
  var slot = 0u;
  for (var i = 0u; i < first; i = i + 1u) {
    slot = slot + select(0u, 1u, isReduction(opAt(b, i)));
  }
  for (var i = first; i < to; i = i + 1u) {
    let op = opAt(b, i);
    var st = Stats(0.0, vec3<f32>(0.0), vec3<f32>(0.0));
    if (isReduction(op)) {
      st = statsOf(b, slot);
      slot = slot + 1u;
    }
    v = applyOp(v, op, bitcast<f32>(aug[b * AUG_WORDS + 2u + i]), st);
  }
  return v;
}

// Output pixel `pixel` of image b after its first `to` steps. A sharpness step among them
// (TrivialAugment's: at most one a chain) blends the pixel with torchvision's smoothing of the
// image at that point, (5·centre + its 8 neighbours) / 13, each neighbour sampled and run
// through the steps before; the border pixels (and images of 2 or fewer rows or columns) are
// their own smoothing.
fn chain(b: u32, pixel: u32, to: u32) -> vec3<f32> {
  var sharp = to;
  for (var i = 0u; i < to; i = i + 1u) {
    if (opAt(b, i) == OP_SHARPNESS) {
      sharp = i;
    }
  }
  let W = params.outW;
  let x = pixel % W;
  let y = pixel / W;
  let inside = sharp < to && x > 0u && y > 0u && x + 1u < W && y + 1u < params.outH;
  // One loop over the samples it takes (the pixel, or its 3×3), so that the sampler and the
  // steps are written into the kernel once: a CPU driver compiles every copy.
  var centre = vec3<f32>(0.0);
  var sum = vec3<f32>(0.0);
  for (var k = 0u; k < select(1u, 9u, inside); k = k + 1u) {
    let at = select(4u, k, inside);
    let v = steps(b, unit(b, (y + at / 3u - 1u) * W + x + at % 3u - 1u), 0u, sharp);
    if (at == 4u) {
      centre = v;
    }
    sum = sum + select(1.0, 5.0, at == 4u) * v;
  }
  if (sharp == to) {
    return centre;
  }
  var v = centre;
  if (inside) {
    let f = bitcast<f32>(aug[b * AUG_WORDS + 2u + sharp]);
    v = clamp(f * centre + (1.0 - f) * (sum / 13.0), vec3<f32>(0.0), vec3<f32>(1.0));
  }
  return steps(b, v, sharp + 1u, to);
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

// Where image b's figures for its slot-th contrast or autocontrast step begin: PARTS records of
// 8 words, then the whole image's.
fn figuresAt(b: u32, slot: u32) -> u32 {
  return (b * MEANS + slot) * (PARTS + 1u) * 8u;
}

// Image b's figures at its slot-th contrast or autocontrast step (as `combine` wrote them).
fn statsOf(b: u32, slot: u32) -> Stats {
  let o = figuresAt(b, slot) + PARTS * 8u;
  return Stats(means[o], vec3<f32>(means[o + 1u], means[o + 2u], means[o + 3u]), vec3<f32>(means[o + 4u], means[o + 5u], means[o + 6u]));
}

// Which step is image b's SLOT-th contrast or autocontrast (its step count when it has none).
fn reductionAt(b: u32) -> u32 {
  let count = aug[b * AUG_WORDS];
  var at = count;
  var seen = 0u;
  for (var i = 0u; i < count; i = i + 1u) {
    if (isReduction(opAt(b, i))) {
      if (seen == SLOT && at == count) {
        at = i;
      }
      seen = seen + 1u;
    }
  }
  return at;
}

@compute @workgroup_size(1)
fn combine(@builtin(workgroup_id) wid: vec3<u32>) {
  let b = wid.y;
  if (reductionAt(b) >= aug[b * AUG_WORDS]) {
    return;
  }
  let at = figuresAt(b, SLOT);
  var sum = 0.0;
  var lo = vec3<f32>(BIG);
  var hi = vec3<f32>(-BIG);
  for (var g = 0u; g < PARTS; g = g + 1u) {
    let o = at + g * 8u;
    sum = sum + means[o];
    lo = min(lo, vec3<f32>(means[o + 1u], means[o + 2u], means[o + 3u]));
    hi = max(hi, vec3<f32>(means[o + 4u], means[o + 5u], means[o + 6u]));
  }
  putFigures(at + PARTS * 8u, sum / f32(params.outW * params.outH), lo, hi);
}

// One record of figures at word o: the grey (sum or mean), each channel's minimum and maximum.
fn putFigures(o: u32, figure: f32, lo: vec3<f32>, hi: vec3<f32>) {
  means[o] = figure;
  means[o + 1u] = lo.x;
  means[o + 2u] = lo.y;
  means[o + 3u] = lo.z;
  means[o + 4u] = hi.x;
  means[o + 5u] = hi.y;
  means[o + 6u] = hi.z;
}

// One invocation a slice (pixels p ≡ slice mod PARTS): no workgroup memory and no barrier,
// which a CPU driver compiles far faster around the sampler and the steps.
@compute @workgroup_size(64)
fn stats(@builtin(global_invocation_id) gid: vec3<u32>) {
  let b = gid.y;
  let slice = gid.x;
  let at = reductionAt(b);
  if (slice >= PARTS || at >= aug[b * AUG_WORDS]) {
    return;
  }
  let n = params.outW * params.outH;
  var sum = 0.0;
  var lo = vec3<f32>(BIG);
  var hi = vec3<f32>(-BIG);
  for (var p = slice; p < n; p = p + PARTS) {
    let v = chain(b, p, at);
    sum = sum + grey(v);
    lo = min(lo, v);
    hi = max(hi, v);
  }
  putFigures(figuresAt(b, SLOT) + slice * 8u, sum, lo, hi);
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
  var v = chain(b, pixel, aug[base]) * params.scale.xyz + params.bias.xyz;
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
