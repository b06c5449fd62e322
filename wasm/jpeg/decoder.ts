// The decoding process of one image (T.81 Figure E.6): markers → scans → (IDCT) → upsampling
// and colour conversion → interleaved output. Also the geometry that scaled decoding needs.
//
// Scaled output (1/2, 1/4, 1/8) uses a reduced IDCT per block (idct.ts): luma blocks become
// 4×4, 2×2 or 1×1. A subsampled component whose upsampling ratio can absorb the scale instead
// keeps a larger IDCT (a 4:2:0 chroma block stays 8×8 at 1/2 scale), so it needs no upsampling
// at all: the same choice libjpeg makes, which keeps our scaled output close to djpeg -scale.
import * as F from "./frame";
import * as M from "./markers";
import { decodeScan, QF, LAST } from "./scan";
import { resetTables } from "./huffman";
import { alloc } from "./memory";
import { idctBlock } from "./idct";
import { yccRow, rgbRow, cmykRow, greyRow } from "./color";
import { h2v1, h2v2, h1v2, replicate } from "./upsample";
import { clearError, errorCode, fail, E_NO_FRAME, E_OUT_OF_MEMORY, E_TOO_LARGE } from "./errors";

export const MODE_PIXELS = 0;
export const MODE_COEFFICIENTS = 1;
/**
 * Pixels in one channel, as libjpeg's JCS_GRAYSCALE output (djpeg -grayscale): a YCbCr file's
 * luma as it is (its chroma is entropy-decoded, since the bits must be read past, but neither
 * transformed, upsampled nor converted); an RGB, CMYK or YCCK file's RGB weighted as BT.601's
 * luma, 0.299 R + 0.587 G + 0.114 B, in libjpeg's 16-bit fixed point.
 */
export const MODE_GREY = 2;

// Colour spaces of the output, as the host reads them.
export const CS_GRAY = 0;
export const CS_YCBCR = 1;
export const CS_RGB = 2;
export const CS_CMYK = 3;
export const CS_YCCK = 4;

/** Arena blocks above this are refused before asking (wasm32 memory is 4 GiB in all). */
const MAX_BLOCK: u64 = 0x7fff0000;

/**
 * Output leaves the module a strip of rows at a time, through the host's `rows(ptr, y0, n)`:
 * n whole rows (outWidth · outChannels bytes each, no padding) starting at output row y0,
 * valid until the call returns. When one sequential scan carries every component of an image
 * larger than a strip, rows go as soon as the MCU rows they need are decoded: the planes are
 * rings of two MCU rows, read back while still in cache, and nothing here is image-sized
 * (libjpeg's row pipeline does the same).
 */
// @ts-ignore: decorator
@external("env", "rows") declare function hostRows(ptr: usize, y0: i32, n: i32): void;

/** Rows given to the host so far. */
export let outDone: i32 = 0;
let strip: usize = 0;
let stripRows: i32 = 0;
/** Bytes a strip aims at: a few MCU rows of a wide photo, the whole of a small one (~half an L2). */
const STRIP_BYTES: i32 = 256 * 1024;
export let outWidth: i32 = 0;
export let outHeight: i32 = 0;
export let outChannels: i32 = 0;
let outCs: i32 = CS_GRAY;
let bsY: i32 = 8;
/** Grey output of a colour file that is not YCbCr: one RGB row before its weighting. */
let rgbScratch: usize = 0;

// Per component: row buffer for upsampled samples.
const ROWBUF: usize = memory.data(F.MAX_COMPONENTS * 4, 16);

function allocChecked(bytes: u64): usize {
  if (bytes > MAX_BLOCK) {
    fail(E_OUT_OF_MEMORY, F.sofOffset);
    return 0;
  }
  const p = alloc(<usize>bytes);
  if (p == 0) fail(E_OUT_OF_MEMORY, F.sofOffset);
  return p;
}

