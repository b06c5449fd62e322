// Output: the decoded planes become rows at output resolution (upsampling, colour conversion,
// grey weighting) and leave for the host a strip at a time. decoder.ts sets the geometry and
// buffers below in its setup(); scan.ts calls scanRowDone after each MCU row, so that rows can
// leave while the scan goes. Neither is imported here: this is the end of the pipeline.
import * as F from "./frame";
import { yccRow, yccRowH2V2, rgbRow, cmykRow, greyRow } from "./color";
import { h2v1, h2v2, h2v2Fits, h2v2Sums, h1v2, replicate } from "./upsample";

// Colour spaces of the output, as the host reads them.
export const CS_GRAY = 0;
export const CS_YCBCR = 1;
export const CS_RGB = 2;
export const CS_CMYK = 3;
export const CS_YCCK = 4;

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

/**
 * Tells the host the output's size before any pixel is decoded: a strip of no rows (decoder.ts
 * calls it once the geometry is set), which a host that writes into a buffer of its own checks
 * the size against (src/decode/jpeg.ts, decodeInto), so that a buffer too small costs the
 * headers only, not the decode.
 */
export function announceOutput(): void {
  hostRows(strip, 0, 0);
}

/** Rows given to the host so far. */
export let outDone: i32 = 0;
export let strip: usize = 0;
export let stripRows: i32 = 0;
/** Bytes a strip aims at: a few MCU rows of a wide photo, the whole of a small one (~half an L2). */
export const STRIP_BYTES: i32 = 256 * 1024;
export let outWidth: i32 = 0;
export let outHeight: i32 = 0;
export let outChannels: i32 = 0;
export let outCs: i32 = CS_GRAY;
/** Samples per block side of a full-resolution component: 8 >> the scale. */
export let bsY: i32 = 8;
/** Grey output of a colour file that is not YCbCr: one RGB row before its weighting. */
export let rgbScratch: usize = 0;

/*
 * A region (decode's region arguments): output rows and columns are the region's, in the
 * coordinates of the whole (scaled) image, fullWidth × fullHeight. Rows and columns are made
 * over a window: the region widened to whole MCUs and one more MCU each side (the context the
 * upsampling filters read), clamped to the image, so that every pixel of the region is the
 * pixel of a whole decode. Blocks outside the window are not transformed (scan.ts,
 * decoder.ts); rows below it are not decoded at all. Without a region the window is the image.
 */
export let regionOn = false;
export let fullWidth: i32 = 0;
export let fullHeight: i32 = 0;
/** The region's first column and row; its size is outWidth × outHeight. */
export let regX: i32 = 0;
export let regY: i32 = 0;
/** The window's first column and width, in output columns. */
export let winX: i32 = 0;
export let winW: i32 = 0;
/**
 * The window in MCUs: columns [mcuX0, mcuX1) (rows are made over these), rows [mcuY0, mcuY1)
 * (the MCU rows any component's window touches: the scan stops after them).
 */
export let mcuX0: i32 = 0;
export let mcuX1: i32 = 0;
export let mcuY0: i32 = 0;
export let mcuY1: i32 = 0;
/** Where a window row is made before the region's columns go to the strip (0: straight into the strip). */
export let winRow: usize = 0;
/** The output row after the region's last: regY + outHeight. */
export let outEnd: i32 = 0;

/**
 * Sets the output geometry (decoder.ts, setup): the whole image at this scale, or the part of it
 * that covers the source pixels [x, x + w) × [y, y + h) (w ≤ 0: no region), clamped to the image.
 * Returns false when nothing of the region lies in the image.
 */
export function planRegion(x: i32, y: i32, w: i32, h: i32, mcuW: i32, mcuH: i32): bool {
  fullWidth = (F.width * bsY + 7) >> 3;
  fullHeight = (F.height * bsY + 7) >> 3;
  regionOn = w > 0;
  if (!regionOn) {
    regX = 0;
    regY = 0;
    outWidth = fullWidth;
    outHeight = fullHeight;
    winX = 0;
    winW = fullWidth;
    mcuX0 = 0;
    mcuX1 = F.mcusX;
    mcuY0 = 0;
    mcuY1 = F.mcusY;
  } else {
    // The scaled pixels that cover the source box: [floor(x·s), ceil((x + w)·s)), s = bsY / 8.
    const x0 = max(0, <i32>((<i64>max(x, 0) * bsY) >> 3));
    const y0 = max(0, <i32>((<i64>max(y, 0) * bsY) >> 3));
    const x1 = min(fullWidth, <i32>((<i64>x + <i64>w) * bsY + 7 >> 3));
    const y1 = min(fullHeight, <i32>((<i64>y + <i64>h) * bsY + 7 >> 3));
    if (x1 <= x0 || y1 <= y0) return false;
    regX = x0;
    regY = y0;
    outWidth = x1 - x0;
    outHeight = y1 - y0;
    mcuX0 = max(0, x0 / mcuW - 1);
    mcuX1 = min(F.mcusX, (x1 + mcuW - 1) / mcuW + 1);
    // Set from the components' block windows (planUpsampling); none until then, so a component
    // that is never shown (the chroma of grey output) is not transformed at all.
    mcuY0 = F.mcusY;
    mcuY1 = 0;
    for (let c = 0; c < F.ncomp; c++) setBlocks(c, 0, 0, 0, 0);
    winX = mcuX0 * mcuW;
    winW = min(fullWidth, mcuX1 * mcuW) - winX;
  }
  outEnd = regY + outHeight;
  outDone = regY;
  return true;
}

