// The JPEG decoder's flat numeric exports (no managed objects cross the boundary).
// The host (src/decode/jpeg.ts) owns every message; the module returns codes and offsets.
//
// Use: reset(); p = alloc(n); copy the file to p; decode(p, n, scaleLog2, maxPixels, mode, rx, ry, rw, rh);
// pixels reach the host through its env.rows(ptr, y0, n) during decode (output.ts), the first
// call with n = 0 as soon as outWidth/outHeight/outChannels are known; then read
// outWidth/… or comp*(c) (coefficients) before the next reset().
import * as F from "./frame";
import * as O from "./output";
import { QLATCH } from "./scan";
import * as M from "./markers";
import * as H from "./huffman";

export { alloc, reset } from "../common/memory";

/**
 * What the host may ask of this build (src/decode/wasm_module.ts checks it): raise it whenever
 * an export's meaning or a mode changes. 2: decode() mode 2, grey output. 3: pixels leave
 * through the imported env.rows(ptr, y0, n), strip by strip; no outPtr. 4: decode() takes a
 * region (rx, ry, rw, rh; rw 0: the whole image). 5: the region applies to coefficients too
 * (compBlockX0…Y1, outX, outY). 6: after inspect(), the first scan's facts and the tables
 * (scanStart, scanComponent, compTd, compTa, huffmanDefined, huffmanSource, quantDefined,
 * quantTable) and unstuff(), for the GPU's Huffman decode.
 */
export function abiVersion(): i32 { return 6; }
export { idctTest } from "./idct";
export { errorCode, errorOffset } from "./errors";
export { decode, inspect } from "./decoder";
export { unstuff, unstuffedData, unstuffedCuts, unstuffedLength, unstuffedMarker } from "./unstuff";
export { colorSpace } from "./output";

export function outWidth(): i32 { return O.outWidth; }
export function outHeight(): i32 { return O.outHeight; }
export function outChannels(): i32 { return O.outChannels; }

// Frame facts (after inspect or decode).
export function frameWidth(): i32 { return F.width; }
export function frameHeight(): i32 { return F.height; }
export function frameComponents(): i32 { return F.ncomp; }
export function frameMarker(): i32 { return F.sofMarker; }
export function framePrecision(): i32 { return F.precision; }
export function frameRestartInterval(): i32 { return F.restartInterval; }
export function frameOrientation(): i32 { return F.orientation; }
export function frameAdobeTransform(): i32 { return F.adobeTransform; }
export function frameJfif(): bool { return F.jfif; }

// Per component c.
export function compId(c: i32): i32 { return F.cget(c, F.F_ID); }
export function compH(c: i32): i32 { return F.cget(c, F.F_H); }
export function compV(c: i32): i32 { return F.cget(c, F.F_V); }
export function compTq(c: i32): i32 { return F.cget(c, F.F_TQ); }
/** Coefficient mode: blocks across and down (padded to whole MCUs), 64 i16 each, natural order. */
export function compBlocksW(c: i32): i32 { return F.cget(c, F.F_BW); }
export function compBlocksH(c: i32): i32 { return F.cget(c, F.F_BH); }
export function compCoefficients(c: i32): usize { return <usize>F.cget(c, F.F_COEF); }
/** Coefficient mode: the component's quantization table, 64 u16 in natural order. */
export function compQuant(c: i32): usize { return QLATCH + (<usize>c << 7); }
/** With a region: the blocks of c its pixels read, columns [x0, x1) and rows [y0, y1) (the whole grid without one). */
export function compBlockX0(c: i32): i32 { return O.regionOn ? O.blockX0(c) : 0; }
export function compBlockX1(c: i32): i32 { return O.regionOn ? O.blockX1(c) : F.cget(c, F.F_BW); }
export function compBlockY0(c: i32): i32 { return O.regionOn ? O.blockY0(c) : 0; }
export function compBlockY1(c: i32): i32 { return O.regionOn ? O.blockY1(c) : F.cget(c, F.F_BH); }
/** The region's first column and row in the output's pixels (0 without one). */
export function outX(): i32 { return O.regX; }
export function outY(): i32 { return O.regY; }

// The first scan's facts and the tables in force at it (after inspect), for the GPU's Huffman
// decode (src/decode/jpeg.ts, readScan).
/** Byte offset of the first scan's entropy-coded data. */
export function scanStart(): i32 { return F.offsetOf(M.cursor); }
export function scanComponents(): i32 { return F.scanNs; }
/** Frame index of the scan's i-th component. */
export function scanComponent(i: i32): i32 { return F.scanComp(i); }
export function scanSs(): i32 { return F.ss; }
export function scanSe(): i32 { return F.se; }
export function scanAh(): i32 { return F.ah; }
export function scanAl(): i32 { return F.al; }
/** The scan's DC and AC table of component c. */
export function compTd(c: i32): i32 { return F.cget(c, F.F_TD); }
export function compTa(c: i32): i32 { return F.cget(c, F.F_TA); }
/** Bit s set once Huffman slot s (DC 0–3, AC 4–7) is defined. */
export function huffmanDefined(): i32 { return H.tablesDefined; }
/** Slot s's source: n (i32), 16 counts, n symbols. */
export function huffmanSource(s: i32): usize { return H.tableSource(s); }
/** Bit t set once quantization table t is defined. */
export function quantDefined(): i32 { return F.quantDefined; }
/** Quantization table t: 64 u16 in natural order. */
export function quantTable(t: i32): usize { return F.QUANT + (<usize>t << 7); }