/** Colour space from the markers (libjpeg's rules: JFIF, then Adobe, then component ids). */
export function colorSpace(): i32 {
  if (F.ncomp == 1) return CS_GRAY;
  if (F.ncomp == 4) return F.adobeTransform == 2 ? CS_YCCK : CS_CMYK;
  if (F.jfif) return CS_YCBCR;
  if (F.adobeTransform == 0) return CS_RGB;
  if (F.adobeTransform > 0) return CS_YCBCR;
  if (F.cget(0, F.F_ID) == 82 && F.cget(1, F.F_ID) == 71 && F.cget(2, F.F_ID) == 66) return CS_RGB; // 'R','G','B'
  return CS_YCBCR;
}

/** Geometry and buffers, once the frame is known (at the first SOS). */
function setup(scaleLog2: i32, maxPixels: f64, mode: i32): i32 {
  // Decompression bombs are refused here, before any allocation.
  if (<f64>F.width * <f64>F.height > maxPixels) return fail(E_TOO_LARGE, F.sofOffset);
  bsY = 8 >> scaleLog2;
  outWidth = (F.width * bsY + 7) >> 3;
  outHeight = (F.height * bsY + 7) >> 3;
  const stored = mode == MODE_COEFFICIENTS || F.progressive;
  const pixels = mode != MODE_COEFFICIENTS;
  const grey = mode == MODE_GREY && F.ncomp > 1;
  F.lumaOnly = grey && colorSpace() == CS_YCBCR;
  outChannels = F.ncomp == 1 || mode == MODE_GREY ? 1 : 3;
  outCs = colorSpace();
  const rowBytes = outWidth * outChannels;
  // Rows leave as the scan goes (scanRowDone) when one sequential scan carries every component
  // and the image is more than a strip: then a plane needs only the MCU row being decoded and
  // the one before it, whose last rows the triangle filter still reads. A smaller image is
  // decoded whole, then handed over in one call.
  streaming = pixels && !F.progressive && F.scanNs == F.ncomp && <u64>rowBytes * <u64>outHeight > <u64>STRIP_BYTES;
  for (let c = 0; c < F.ncomp; c++) {
    const h = F.cget(c, F.F_H);
    const v = F.cget(c, F.F_V);
    const fh = F.hmax / h;
    const fv = F.vmax / v;
    // Grow this component's IDCT while the upsampling ratio in both directions can absorb it.
    let bs = bsY;
    while (bs < 8 && fh % ((bs << 1) / bsY) == 0 && fv % ((bs << 1) / bsY) == 0) bs <<= 1;
    const bw = F.mcusX * h;
    const bh = F.mcusY * v;
    F.cset(c, F.F_BW, bw);
    F.cset(c, F.F_BH, bh);
    F.cset(c, F.F_BS, bs);
    F.cset(c, F.F_CW, <i32>((<i64>F.width * h * bs + <i64>F.hmax * 8 - 1) / (<i64>F.hmax * 8)));
    F.cset(c, F.F_CH, <i32>((<i64>F.height * v * bs + <i64>F.vmax * 8 - 1) / (<i64>F.vmax * 8)));
    if (stored) {
      const bytes = <u64>bw * <u64>bh * 128;
      const p = allocChecked(bytes);
      if (p == 0) return errorCode();
      memory.fill(p, 0, <usize>bytes);
      F.cset(c, F.F_COEF, <i32>p);
    }
    if (F.progressive) {
      const n = <u64>bw * <u64>bh;
      const p = allocChecked(n);
      if (p == 0) return errorCode();
      memory.fill(p, 0, <usize>n);
      store<u32>(LAST + (<usize>c << 2), <u32>p);
    }
    if (pixels && !(F.lumaOnly && c > 0)) {
      planUpsampling(c);
      const stride = bw * bs;
      const ring = streaming ? 1 << (32 - clz(2 * v - 1)) : bh; // ≥ 2 MCU rows, a power of two
      const pbh = min(bh, ring);
      const p = allocChecked(<u64>stride * <u64>(pbh * bs) + 64);
      if (p == 0) return errorCode();
      F.cset(c, F.F_STRIDE, stride);
      F.cset(c, F.F_PLANE, <i32>p);
      F.cset(c, F.F_RMASK, pbh < bh ? pbh * bs - 1 : -1);
      const rb = allocChecked(<u64>outWidth + 64);
      if (rb == 0) return errorCode();
      store<u32>(ROWBUF + (<usize>c << 2), <u32>rb);
    }
  }
  if (pixels) {
    // The host holds the whole image: keep it to what one block here could be, as before
    // rows left in strips (and what every runtime's typed arrays take).
    if (<u64>rowBytes * <u64>outHeight > MAX_BLOCK) return fail(E_OUT_OF_MEMORY, F.sofOffset);
    stripRows = max(1, min(outHeight, STRIP_BYTES / rowBytes));
    strip = allocChecked(<u64>rowBytes * <u64>stripRows + 64); // slack: row writers store whole v128s
    if (strip == 0) return errorCode();
    if (grey && !F.lumaOnly) {
      rgbScratch = allocChecked(<u64>outWidth * 3 + 64);
      if (rgbScratch == 0) return errorCode();
    }
  }
  return 0;
}

