// Marker segments (T.81 Annex B): the parser that walks the interchange format up to each
// scan. It fills frame.ts and the Huffman tables; the scan decoder takes over at each SOS.
//
//   SOI · { tables/misc · } SOF · { { tables/misc } SOS · entropy data } · EOI      (B.2.1)
import * as F from "./frame";
import { buildTable } from "./huffman";
import {
  fail, failed,
  E_TRUNCATED, E_BAD_MARKER, E_BAD_SEGMENT, E_BAD_QUANT_TABLE, E_BAD_HUFFMAN_TABLE, E_BAD_FRAME,
  E_BAD_SCAN, E_NO_FRAME, E_NOT_JPEG, E_EMPTY, E_TOO_MANY_SCANS,
  E_UNSUP_ARITHMETIC, E_UNSUP_LOSSLESS, E_UNSUP_HIERARCHICAL, E_UNSUP_PRECISION, E_UNSUP_SAMPLING,
  E_UNSUP_COMPONENTS, E_UNSUP_DNL,
} from "./errors";

// Natural-order index of each zig-zag position (Figure A.6).
export const ZIGZAG: usize = memory.data<u8>([
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
  12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
  35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
  58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
]);

/** Scans beyond this are refused: each one walks every block, so hostile input could loop. */
export const MAX_SCANS = 1000;

export const M_SOI = 0xd8;
export const M_EOI = 0xd9;
export const M_SOS = 0xda;

/** Where the parser stands: the byte after the last segment read. */
export let cursor: usize = 0;

@inline function u8at(p: usize): i32 {
  return <i32>load<u8>(p);
}
@inline function u16at(p: usize): i32 {
  return (<i32>load<u8>(p) << 8) | <i32>load<u8>(p + 1);
}

/** Checks SOI (B.2.1) and sets the cursor after it. */
export function begin(): i32 {
  const n = F.srcEnd - F.src;
  if (n == 0) return fail(E_EMPTY, 0);
  if (n < 2 || u8at(F.src) != 0xff || u8at(F.src + 1) != M_SOI) return fail(E_NOT_JPEG, 0);
  cursor = F.src + 2;
  return 0;
}

/**
 * Reads segments until SOS or EOI. Returns the marker that stopped it (M_SOS with the scan
 * header parsed and the cursor on the first entropy-coded byte, or M_EOI), or -1 on error.
 * `headerOnly` stops at SOS without checking the scan's tables (inspect()).
 */
export function nextScan(headerOnly: bool): i32 {
  while (true) {
    const end = F.srcEnd;
    if (cursor >= end) {
      fail(E_TRUNCATED, F.offsetOf(end));
      return -1;
    }
    if (u8at(cursor) != 0xff) {
      fail(E_BAD_MARKER, F.offsetOf(cursor));
      return -1;
    }
    // B.1.1.2: any marker may be preceded by fill bytes 0xFF.
    let p = cursor;
    while (p < end && u8at(p) == 0xff) p++;
    if (p >= end) {
      fail(E_TRUNCATED, F.offsetOf(end));
      return -1;
    }
    const m = u8at(p);
    const at = F.offsetOf(p - 1);
    p++;
    if (m == M_EOI) {
      cursor = p;
      return M_EOI;
    }
    if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      // TEM and RSTn stand alone (B.1.1.3); RSTn outside a scan is harmless, as libjpeg treats it.
      cursor = p;
      continue;
    }
    if (m == 0x00 || m == M_SOI) {
      fail(E_BAD_MARKER, at);
      return -1;
    }
    // Every other marker starts a segment with a 2-byte length that counts itself (B.1.1.4).
    if (p + 2 > end) {
      fail(E_TRUNCATED, F.offsetOf(end));
      return -1;
    }
    const len = u16at(p);
    if (len < 2) {
      fail(E_BAD_SEGMENT, F.offsetOf(p));
      return -1;
    }
    const body = p + 2;
    const stop = p + len;
    if (stop > end) {
      fail(E_TRUNCATED, F.offsetOf(end));
      return -1;
    }
    cursor = stop;
    if (m == 0xc4) readDHT(body, stop);
    else if (m == 0xdb) readDQT(body, stop);
    else if (m == 0xdd) readDRI(body, stop);
    else if (m == 0xcc) {
      if (!headerOnly) fail(E_UNSUP_ARITHMETIC, at); // DAC: conditioning for arithmetic coding
    }
    else if (m >= 0xc0 && m <= 0xcf) readSOF(m, body, stop, at, headerOnly);
    else if (m == 0xde || m == 0xdf) fail(E_UNSUP_HIERARCHICAL, at); // DHP, EXP
    else if (m == 0xe0) readJFIF(body, stop);
    else if (m == 0xe1) readExif(body, stop);
    else if (m == 0xee) readAdobe(body, stop);
    else if (m == M_SOS) {
      readSOS(body, stop, at, headerOnly);
      if (failed()) return -1;
      return M_SOS;
    }
    // APPn, COM, JPGn and reserved markers: skipped by their length.
    if (failed()) return -1;
  }
}

