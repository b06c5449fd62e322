// ycbcr_rgb: sample planes (from idct_planes.wgsl) → packed u8 HWC pixels in the preprocessing
// input, at each image's offset. Chroma upsampling is the WASM decoder's (wasm/jpeg/upsample.ts,
// libjpeg-turbo's "fancy" triangle filter with its alternating rounding biases), colour
// conversion its Q15 formulas (wasm/jpeg/color.ts, JFIF 7), so the two paths agree exactly on
// identical planes:
//   2×1   even x: (3a + left + 1) >> 2             odd x: (3a + right + 2) >> 2
//   1×2   (3·near + far + 1) >> 2 (even y), + 2 (odd y); far = the row above (even) / below (odd)
//   2×2   s = 3·near + far; even x: (3s + s_left + 8) >> 4; odd x: (3s + s_right + 7) >> 4
//   other ratios replicate, and so do 2×1 and 2×2 for a component at most 2 samples wide
//   (CW ≤ 2: libjpeg's rule); edges repeat the component's last real sample (CW × CH, A.1.1)
//   R = Y + Cr' + q(0.402·Cr')   G = Y − q(0.344136·Cb') − q(0.714136·Cr')   B = Y + Cb' + q(0.772·Cb')
//   with Cb' = Cb − 128, Cr' = Cr − 128 and q(k·a) = (a·round(k·2^15) + 2^14) >> 15.
//
// Bindings (group 0):
//   0  storage, read    coef: array<u32>    the upload (NOTE [ Coefficient upload ] in idct.ts);
//                                           this pass reads its header and image records
//   1  storage, read    planes: array<u32>  u8 samples, 4 a word
//   2  storage, rw      dst: array<u32>     the preprocessing input (pack.ts); only the pixel
//                                           ranges of coefficient images are written
// Dispatch: one invocation per output word (4 bytes of HWC pixels) of the batch's coefficient
//   images, workgroups of 64 over x and y (grid() in src/gpu/kernel.ts); a thread finds its
//   image by binary search over FIRST_WORD.

@group(0) @binding(0) var<storage, read> coef: array<u32>;
@group(0) @binding(1) var<storage, read> planes: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

struct Component {
  plane: u32,
  stride: u32,
  rx: u32,
  ry: u32,
  cw: i32,
  ch: i32,
  // The first sample the plane holds (a region's window of blocks; 0, 0 for the whole image).
  wx: i32,
  wy: i32,
}

// Sample (x, y) of the component, in its own coordinates; the window holds every sample a
// region's pixels read (wasm/jpeg/output.ts, planUpsampling), and the clamp keeps a read in it.
fn sampleAt(c: Component, x: i32, y: i32) -> i32 {
  let lx = clamp(x - c.wx, 0, i32(c.stride) - 1);
  let ly = max(y - c.wy, 0);
  let i = c.plane + u32(ly) * c.stride + u32(lx);
  return i32((planes[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu);
}

// Column sum 3·near + far of the 2×2 and 1×2 filters at chroma column x.
fn colSum(c: Component, x: i32, near: i32, far: i32) -> i32 {
  return 3 * sampleAt(c, x, near) + sampleAt(c, x, far);
}

// Component c at full-resolution pixel (x, y).
fn upsampled(c: Component, x: i32, y: i32) -> i32 {
  if (c.rx == 1u && c.ry == 1u) {
    return sampleAt(c, x, y);
  }
  let odd = (x & 1) == 1;
  let fancyX = c.rx == 2u && c.cw > 2;
  if (c.ry == 1u && fancyX) {
    let i = x >> 1u;
    let a = 3 * sampleAt(c, i, y);
    if (odd) {
      return (a + sampleAt(c, min(i + 1, c.cw - 1), y) + 2) >> 2u;
    }
    return (a + sampleAt(c, max(i - 1, 0), y) + 1) >> 2u;
  }
  if (c.ry == 2u && (c.rx == 1u || fancyX)) {
    let j = y >> 1u;
    let oddY = (y & 1) == 1;
    let far = clamp(select(j - 1, j + 1, oddY), 0, c.ch - 1);
    if (c.rx == 1u) {
      return (colSum(c, x, j, far) + select(1, 2, oddY)) >> 2u;
    }
    let i = x >> 1u;
    let s = 3 * colSum(c, i, j, far);
    if (odd) {
      return (s + colSum(c, min(i + 1, c.cw - 1), j, far) + 7) >> 4u;
    }
    return (s + colSum(c, max(i - 1, 0), j, far) + 8) >> 4u;
  }
  return sampleAt(c, min(x / i32(c.rx), c.cw - 1), min(y / i32(c.ry), c.ch - 1));
}

fn q15(a: i32, k: i32) -> i32 {
  return (a * k + 16384) >> 15u;
}

fn component(rec: u32, j: u32) -> Component {
  let at = rec + 8u + j * 8u;
  return Component(coef[at], coef[at + 1u], coef[at + 2u], coef[at + 3u], i32(coef[at + 4u]), i32(coef[at + 5u]), i32(coef[at + 6u]), i32(coef[at + 7u]));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let word = gid.x + gid.y * groups.x * 64u;
  if (word >= coef[3]) {
    return;
  }
  let images = coef[2];
  let imageAt = coef[5];
  var lo = 0u;
  var hi = images - 1u;
  while (lo < hi) {
    let mid = (lo + hi + 1u) / 2u;
    if (coef[imageAt + mid * 32u] <= word) {
      lo = mid;
    } else {
      hi = mid - 1u;
    }
  }
  let rec = imageAt + lo * 32u;
  let local = word - coef[rec];
  let width = coef[rec + 1u];
  let height = coef[rec + 2u];
  let channels = coef[rec + 3u];
  let color = coef[rec + 4u];
  let total = width * height * channels;
  // A region's pixels are its frame's from this origin (NOTE [ Coefficient upload ]).
  let ox = i32(coef[rec + 7u] & 0xffffu);
  let oy = i32(coef[rec + 7u] >> 16u);

  var packed = 0u;
  var lastPixel = 0xffffffffu;
  var rgb = vec3<i32>(0);
  for (var k = 0u; k < 4u; k = k + 1u) {
    let byte = local * 4u + k;
    if (byte >= total) {
      break;
    }
    let p = byte / channels;
    if (p != lastPixel) {
      lastPixel = p;
      let x = i32(p % width) + ox;
      let y = i32(p / width) + oy;
      let a = upsampled(component(rec, 0u), x, y);
      if (color == 0u) {
        rgb = vec3<i32>(a);
      } else {
        let b = upsampled(component(rec, 1u), x, y);
        let c = upsampled(component(rec, 2u), x, y);
        if (color == 2u) {
          rgb = vec3<i32>(a, b, c);
        } else {
          let cb = b - 128;
          let cr = c - 128;
          rgb = vec3<i32>(
            a + cr + q15(cr, 13173),
            a - q15(cb, 11277) - q15(cr, 23401),
            a + cb + q15(cb, 25297),
          );
        }
      }
    }
    let v = u32(clamp(rgb[byte % channels], 0, 255));
    packed = packed | (v << (k * 8u));
  }
  dst[(coef[rec + 5u] >> 2u) + local] = packed;
}
