// The decoding process of one image (T.81 Figure E.6): markers → scans → (IDCT) → upsampling
// and colour conversion → interleaved output (output.ts). Also the geometry that scaled
// decoding needs, and the buffers it sizes.
//
// Scaled output (1/2, 1/4, 1/8) uses a reduced IDCT per block (idct.ts): luma blocks become
// 4×4, 2×2 or 1×1. A subsampled component whose upsampling ratio can absorb the scale instead
// keeps a larger IDCT (a 4:2:0 chroma block stays 8×8 at 1/2 scale), so it needs no upsampling
// at all: the same choice libjpeg makes, which keeps our scaled output close to djpeg -scale.
import * as F from "./frame";
import * as M from "./markers";
import { decodeScan, planStorage, expandBlock, regionComplete, QF, QLATCH, NZ } from "./scan";
import { resetTables } from "./huffman";
import { alloc } from "../common/memory";
import { idctBlock } from "./idct";
import * as O from "./output";
import { clearError, errorCode, fail, E_BAD_REGION, E_NO_FRAME, E_OUT_OF_MEMORY, E_TOO_LARGE } from "./errors";

export const MODE_PIXELS = 0;
export const MODE_COEFFICIENTS = 1;
/**
 * Pixels in one channel, as libjpeg's JCS_GRAYSCALE output (djpeg -grayscale): a YCbCr file's
 * luma as it is (its chroma is entropy-decoded, since the bits must be read past, but neither
 * transformed, upsampled nor converted); an RGB, CMYK or YCCK file's RGB weighted as BT.601's
 * luma, 0.299 R + 0.587 G + 0.114 B, in libjpeg's 16-bit fixed point.
 */
export const MODE_GREY = 2;

/** Arena blocks above this are refused before asking (wasm32 memory is 4 GiB in all). */
const MAX_BLOCK: u64 = 0x7fff0000;

function allocChecked(bytes: u64): usize {
  if (bytes > MAX_BLOCK) {
    fail(E_OUT_OF_MEMORY, F.sofOffset);
    return 0;
  }
  const p = alloc(<usize>bytes);
  if (p == 0) fail(E_OUT_OF_MEMORY, F.sofOffset);
  return p;
}