/**
 * Decodes the JPEG at `src` (`len` bytes). `scaleLog2` 0…3 gives 1, 1/2, 1/4, 1/8 of the size;
 * `mode` picks pixels or coefficients. Returns 0 or an error code (errorOffset() says where).
 */
export function decode(src: usize, len: i32, scaleLog2: i32, maxPixels: f64, mode: i32): i32 {
  begin(src, len);
  if (M.begin() != 0) return errorCode();
  let ready = false;
  const direct = mode != MODE_COEFFICIENTS;
  while (true) {
    const m = M.nextScan(false);
    if (m < 0) return errorCode();
    if (m == M.M_EOI) break;
    if (!ready) {
      if (setup(scaleLog2, maxPixels, mode) != 0) return errorCode();
      ready = true;
    }
    if (decodeScan(direct && !F.progressive) != 0) return errorCode();
  }
  if (!ready) return fail(E_NO_FRAME, F.offsetOf(M.cursor) - 2);
  if (mode == MODE_COEFFICIENTS) {
    transposeAll();
    return 0;
  }
  if (F.progressive) idctAll();
  for (let c = 0; c < F.ncomp; c++) {
    if (F.lumaOnly && c > 0) break; // no planes: never shown
    // A component no scan carried (a sequential file cut between scans) shows as mid-grey.
    // Its plane is whole: a ring means the first scan carried every component.
    if (F.cget(c, F.F_SEEN) == 0 && !F.progressive) {
      memory.fill(<usize>F.cget(c, F.F_PLANE), 128, <usize>(F.cget(c, F.F_STRIDE) * F.cget(c, F.F_BH) * F.cget(c, F.F_BS)));
    }
  }
  emitRows(outHeight);
  return 0;
}

function begin(src: usize, len: i32): void {
  // The host reset the arena and put the input at its bottom: keep it.
  clearError();
  F.resetFrame();
  resetTables();
  F.src = src;
  F.srcEnd = src + <usize>len;
  outDone = 0;
  streaming = false;
  outWidth = 0;
  outHeight = 0;
  outChannels = 0;
}

/** Header only: markers up to the first SOS. Returns 0 or an error code. */
export function inspect(src: usize, len: i32): i32 {
  // The input lives in the arena: keep it, reset only the decoder state.
  clearError();
  F.resetFrame();
  resetTables();
  F.src = src;
  F.srcEnd = src + <usize>len;
  if (M.begin() != 0) return errorCode();
  while (true) {
    const m = M.nextScan(true);
    if (m < 0) return errorCode();
    if (m == M.M_SOS || m == M.M_EOI) break;
  }
  if (F.sofMarker == 0) return fail(E_NO_FRAME, F.offsetOf(M.cursor));
  return 0;
}