/** DQT (B.2.4.1): one or more tables, 8- or 16-bit entries in zig-zag order. */
function readDQT(p: usize, stop: usize): void {
  while (p < stop) {
    const pq = u8at(p) >> 4;
    const tq = u8at(p) & 15;
    if (pq > 1 || tq > 3) {
      fail(E_BAD_QUANT_TABLE, F.offsetOf(p));
      return;
    }
    p++;
    const size = pq ? 128 : 64;
    if (p + size > stop) {
      fail(E_BAD_SEGMENT, F.offsetOf(p));
      return;
    }
    const table = F.QUANT + (<usize>tq << 7);
    for (let k = 0; k < 64; k++) {
      const q = pq ? u16at(p + (k << 1)) : u8at(p + k);
      store<u16>(table + ((<usize>load<u8>(ZIGZAG + k)) << 1), <u16>q);
    }
    F.quantDefined |= 1 << tq;
    p += size;
  }
}

/** DHT (B.2.4.2): one or more tables. */
function readDHT(p: usize, stop: usize): void {
  while (p < stop) {
    if (p + 17 > stop) {
      fail(E_BAD_SEGMENT, F.offsetOf(p));
      return;
    }
    const tc = u8at(p) >> 4;
    const th = u8at(p) & 15;
    if (tc > 1 || th > 3) {
      fail(E_BAD_HUFFMAN_TABLE, F.offsetOf(p));
      return;
    }
    let n = 0;
    for (let i = 1; i <= 16; i++) n += u8at(p + i);
    if (n > 256 || n == 0) {
      fail(E_BAD_HUFFMAN_TABLE, F.offsetOf(p));
      return;
    }
    if (p + 17 + n > stop) {
      fail(E_BAD_SEGMENT, F.offsetOf(p));
      return;
    }
    if (buildTable(tc * 4 + th, p + 1, p + 17, n, F.offsetOf(p)) != 0) return;
    p += 17 + n;
  }
}

/** DRI (B.2.4.4). */
function readDRI(p: usize, stop: usize): void {
  if (stop - p != 2) {
    fail(E_BAD_SEGMENT, F.offsetOf(p));
    return;
  }
  F.restartInterval = u16at(p);
}