/** Geometry and buffers, once the frame is known (at the first SOS). */
function setup(scaleLog2: i32, maxPixels: f64, mode: i32, rx: i32, ry: i32, rw: i32, rh: i32): i32 {
  // Decompression bombs are refused here, before any allocation.
  if (<f64>F.width * <f64>F.height > maxPixels) return fail(E_TOO_LARGE, F.sofOffset);
  O.bsY = 8 >> scaleLog2;
  // A region's coefficients are the blocks its pixels read (each component's window, as for
  // pixels), and the scan stops below them: the hybrid decode of a planned crop.
  if (!O.planRegion(rx, ry, rw, rh, F.hmax * O.bsY, F.vmax * O.bsY)) return fail(E_BAD_REGION, F.sofOffset);
  const stored = mode == MODE_COEFFICIENTS || F.progressive;
  const pixels = mode != MODE_COEFFICIENTS;
  const grey = mode == MODE_GREY && F.ncomp > 1;
  F.lumaOnly = grey && O.colorSpace() == O.CS_YCBCR;
  O.outChannels = F.ncomp == 1 || mode == MODE_GREY ? 1 : 3;
  O.outCs = O.colorSpace();
  const rowBytes = O.outWidth * O.outChannels;
  const winBytes = O.winW * O.outChannels;
  // Rows leave as the scan goes (output.ts, scanRowDone) when one sequential scan carries every
  // component and the image is more than a strip: then a plane needs only the MCU row being decoded and
  // the one before it, whose last rows the triangle filter still reads. A smaller image is
  // decoded whole, then handed over in one call. A progressive image's rows leave the same way
  // once its last scan is in: its blocks are transformed an MCU row at a time (idctRows), so
  // its planes are rings too; only its coefficients are whole (any scan may add to any block).
  // (Planes are the whole image's width: a region's rows stream as the image's would.)
  const large = pixels && <u64>(O.fullWidth * O.outChannels) * <u64>O.fullHeight > <u64>O.STRIP_BYTES;
  const ringed = large && (F.progressive || F.scanNs == F.ncomp);
  progressiveStreaming = ringed && F.progressive;
  O.streaming = ringed && !F.progressive;
  for (let c = 0; c < F.ncomp; c++) {
    const h = F.cget(c, F.F_H);
    const v = F.cget(c, F.F_V);
    const fh = F.hmax / h;
    const fv = F.vmax / v;
    // Grow this component's IDCT while the upsampling ratio in both directions can absorb it.
    let bs = O.bsY;
    while (bs < 8 && fh % ((bs << 1) / O.bsY) == 0 && fv % ((bs << 1) / O.bsY) == 0) bs <<= 1;
    const bw = F.mcusX * h;
    const bh = F.mcusY * v;
    F.cset(c, F.F_BW, bw);
    F.cset(c, F.F_BH, bh);
    F.cset(c, F.F_BS, bs);
    F.cset(c, F.F_CW, <i32>((<i64>F.width * h * bs + <i64>F.hmax * 8 - 1) / (<i64>F.hmax * 8)));
    F.cset(c, F.F_CH, <i32>((<i64>F.height * v * bs + <i64>F.vmax * 8 - 1) / (<i64>F.vmax * 8)));
    if (stored) {
      // Pixels of a progressive image need only what its IDCT reads: none of a chroma
      // component of grey output, a corner at a reduced scale (scan.ts, planStorage).
      const csz = planStorage(c, !pixels ? 8 : F.lumaOnly && c > 0 ? 0 : bs);
      F.cset(c, F.F_CSZ, csz);
      const bytes = <u64>bw * <u64>bh * <u64>csz + 16;
      const p = allocChecked(bytes);
      if (p == 0) return errorCode();
      memory.fill(p, 0, <usize>bytes);
      F.cset(c, F.F_COEF, <i32>p);
    }
    if (F.progressive) {
      const n = <u64>bw * <u64>bh * 8;
      const p = allocChecked(n);
      if (p == 0) return errorCode();
      memory.fill(p, 0, <usize>n);
      store<u32>(NZ + (<usize>c << 2), <u32>p);
    }
    if (!pixels && O.regionOn) O.planUpsampling(c); // the block window only
    if (pixels && !(F.lumaOnly && c > 0)) {
      O.planUpsampling(c);
      const stride = bw * bs;
      const ring = ringed ? 1 << (32 - clz(2 * v - 1)) : bh; // ≥ 2 MCU rows, a power of two
      const pbh = min(bh, ring);
      const p = allocChecked(<u64>stride * <u64>(pbh * bs) + 64);
      if (p == 0) return errorCode();
      F.cset(c, F.F_STRIDE, stride);
      F.cset(c, F.F_PLANE, <i32>p);
      F.cset(c, F.F_RMASK, pbh < bh ? pbh * bs - 1 : -1);
      const rb = allocChecked(<u64>O.winW + 64);
      if (rb == 0) return errorCode();
      store<u32>(O.ROWBUF + (<usize>c << 2), <u32>rb);
    }
  }
  if (pixels) {
    // The host holds the whole image: keep it to what one block here could be, as before
    // rows left in strips (and what every runtime's typed arrays take).
    if (<u64>rowBytes * <u64>O.outHeight > MAX_BLOCK) return fail(E_OUT_OF_MEMORY, F.sofOffset);
    O.stripRows = max(1, min(O.outHeight, O.STRIP_BYTES / rowBytes));
    O.strip = allocChecked(<u64>rowBytes * <u64>O.stripRows + 64); // slack: row writers store whole v128s
    if (O.strip == 0) return errorCode();
    if (grey && !F.lumaOnly) {
      O.rgbScratch = allocChecked(<u64>O.winW * 3 + 64);
      if (O.rgbScratch == 0) return errorCode();
    }
    if (O.regionOn) {
      const wr = allocChecked(<u64>winBytes + 64);
      if (wr == 0) return errorCode();
      O.setWinRow(wr);
    }
    O.announceOutput();
  }
  return 0;
}

/**
 * Decodes the JPEG at `src` (`len` bytes). `scaleLog2` 0…3 gives 1, 1/2, 1/4, 1/8 of the size;
 * `mode` picks pixels or coefficients. With `rw` > 0 the pixels are those of the region that
 * covers source pixels [rx, rx + rw) × [ry, ry + rh) at that scale, clamped to the image
 * (output.ts, planRegion): the same pixels as the whole decode's there. Returns 0 or an error
 * code (errorOffset() says where).
 */