/** IDCT of every stored block (progressive): coefficients → planes. */
function idctAll(): void {
  for (let c = 0; c < (F.lumaOnly ? 1 : F.ncomp); c++) {
    const bw = F.cget(c, F.F_BW);
    const bh = F.cget(c, F.F_BH);
    const bs = F.cget(c, F.F_BS);
    const stride = F.cget(c, F.F_STRIDE);
    const plane = <usize>F.cget(c, F.F_PLANE);
    const qf = QF + (<usize>c << 8);
    let blk = <usize>F.cget(c, F.F_COEF);
    let last = <usize>load<u32>(LAST + (<usize>c << 2)); // zig-zag index of the last non-zero AC
    for (let by = 0; by < bh; by++) {
      for (let bx = 0; bx < bw; bx++) {
        idctBlock(blk, qf, plane + <usize>(by * bs * stride + bx * bs), stride, bs, <i32>load<u8>(last));
        blk += 128;
        last++;
      }
    }
  }
}

/** Coefficient mode hands blocks out in natural order (v·8 + u): undo the internal transpose. */
function transposeAll(): void {
  for (let c = 0; c < F.ncomp; c++) {
    const n = F.cget(c, F.F_BW) * F.cget(c, F.F_BH);
    let blk = <usize>F.cget(c, F.F_COEF);
    for (let b = 0; b < n; b++) {
      for (let i = 0; i < 8; i++) {
        for (let j = i + 1; j < 8; j++) {
          const a = blk + (<usize>(i * 8 + j) << 1);
          const t = blk + (<usize>(j * 8 + i) << 1);
          const x = load<i16>(a);
          store<i16>(a, load<i16>(t));
          store<i16>(t, x);
        }
      }
      blk += 128;
    }
  }
}

// How each component's rows reach output resolution, fixed in setup() (planUpsampling): the
// residual ratios after the IDCT size absorbed what it could, and the filter.
const UP: usize = memory.data(F.MAX_COMPONENTS * 16, 16); // per component: rh, rv, how (i32)
const UP_NONE = 0; //      at output resolution already
const UP_H2V1 = 1; //      triangle filter across
const UP_V2 = 2; //        triangle filter down (h2v2 or h1v2): output row 2k reads rows k − 1 and k, 2k + 1 rows k and k + 1
const UP_REPLICATE = 3; // each sample rh × rv times

function planUpsampling(c: i32): void {
  const bs = F.cget(c, F.F_BS);
  const rh = ((F.hmax / F.cget(c, F.F_H)) * bsY) / bs;
  const rv = ((F.vmax / F.cget(c, F.F_V)) * bsY) / bs;
  // libjpeg turns the triangle filter off at 1/8 scale (1×1 blocks), and for a horizontal 2×
  // when the component is 2 samples wide or less (jdsample.c): replicate there too.
  const fancy = bsY > 1;
  const fancyH = fancy && rh == 2 && F.cget(c, F.F_CW) > 2;
  let how = UP_REPLICATE;
  if (rh == 1 && rv == 1) how = UP_NONE;
  else if (rv == 1 && fancyH) how = UP_H2V1;
  else if (rv == 2 && ((rh == 1 && fancy) || fancyH)) how = UP_V2;
  const r = UP + (<usize>c << 4);
  store<i32>(r, rh);
  store<i32>(r + 4, rv);
  store<i32>(r + 8, how);
}

/** How many output rows the first `have` rows of component c's plane can make. */
function rowsFrom(c: i32, have: i32): i32 {
  const r = UP + (<usize>c << 4);
  return load<i32>(r + 8) == UP_V2 ? 2 * have - 1 : have * load<i32>(r + 4);
}