/** SOFn (B.2.2). Coding processes other than Huffman sequential/progressive are refused. */
function readSOF(m: i32, p: usize, stop: usize, at: i32, headerOnly: bool): void {
  if (F.sofMarker != 0) {
    fail(E_BAD_FRAME, at); // one frame per image (hierarchical mode is refused below)
    return;
  }
  if (stop - p < 6) {
    fail(E_BAD_SEGMENT, F.offsetOf(p));
    return;
  }
  F.sofMarker = m;
  F.sofOffset = at;
  F.precision = u8at(p);
  F.height = u16at(p + 1);
  F.width = u16at(p + 3);
  const nf = u8at(p + 5);
  F.ncomp = nf;
  F.progressive = m == 0xc2 || m == 0xca;
  if (stop - p != 6 + 3 * nf) {
    fail(E_BAD_SEGMENT, F.offsetOf(p));
    return;
  }
  if (F.width == 0 || nf == 0) {
    fail(E_BAD_FRAME, F.offsetOf(p));
    return;
  }
  let hmax = 1;
  let vmax = 1;
  for (let i = 0; i < nf && i < F.MAX_COMPONENTS; i++) {
    const q = p + 6 + 3 * i;
    const h = u8at(q + 1) >> 4;
    const v = u8at(q + 1) & 15;
    const tq = u8at(q + 2);
    if (h < 1 || h > 4 || v < 1 || v > 4 || tq > 3) {
      fail(E_BAD_FRAME, F.offsetOf(q));
      return;
    }
    for (let j = 0; j < i; j++) {
      if (F.cget(j, F.F_ID) == u8at(q)) {
        fail(E_BAD_FRAME, F.offsetOf(q)); // identifiers must differ (B.2.2)
        return;
      }
    }
    F.cset(i, F.F_ID, u8at(q));
    F.cset(i, F.F_H, h);
    F.cset(i, F.F_V, v);
    F.cset(i, F.F_TQ, tq);
    if (h > hmax) hmax = h;
    if (v > vmax) vmax = v;
  }
  if (headerOnly) {
    F.hmax = hmax;
    F.vmax = vmax;
    return; // inspect() reports any frame; decoding refuses what it cannot do, below
  }
  // What this decoder implements: Huffman, 8-bit, sequential or progressive, 1, 3 or 4 components.
  if (m == 0xc3 || m == 0xc7 || m == 0xcb || m == 0xcf) fail(E_UNSUP_LOSSLESS, at);
  else if (m == 0xc5 || m == 0xc6) fail(E_UNSUP_HIERARCHICAL, at);
  else if (m >= 0xc8) fail(m == 0xc8 ? E_BAD_MARKER : E_UNSUP_ARITHMETIC, at); // 0xC8 is JPG, reserved
  else if (F.precision != 8) fail(E_UNSUP_PRECISION, F.offsetOf(p));
  else if (F.height == 0) fail(E_UNSUP_DNL, F.offsetOf(p + 1));
  else if (nf == 2 || nf > 4) fail(E_UNSUP_COMPONENTS, F.offsetOf(p + 5));
  if (failed()) return;
  if (nf == 1) {
    // A single-component frame is one non-interleaved scan: its MCU is one block (A.2.2),
    // whatever sampling factors it declares.
    F.cset(0, F.F_H, 1);
    F.cset(0, F.F_V, 1);
    hmax = 1;
    vmax = 1;
  }
  for (let i = 0; i < nf; i++) {
    // Upsampling by integer ratios only (as libjpeg): 3:2 sampling has no simple filter.
    if (hmax % F.cget(i, F.F_H) != 0 || vmax % F.cget(i, F.F_V) != 0) {
      fail(E_UNSUP_SAMPLING, F.offsetOf(p + 6 + 3 * i + 1));
      return;
    }
  }
  F.hmax = hmax;
  F.vmax = vmax;
  F.mcusX = (F.width + 8 * hmax - 1) / (8 * hmax);
  F.mcusY = (F.height + 8 * vmax - 1) / (8 * vmax);
}