// Per component: row buffer for upsampled samples.
export const ROWBUF: usize = memory.data(F.MAX_COMPONENTS * 4, 16);

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

// How each component's rows reach output resolution, fixed in decoder.ts's setup()
// (planUpsampling): the residual ratios after the IDCT size absorbed what it could, and the filter.
const UP: usize = memory.data(F.MAX_COMPONENTS * 16, 16); // per component: rh, rv, how (i32)
const UP_NONE = 0; //      at output resolution already
const UP_H2V1 = 1; //      triangle filter across
const UP_V2 = 2; //        triangle filter down (h2v2 or h1v2): output row 2k reads rows k − 1 and k, 2k + 1 rows k and k + 1
const UP_REPLICATE = 3; // each sample rh × rv times

export function planUpsampling(c: i32): void {
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
  store<i32>(r + 12, winX / rh); // the window's first sample of c (winX is a whole number of c's MCU samples)
  if (!regionOn) return setBlocks(c, 0, F.cget(c, F.F_BW), 0, F.cget(c, F.F_BH));
  // The blocks of c that the region's pixels read: those under its columns and rows, and one
  // more each side where c is upsampled (the filters read a sample beyond). Luma needs none.
  const m = how == UP_NONE ? 0 : 1;
  const v = F.cget(c, F.F_V);
  const bx0 = max(0, regX / rh / bs - m);
  const bx1 = min(F.cget(c, F.F_BW), ((regX + outWidth + rh - 1) / rh + bs - 1) / bs + m);
  const by0 = max(0, regY / rv / bs - m);
  const by1 = min(F.cget(c, F.F_BH), ((regY + outHeight + rv - 1) / rv + bs - 1) / bs + m);
  setBlocks(c, bx0, bx1, by0, by1);
  mcuY0 = min(mcuY0, by0 / v);
  mcuY1 = max(mcuY1, (by1 + v - 1) / v);
}

// Per component: the blocks transformed, columns [bx0, bx1) and rows [by0, by1) (i32 each).
const BWIN: usize = memory.data(F.MAX_COMPONENTS * 16, 16);

function setBlocks(c: i32, bx0: i32, bx1: i32, by0: i32, by1: i32): void {
  const w = BWIN + (<usize>c << 4);
  store<i32>(w, bx0);
  store<i32>(w + 4, bx1);
  store<i32>(w + 8, by0);
  store<i32>(w + 12, by1);
}

/** The first block column of c's window (planUpsampling). */
// @ts-ignore: decorator
@inline export function blockX0(c: i32): i32 {
  return load<i32>(BWIN + (<usize>c << 4));
}
/** The block column after c's window. */
// @ts-ignore: decorator
@inline export function blockX1(c: i32): i32 {
  return load<i32>(BWIN + (<usize>c << 4) + 4);
}
/** The first block row of c's window. */
// @ts-ignore: decorator
@inline export function blockY0(c: i32): i32 {
  return load<i32>(BWIN + (<usize>c << 4) + 8);
}
/** The block row after c's window. */
// @ts-ignore: decorator
@inline export function blockY1(c: i32): i32 {
  return load<i32>(BWIN + (<usize>c << 4) + 12);
}

/** Samples of component c that the window's row reads from its first one (winCol): to its real edge, or past the window's by a sample. */
// @ts-ignore: decorator
@inline function winSamples(c: i32): i32 {
  const r = UP + (<usize>c << 4);
  const rh = load<i32>(r);
  return min(F.cget(c, F.F_CW) - load<i32>(r + 12), (winW + rh - 1) / rh);
}