/** Where row `y` of component c's samples is: its plane is whole, or a ring (F_RMASK). */
// @ts-ignore: decorator
@inline function planeRow(c: i32, y: i32): usize {
  return <usize>F.cget(c, F.F_PLANE) + <usize>((y & F.cget(c, F.F_RMASK)) * F.cget(c, F.F_STRIDE));
}

/** Row `y` of component `c` at output resolution: upsampled into its row buffer if needed. */
function componentRow(c: i32, y: i32): usize {
  const cw = F.cget(c, F.F_CW);
  const ch = F.cget(c, F.F_CH);
  const r = UP + (<usize>c << 4);
  const rh = load<i32>(r);
  const rv = load<i32>(r + 4);
  const how = load<i32>(r + 8);
  if (how == UP_NONE) return planeRow(c, y);
  const out = <usize>load<u32>(ROWBUF + (<usize>c << 2));
  if (how == UP_H2V1) {
    h2v1(planeRow(c, y), cw, out);
  } else if (how == UP_V2) {
    const sy = y >> 1;
    const odd = (y & 1) != 0;
    let fy = odd ? sy + 1 : sy - 1;
    if (fy < 0) fy = 0;
    if (fy > ch - 1) fy = ch - 1;
    if (rh == 2) h2v2(planeRow(c, sy), planeRow(c, fy), cw, out);
    else h1v2(planeRow(c, sy), planeRow(c, fy), cw, out, odd);
  } else {
    let sy = y / rv;
    if (sy > ch - 1) sy = ch - 1;
    replicate(planeRow(c, sy), cw, rh, out, outWidth);
  }
  return out;
}

/** Upsampling and colour conversion of output row `y` into `out`. */
function outputRow(y: i32, out: usize): void {
  const w = outWidth;
  const cs = outCs;
  if (cs == CS_GRAY || F.lumaOnly) {
    memory.copy(out, componentRow(0, y), w);
    return;
  }
  const a = componentRow(0, y);
  const b = componentRow(1, y);
  const c = componentRow(2, y);
  const rgb = outChannels == 1 ? rgbScratch : out;
  if (cs == CS_YCBCR) yccRow(a, b, c, rgb, w);
  else if (cs == CS_RGB) rgbRow(a, b, c, rgb, w);
  else cmykRow(a, b, c, componentRow(3, y), rgb, w, cs == CS_YCCK);
  if (outChannels == 1) greyRow(rgb, out, w);
}

/**
 * Output rows from outDone up to `upTo` (exclusive) into the strip, which goes to the host
 * when full and after the last row (one call for a small image, a few per MCU rows of a photo).
 */
function emitRows(upTo: i32): void {
  const rowBytes = <usize>(outWidth * outChannels);
  while (outDone < upTo) {
    const n = outDone % stripRows;
    outputRow(outDone, strip + <usize>n * rowBytes);
    outDone++;
    if (n + 1 == stripRows || outDone == outHeight) hostRows(strip, outDone - n - 1, n + 1);
  }
}

/** Rows leave as the scan goes (setup()). */
let streaming = false;

/**
 * Called by the scan after each row of MCUs (`my` of `down`; a one-component scan's rows are
 * one block high): emits every output row whose source rows, upsampling context included,
 * are now decoded. The last row emits the rest.
 */
export function scanRowDone(my: i32, down: i32): void {
  if (!streaming) return;
  if (my + 1 >= down) {
    emitRows(outHeight);
    return;
  }
  let upTo = outHeight;
  for (let c = 0; c < (F.lumaOnly ? 1 : F.ncomp); c++) {
    const bs = F.cget(c, F.F_BS);
    const have = (my + 1) * bs * (F.scanNs == 1 ? 1 : F.cget(c, F.F_V)); // rows of c decoded, < its height
    upTo = min(upTo, rowsFrom(c, have));
  }
  emitRows(upTo);
}