export function decode(src: usize, len: i32, scaleLog2: i32, maxPixels: f64, mode: i32, rx: i32, ry: i32, rw: i32, rh: i32): i32 {
  begin(src, len);
  if (M.begin() != 0) return errorCode();
  let ready = false;
  const direct = mode != MODE_COEFFICIENTS;
  while (true) {
    const m = M.nextScan(false);
    if (m < 0) return errorCode();
    if (m == M.M_EOI) break;
    if (!ready) {
      if (setup(scaleLog2, maxPixels, mode, rx, ry, rw, rh) != 0) return errorCode();
      ready = true;
    }
    if (decodeScan(direct && !F.progressive) != 0) return errorCode();
    if (regionComplete) break;
  }
  if (!ready) return fail(E_NO_FRAME, F.offsetOf(M.cursor) - 2);
  if (mode == MODE_COEFFICIENTS) return 0; // blocks are in natural order already
  if (F.progressive) {
    O.streaming = progressiveStreaming;
    idctRows();
  }
  for (let c = 0; c < F.ncomp; c++) {
    if (F.lumaOnly && c > 0) break; // no planes: never shown
    // A component no scan carried (a sequential file cut between scans) shows as mid-grey.
    // Its plane is whole: a ring means the first scan carried every component.
    if (F.cget(c, F.F_SEEN) == 0 && !F.progressive) {
      memory.fill(<usize>F.cget(c, F.F_PLANE), 128, <usize>(F.cget(c, F.F_STRIDE) * F.cget(c, F.F_BH) * F.cget(c, F.F_BS)));
    }
  }
  O.emitRows(O.outEnd);
  return 0;
}

function begin(src: usize, len: i32): void {
  // The host reset the arena and put the input at its bottom: keep it.
  clearError();
  F.resetFrame();
  resetTables();
  F.src = src;
  F.srcEnd = src + <usize>len;
  O.resetOutput();
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

/** A partly stored block back in natural order (idctRows). */
const FULL: usize = memory.data(128, 16);

/** Rows of a progressive image leave as idctRows goes (setup). */
let progressiveStreaming = false;

/**
 * IDCT of every stored block (progressive), after the last scan: coefficients → planes, an MCU
 * row at a time, each followed by the output rows it completes (a ring of planes suffices).
 */
function idctRows(): void {
  const nc = F.lumaOnly ? 1 : F.ncomp;
  // A region's: only the window's MCU rows and columns (output.ts, planRegion).
  for (let my = O.mcuY0; my < O.mcuY1; my++) {
    for (let c = 0; c < nc; c++) {
      const v = F.cget(c, F.F_V);
      const bw = F.cget(c, F.F_BW);
      const bs = F.cget(c, F.F_BS);
      const stride = F.cget(c, F.F_STRIDE);
      const rmask = F.cget(c, F.F_RMASK);
      const plane = <usize>F.cget(c, F.F_PLANE);
      const qf = QF + (<usize>c << 8);
      const qi = QLATCH + (<usize>c << 7);
      const csz = F.cget(c, F.F_CSZ);
      const expand = csz != 128 && bs > 1; // a 1×1 block reads its DC only, stored first
      for (let y = 0; y < v; y++) {
        const by = my * v + y;
        if (by < O.blockY0(c) || by >= O.blockY1(c)) continue;
        let blk = <usize>F.cget(c, F.F_COEF) + <usize>(by * bw) * <usize>csz;
        let nz = <usize>load<u32>(NZ + (<usize>c << 2)) + (<usize>(by * bw) << 3); // each block's non-zero AC coefficients
        const dst = plane + <usize>(((by * bs) & rmask) * stride);
        const bx0 = O.blockX0(c), bx1 = O.blockX1(c);
        blk += <usize>bx0 * <usize>csz;
        nz += <usize>bx0 << 3;
        for (let bx = bx0; bx < bx1; bx++) {
          const m = load<u64>(nz);
          const last = m == 0 ? 0 : 63 - <i32>clz(m); // zig-zag index of the last non-zero AC
          if (expand) {
            expandBlock(c, blk, FULL);
            idctBlock(FULL, qf, qi, dst + <usize>(bx * bs), stride, bs, last);
          } else {
            idctBlock(blk, qf, qi, dst + <usize>(bx * bs), stride, bs, last);
          }
          blk += <usize>csz;
          nz += 8;
        }
      }
    }
    O.scanRowDone(my, F.mcusY, false);
  }
}