/** Where row `y` of component c is, from the window's first sample. */
// @ts-ignore: decorator
@inline function winRowOf(c: i32, y: i32): usize {
  return planeRow(c, y) + <usize>load<i32>(UP + (<usize>c << 4) + 12);
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
  const cw = winSamples(c);
  const ch = F.cget(c, F.F_CH);
  const r = UP + (<usize>c << 4);
  const rh = load<i32>(r);
  const rv = load<i32>(r + 4);
  const how = load<i32>(r + 8);
  if (how == UP_NONE) return winRowOf(c, y);
  const out = <usize>load<u32>(ROWBUF + (<usize>c << 2));
  if (how == UP_H2V1) {
    h2v1(winRowOf(c, y), cw, out);
  } else if (how == UP_V2) {
    const sy = y >> 1;
    const odd = (y & 1) != 0;
    let fy = odd ? sy + 1 : sy - 1;
    if (fy < 0) fy = 0;
    if (fy > ch - 1) fy = ch - 1;
    if (rh == 2) h2v2(winRowOf(c, sy), winRowOf(c, fy), cw, out);
    else h1v2(winRowOf(c, sy), winRowOf(c, fy), cw, out, odd);
  } else {
    let sy = y / rv;
    if (sy > ch - 1) sy = ch - 1;
    replicate(winRowOf(c, sy), cw, rh, out, winW);
  }
  return out;
}

/** Component c is upsampled 2×2 with the triangle filter, and the vector path takes its width. */
// @ts-ignore: decorator
@inline function isH2V2(c: i32): bool {
  const r = UP + (<usize>c << 4);
  return load<i32>(r + 8) == UP_V2 && load<i32>(r) == 2 && h2v2Fits(winSamples(c));
}

/** h2v2Sums for output row `y` of component c (the rows UP_V2 reads, as in componentRow). */
// @ts-ignore: decorator
@inline function sumsRow(c: i32, y: i32, second: bool): usize {
  const sy = y >> 1;
  let fy = (y & 1) != 0 ? sy + 1 : sy - 1;
  if (fy < 0) fy = 0;
  if (fy > F.cget(c, F.F_CH) - 1) fy = F.cget(c, F.F_CH) - 1;
  return h2v2Sums(winRowOf(c, sy), winRowOf(c, fy), winSamples(c), second);
}

/** Output row `y`: the region's columns of its window row. */
function outputRow(y: i32, out: usize): void {
  if (winRow == 0) return windowRow(y, out);
  windowRow(y, winRow);
  memory.copy(out, winRow + <usize>((regX - winX) * outChannels), <usize>(outWidth * outChannels));
}

/** Upsampling and colour conversion of the window's columns of output row `y` into `out`. */
function windowRow(y: i32, out: usize): void {
  const w = winW;
  const cs = outCs;
  if (cs == CS_GRAY || F.lumaOnly) {
    memory.copy(out, componentRow(0, y), w);
    return;
  }
  if (cs == CS_YCBCR && outChannels == 3 && isH2V2(1) && isH2V2(2)) {
    // 4:2:0 photos: the horizontal filter and the conversion in one pass (color.ts).
    yccRowH2V2(componentRow(0, y), sumsRow(1, y, false), sumsRow(2, y, true), out, w);
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
export function emitRows(upTo: i32): void {
  const rowBytes = <usize>(outWidth * outChannels);
  if (upTo > outEnd) upTo = outEnd;
  while (outDone < upTo) {
    const y = outDone - regY; // the host counts the region's rows
    const n = y % stripRows;
    outputRow(outDone, strip + <usize>n * rowBytes);
    outDone++;
    if (n + 1 == stripRows || outDone == outEnd) hostRows(strip, y - n, n + 1);
  }
}

/** Every row of the region has left (decoder.ts and scan.ts stop reading then). */
// @ts-ignore: decorator
@inline export function regionDone(): bool {
  return regionOn && outDone >= outEnd;
}

/** Rows leave as the scan goes (decoder.ts, setup()). */
export let streaming = false;

/**
 * Called by the scan after each row of MCUs (`my` of `down`; a one-component scan's rows are
 * one block high, `blockRows`), and by a progressive image's IDCT after each MCU row: emits
 * every output row whose source rows, upsampling context included, are now decoded. The last
 * row emits the rest.
 */
export function scanRowDone(my: i32, down: i32, blockRows: bool): void {
  if (!streaming) return;
  if (my + 1 >= down) {
    emitRows(outEnd);
    return;
  }
  let upTo = outEnd;
  for (let c = 0; c < (F.lumaOnly ? 1 : F.ncomp); c++) {
    const bs = F.cget(c, F.F_BS);
    const have = (my + 1) * bs * (blockRows ? 1 : F.cget(c, F.F_V)); // rows of c decoded, < its height
    upTo = min(upTo, rowsFrom(c, have));
  }
  emitRows(upTo);
}

/** Forgets the previous image's output (decoder.ts, before the markers are read). */
export function resetOutput(): void {
  outDone = 0;
  streaming = false;
  outWidth = 0;
  outHeight = 0;
  outChannels = 0;
  regionOn = false;
  regX = 0;
  regY = 0;
  winRow = 0;
  outEnd = 0;
}

/** The window's row buffer, where a region's rows are made (decoder.ts allocates it). */
export function setWinRow(p: usize): void {
  winRow = p;
}