/** SOS (B.2.3), with the parameter limits of B.2.3 and G.1.1.1.1 for progressive scans. */
function readSOS(p: usize, stop: usize, at: i32, headerOnly: bool): void {
  if (F.sofMarker == 0) {
    fail(E_NO_FRAME, at);
    return;
  }
  if (++F.scanCount > MAX_SCANS) {
    fail(E_TOO_MANY_SCANS, at);
    return;
  }
  if (stop - p < 1) {
    fail(E_BAD_SEGMENT, F.offsetOf(p));
    return;
  }
  const ns = u8at(p);
  if (ns < 1 || ns > 4 || ns > F.ncomp || stop - p != 4 + 2 * ns) {
    fail(ns < 1 || ns > 4 || ns > F.ncomp ? E_BAD_SCAN : E_BAD_SEGMENT, F.offsetOf(p));
    return;
  }
  F.scanNs = ns;
  let blocks = 0;
  for (let i = 0; i < ns; i++) {
    const q = p + 1 + 2 * i;
    const id = u8at(q);
    let c = -1;
    for (let j = 0; j < F.ncomp; j++) if (F.cget(j, F.F_ID) == id) c = j;
    for (let j = 0; j < i; j++) if (F.scanComp(j) == c) c = -1; // each component once per scan
    const td = u8at(q + 1) >> 4;
    const ta = u8at(q + 1) & 15;
    if (c < 0 || td > 3 || ta > 3) {
      fail(E_BAD_SCAN, F.offsetOf(q));
      return;
    }
    store<i32>(F.SCAN_COMP + (<usize>i << 2), c);
    F.cset(c, F.F_TD, td);
    F.cset(c, F.F_TA, ta);
    blocks += F.cget(c, F.F_H) * F.cget(c, F.F_V);
  }
  const q = p + 1 + 2 * ns;
  F.ss = u8at(q);
  F.se = u8at(q + 1);
  F.ah = u8at(q + 2) >> 4;
  F.al = u8at(q + 2) & 15;
  if (headerOnly) return;
  // B.2.3: at most 10 blocks in an interleaved MCU.
  if (ns > 1 && blocks > 10) {
    fail(E_BAD_SCAN, F.offsetOf(p));
    return;
  }
  if (F.progressive) {
    // G.1.1.1.1: a DC scan has Se = 0; an AC scan has one component and Ss ≤ Se ≤ 63.
    const bad = F.ss == 0 ? F.se != 0 : F.se < F.ss || F.se > 63 || ns != 1;
    if (bad || F.al > 13 || F.ah > 13) fail(E_BAD_SCAN, F.offsetOf(q));
  } else if (F.ss != 0 || F.se != 63 || F.ah != 0 || F.al != 0) {
    // Sequential scans are full-spectrum; libjpeg accepts and ignores odd values here, and
    // so do we, since some encoders write Se = 0 for sequential scans.
  }
}

// ─── application segments ──────────────────────────────────────────────────────────────────────

function readJFIF(p: usize, stop: usize): void {
  if (stop - p >= 5 && load<u32>(p) == 0x4649464a && u8at(p + 4) == 0) F.jfif = true; // "JFIF\0"
}

/** APP14 "Adobe": byte 11 of the body is the colour transform (0 none, 1 YCbCr, 2 YCCK). */
function readAdobe(p: usize, stop: usize): void {
  if (stop - p >= 12 && load<u32>(p) == 0x626f6441 && u8at(p + 4) == 0x65) F.adobeTransform = u8at(p + 11);
}

/** APP1 "Exif\0\0" + TIFF: orientation is tag 0x0112 (SHORT) of IFD0. Malformed Exif is ignored. */
function readExif(p: usize, stop: usize): void {
  if (stop - p < 14 || load<u32>(p) != 0x66697845 || load<u16>(p + 4) != 0) return; // "Exif\0\0"
  const t = p + 6;
  const n = <i32>(stop - t);
  const little = load<u16>(t) == 0x4949; // "II" little-endian, "MM" big-endian
  if (!little && load<u16>(t) != 0x4d4d) return;
  const ifd = tiff32(t, 4, little);
  if (ifd < 8 || ifd + 2 > n) return;
  const count = tiff16(t, ifd, little);
  for (let i = 0; i < count; i++) {
    const e = ifd + 2 + 12 * i;
    if (e + 12 > n) return;
    if (tiff16(t, e, little) == 0x0112 && tiff16(t, e + 2, little) == 3) {
      const o = tiff16(t, e + 8, little);
      if (o >= 1 && o <= 8) F.orientation = o;
      return;
    }
  }
}

function tiff16(t: usize, at: i32, little: bool): i32 {
  const a = <i32>load<u8>(t + at);
  const b = <i32>load<u8>(t + at + 1);
  return little ? a | (b << 8) : (a << 8) | b;
}
function tiff32(t: usize, at: i32, little: bool): i32 {
  const v = little ? tiff16(t, at, true) | (tiff16(t, at + 2, true) << 16) : (tiff16(t, at, false) << 16) | tiff16(t, at + 2, false);
  return v < 0 ? 0x7fffffff : v;
}
