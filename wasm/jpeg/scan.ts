// Scan decoding (T.81 Annex F for sequential, Annex G for progressive Huffman scans): entropy
// data → quantized DCT coefficients. Two consumers of the blocks:
//   • direct: sequential scans in pixel mode decode each block into SCRATCH and hand it to the
//     IDCT at once (no coefficient buffer: one pass over memory);
//   • stored: progressive scans, and coefficient mode, accumulate into the component's COEF
//     buffer (frame.ts), which the IDCT, or the host in coefficient mode, reads at the end.
import * as F from "./frame";
import * as H from "./huffman";
import * as M from "./markers";
import { buildQF, idctBlock, reducedUses } from "./idct";
import { scanRowDone } from "./output";
import * as O from "./output";
import {
  fail, failed, E_BAD_COEFFICIENT, E_BAD_HUFFMAN_CODE, E_BAD_RESTART, E_MISSING_TABLE, E_SHORT_SCAN, E_TRUNCATED,
} from "./errors";

// Byte offset, inside a block in natural order, of each zig-zag position.
const ZZT: usize = memory.data(64, 16);
let zztReady = false;

function buildZZT(): void {
  for (let k = 0; k < 64; k++) {
    store<u8>(ZZT + k, <u8>(<i32>load<u8>(M.ZIGZAG + k) << 1)); // natural index v·8 + u
  }
  zztReady = true;
}

/** Per component: the quantization table latched at its first scan (natural u16: the integer IDCT's), and QF (f32, the DC and reduced IDCTs'). */
export const QLATCH: usize = memory.data(F.MAX_COMPONENTS * 128, 16);
export const QF: usize = memory.data(F.MAX_COMPONENTS * 256, 16);

/** One block of coefficients for direct mode; all zero between blocks. */
const SCRATCH: usize = memory.data(64 * 2 + 16, 16);

let eobrun: i32 = 0;
/** Bits Ss…Se: the spectral band of the current scan, as in NZ. */
let bandMask: u64 = 0;

/**
 * Per component, a pointer to one u64 per block (progressive only): bit k is set once the AC
 * coefficient at zig-zag index k is non-zero. Refinement scans (G.1.2.3) read a correction bit
 * for each non-zero coefficient they pass and count zero ones to place new coefficients: the
 * mask gives both without loading the coefficients, and its top bit is the block's last
 * non-zero coefficient, which bounds the IDCT (decoder.ts).
 */
export const NZ: usize = memory.data(F.MAX_COMPONENTS * 4, 16);
let nextRst: i32 = 0;

/**
 * The last scan ended at a region's last MCU row and carried every component of a sequential
 * image: the region's pixels are all decoded, and the rest of the file is not read at all
 * (decoder.ts), not even to find its end.
 */
export let regionComplete = false;

// @ts-ignore: decorator
@inline function coefAt(c: i32, bx: i32, by: i32): usize {
  return <usize>F.cget(c, F.F_COEF) + <usize>(by * F.cget(c, F.F_BW) + bx) * <usize>F.cget(c, F.F_CSZ);
}

/**
 * Per component, where a progressive scan puts each coefficient (zig-zag index → byte offset in
 * its stored block); for a block stored in part at 1/2 or 1/4, which stored row each row v of
 * the block is (255: none), the bytes of a stored row, and the swizzle that spreads one back to
 * its 8 lanes (expandBlock). See planStorage.
 */
const ZZC: usize = memory.data(F.MAX_COMPONENTS * 64, 16);
const KROW: usize = memory.data(F.MAX_COMPONENTS * 8, 16);
const KROWBYTES: usize = memory.data(F.MAX_COMPONENTS * 4, 16);
const KSWZ: usize = memory.data(F.MAX_COMPONENTS * 16, 16);

/**
 * How component c's blocks are stored, and returns the bytes per block (F_CSZ). A progressive
 * image's coefficients are held until its last scan, but its IDCT reads only some of them:
 *   • n = 8 (and coefficient mode): all 64, in natural order (128 bytes);
 *   • n = 4 or 2 (scaled output): the rows and columns u, v the reduced transform reads
 *     (idct.ts, reducedUses), 7 × 7 or 5 × 5 row by row, then a slot that takes every
 *     coefficient it does not read;
 *   • n = 1: the DC, and that slot (4 bytes);
 *   • n = 0 (a chroma component of grey output): none; every block is one shared slot.
 * Every coefficient is still decoded, and its history (NZ) kept, so the scans stay in sync and
 * refinements read the right bits (G.1.2.3); a slot's contents are never read back. The buffer
 * wants 16 bytes past its last block: expandBlock loads whole v128s.
 */
export function planStorage(c: i32, n: i32): i32 {
  const zz = ZZC + (<usize>c << 6);
  if (!zztReady) buildZZT();
  if (n == 8) {
    memory.copy(zz, ZZT, 64);
    return 128;
  }
  if (n <= 1) {
    memory.fill(zz, n == 0 ? 0 : 2, 64); // n = 1: the slot, after the DC
    store<u8>(zz, 0);
    return n == 0 ? 0 : 4;
  }
  // Stored position of each frequency (the same set across and down), and the swizzle.
  const rows = KROW + (<usize>c << 3);
  const swz = KSWZ + (<usize>c << 4);
  let kept = 0;
  for (let k = 0; k < 8; k++) {
    const uses = reducedUses(n, k);
    store<u8>(rows + k, uses ? kept : 255);
    store<u8>(swz + (k << 1), uses ? kept << 1 : 0x80); // ≥ 16: the lane becomes 0
    store<u8>(swz + (k << 1) + 1, uses ? (kept << 1) + 1 : 0x80);
    if (uses) kept++;
  }
  const slot = kept * kept;
  for (let k = 0; k < 64; k++) {
    const nat = <i32>load<u8>(ZZT + k) >> 1;
    const rv = <i32>load<u8>(rows + (nat >> 3));
    const ru = <i32>load<u8>(rows + (nat & 7));
    store<u8>(zz + k, <u8>((rv == 255 || ru == 255 ? slot : rv * kept + ru) << 1));
  }
  store<i32>(KROWBYTES + (<usize>c << 2), kept << 1);
  return (slot + 1) << 1;
}

/** A block of component c stored at 1/2 or 1/4 (planStorage) back in natural order into `full`. */
export function expandBlock(c: i32, blk: usize, full: usize): void {
  const rows = KROW + (<usize>c << 3);
  const rb = <usize>load<i32>(KROWBYTES + (<usize>c << 2));
  const m = v128.load(KSWZ + (<usize>c << 4));
  for (let v = 0; v < 8; v++) {
    const r = <usize>load<u8>(rows + v);
    const row = r == 255 ? i32x4.splat(0) : i8x16.swizzle(v128.load(blk + r * rb), m);
    v128.store(full + (<usize>v << 4), row);
  }
}

/**
 * Decodes the scan whose header markers.ts just read; the bit reader starts at M.cursor.
 * On return M.cursor is at the marker after the entropy-coded data. Returns 0 or an error.
 */
export function decodeScan(direct: bool): i32 {
  if (!zztReady) buildZZT();
  const ns = F.scanNs;
  const prog = F.progressive;
  const needDC = !prog || (F.ss == 0 && F.ah == 0);
  const needAC = !prog || F.ss > 0;
  for (let i = 0; i < ns; i++) {
    const c = F.scanComp(i);
    const tq = F.cget(c, F.F_TQ);
    if ((F.quantDefined & (1 << tq)) == 0) return fail(E_MISSING_TABLE, F.offsetOf(M.cursor));
    if (needDC && (H.tablesDefined & (1 << F.cget(c, F.F_TD))) == 0) return fail(E_MISSING_TABLE, F.offsetOf(M.cursor));
    if (needAC && (H.tablesDefined & (1 << (4 + F.cget(c, F.F_TA)))) == 0) return fail(E_MISSING_TABLE, F.offsetOf(M.cursor));
    if (F.cget(c, F.F_SEEN) == 0) {
      // The table in force at a component's first scan is the one its samples use (B.2.4.1).
      const q = QLATCH + (<usize>c << 7);
      memory.copy(q, F.QUANT + (<usize>tq << 7), 128);
      buildQF(q, QF + (<usize>c << 8));
      F.cset(c, F.F_SEEN, 1);
    }
    F.cset(c, F.F_PRED, 0);
  }
  eobrun = 0;
  nextRst = 0;
  H.startBits(M.cursor);

  // A scan of one component is non-interleaved: its MCU is one block, and it covers only the
  // component's own blocks, not the MCU padding (A.2.2). Otherwise MCUs follow A.2.3.
  let across = F.mcusX;
  let down = F.mcusY;
  const c0 = F.scanComp(0);
  if (ns == 1) {
    const cw = (F.width * F.cget(c0, F.F_H) + F.hmax - 1) / F.hmax;
    const ch = (F.height * F.cget(c0, F.F_V) + F.vmax - 1) / F.vmax;
    across = (cw + 7) >> 3;
    down = (ch + 7) >> 3;
  }
  const kind = !prog ? 0 : F.ss == 0 ? (F.ah == 0 ? 1 : 2) : F.ah == 0 ? 3 : 4;
  bandMask = (<u64>-1 << <u64>F.ss) & (<u64>-1 >> <u64>(63 - F.se)); // zig-zag ss…se
  const interval = F.restartInterval;
  let left = interval;
  // A region's rows end at its window's last MCU row (output.ts, planRegion): the rest of the
  // scan is not decoded, only skipped to its end.
  const stop = !O.regionOn ? down : ns == 1 ? min(down, O.blockY1(c0)) : O.mcuY1;
  regionComplete = false;
  // A whole restart interval none of whose blocks a region's window holds is skipped unread
  // (NOTE [ Skipping restart intervals ]): sequential scans only (pixels, or a region's
  // coefficients, whose blocks outside the window stay zero and are never handed over).
  const skipping = interval != 0 && O.regionOn && kind == 0;
  const total = stop * across;
  let mx = 0, my = 0;
  for (let m = 0; m < total;) {
    if (interval != 0) {
      if (left == 0) {
        if (!restart()) return failedCode();
        left = interval;
      }
      if (skipping && left == interval && m + interval < total && intervalOutside(mx, my, interval, across, ns, c0)) {
        if (!skipInterval()) return failedCode();
        m += interval;
        mx += interval;
        while (mx >= across) {
          mx -= across;
          scanRowDone(my++, down, ns == 1);
        }
        continue;
      }
      left--;
    }
    if (ns == 1) {
      block(kind, c0, mx, my, direct);
    } else {
      for (let i = 0; i < ns; i++) {
        const c = F.scanComp(i);
        const h = F.cget(c, F.F_H);
        const v = F.cget(c, F.F_V);
        for (let y = 0; y < v; y++) {
          for (let x = 0; x < h; x++) block(kind, c, mx * h + x, my * v + y, direct);
        }
      }
    }
    m++;
    if (++mx == across) {
      mx = 0;
      if (failed()) return failedCode();
      if (H.overran()) return shortScan();
      scanRowDone(my++, down, ns == 1);
    }
  }
  if (H.overran()) return shortScan();
  if (stop < down && !prog && ns == F.ncomp) {
    regionComplete = true;
    return 0;
  }
  // Skip to the next marker: whatever follows the last MCU before it is padding (libjpeg warns
  // about such bytes and goes on; so do we).
  let p = H.pos;
  const end = F.srcEnd;
  while (p + 1 < end) {
    if (load<u8>(p) == 0xff) {
      const m = load<u8>(p + 1);
      if (m != 0 && m != 0xff && (m < 0xd0 || m > 0xd7)) break;
    }
    p++;
  }
  M.cursor = p + 1 < end ? p : end;
  return 0;
}

// @ts-ignore: decorator
@inline function failedCode(): i32 {
  return 1;
}

function shortScan(): i32 {
  return H.pos >= F.srcEnd ? fail(E_TRUNCATED, F.offsetOf(F.srcEnd)) : fail(E_SHORT_SCAN, F.offsetOf(H.pos));
}

/** End of a restart interval (E.2.4, Figure E.9): find RSTm, reset the DC predictions and EOBRUN. */
function restart(): bool {
  if (H.overran()) {
    shortScan();
    return false;
  }
  // The bits left in the buffer are the fill bits of the interval's last byte.
  let p = H.pos;
  const end = F.srcEnd;
  while (p + 1 < end && load<u8>(p) == 0xff && load<u8>(p + 1) == 0xff) p++; // fill bytes (B.1.1.2)
  return restartAt(p);
}

/**
 * NOTE [ Skipping restart intervals ]
 * An interval's entropy-coded bytes hold no marker (an 0xFF data byte is followed by a stuffed
 * 0x00, B.1.1.5), and the DC predictions start again after its RSTm (E.2.4), so an interval
 * whose MCUs all lie outside a region's window can be passed over by looking for the next
 * 0xFF that starts a marker, without decoding a code: the blocks after it decode as they
 * would have. The bytes passed over are not checked (as the rows below a region are not read).
 */
function skipInterval(): bool {
  let p = H.pos;
  const end = F.srcEnd;
  while (p + 1 < end) {
    if (load<u8>(p) == 0xff) {
      const m = load<u8>(p + 1);
      if (m != 0 && m != 0xff) break;
      p += m == 0 ? 2 : 1;
    } else {
      p++;
    }
  }
  return restartAt(p);
}

/** RSTm at p (the one due, else a named error), then the next interval: bits from after it, predictions and EOBRUN reset. */
function restartAt(p: usize): bool {
  const end = F.srcEnd;
  if (p + 1 >= end) {
    fail(E_TRUNCATED, F.offsetOf(end));
    return false;
  }
  if (load<u8>(p) != 0xff || <i32>load<u8>(p + 1) != 0xd0 + nextRst) {
    fail(E_BAD_RESTART, F.offsetOf(p));
    return false;
  }
  nextRst = (nextRst + 1) & 7;
  H.startBits(p + 2);
  for (let i = 0; i < F.scanNs; i++) F.cset(F.scanComp(i), F.F_PRED, 0);
  eobrun = 0;
  return true;
}

/** The `count` MCUs from (mx, my) on, row by row, hold no block of any scan component's window. */
function intervalOutside(mx: i32, my: i32, count: i32, across: i32, ns: i32, c0: i32): bool {
  for (let k = 0; k < count; k++) {
    if (ns == 1) {
      if (!outsideWindow(c0, mx, my)) return false;
    } else {
      for (let i = 0; i < ns; i++) {
        const c = F.scanComp(i);
        const h = F.cget(c, F.F_H);
        const v = F.cget(c, F.F_V);
        if (mx * h < O.blockX1(c) && mx * h + h > O.blockX0(c) && my * v < O.blockY1(c) && my * v + v > O.blockY0(c)) return false;
      }
    }
    if (++mx == across) {
      mx = 0;
      my++;
    }
  }
  return true;
}

// @ts-ignore: decorator
@inline function block(kind: i32, c: i32, bx: i32, by: i32, direct: bool): void {
  if (kind == 0) {
    if (direct) {
      const last = sequential(SCRATCH, c);
      if ((c > 0 && F.lumaOnly) || (O.regionOn && outsideWindow(c, bx, by))) {
        // Grey output of a YCbCr file: the chroma must be read past, but is never shown; nor
        // is a block outside a region's window.
        clearScratch();
        return;
      }
      const bs = F.cget(c, F.F_BS);
      const stride = F.cget(c, F.F_STRIDE);
      const dst = <usize>F.cget(c, F.F_PLANE) + <usize>(((by * bs) & F.cget(c, F.F_RMASK)) * stride + bx * bs);
      idctBlock(SCRATCH, QF + (<usize>c << 8), QLATCH + (<usize>c << 7), dst, stride, bs, last);
      clearScratch();
    } else {
      sequential(coefAt(c, bx, by), c);
    }
  } else if (kind == 1) dcFirst(coefAt(c, bx, by), c);
  else if (kind == 2) dcRefine(coefAt(c, bx, by));
  else if (kind == 3 && eobrun > 0) eobrun--; // inside an EOB run: nothing to read (G.1.2.2)
  else {
    const mp = <usize>load<u32>(NZ + (<usize>c << 2)) + (<usize>(by * F.cget(c, F.F_BW) + bx) << 3);
    if (kind == 3) acFirst(coefAt(c, bx, by), c, mp);
    else if (eobrun > 0 && (load<u64>(mp) & bandMask) == 0) eobrun--; // no bit to read either (G.1.2.3)
    else acRefine(coefAt(c, bx, by), c, mp);
  }
}

/** Block (bx, by) of component c lies outside its window (output.ts, planUpsampling). */
function outsideWindow(c: i32, bx: i32, by: i32): bool {
  return bx < O.blockX0(c) || bx >= O.blockX1(c) || by < O.blockY0(c) || by >= O.blockY1(c);
}

// @ts-ignore: decorator
@inline function clearScratch(): void {
  const z = i32x4.splat(0);
  for (let i = 0; i < 8; i++) v128.store(SCRATCH + (<usize>i << 4), z);
}

/** DC difference (F.2.2.1): a category from the DC table, then that many magnitude bits. */
// @ts-ignore: decorator
@inline function dcDiff(c: i32): i32 {
  H.ensure(32);
  const t = H.decodeSym(F.cget(c, F.F_TD));
  if (t == 0) return 0;
  if (t > 15) {
    fail(E_BAD_HUFFMAN_CODE, H.bitOffset());
    return 0;
  }
  return H.receiveExtend(t);
}

/**
 * One block of a sequential scan (F.2.2.1, F.2.2.2) into `dst`, which holds zeros.
 * Returns the zig-zag index of the last non-zero coefficient (0 when only the DC may be).
 *
 * The bit reader's state lives in locals here (globals cost a load and a store each use); it
 * goes back to huffman.ts on the way out and around the careful refill. A refill when fewer
 * than 32 bits are left covers one code (≤ 16 bits) and its magnitude (≤ 15).
 */
function sequential(dst: usize, c: i32): i32 {
  let buf = H.bitbuf;
  let cnt = H.bitcnt;
  let p = H.pos;
  const end = F.srcEnd;
  // DC (F.2.2.1)
  if (cnt < 32) {
    const v = H.plain8(p, end);
    if (v != <u64>-1) {
      buf |= v >> <u64>cnt;
      p += <usize>((63 - cnt) >> 3);
      cnt |= 56;
    } else {
      H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
      H.refill();
      buf = H.bitbuf; cnt = H.bitcnt; p = H.pos;
    }
  }
  const dcs = F.cget(c, F.F_TD);
  let diff = 0;
  let e = H.fastEntry(dcs, buf);
  if (e != 0) {
    diff = e >> 16;
  } else {
    e = H.peekSym(dcs, buf);
    const t = e & 255;
    if (e == 0 || t > 15) {
      H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
      fail(E_BAD_HUFFMAN_CODE, H.bitOffset());
      return 0;
    }
    e >>= 8;
    if (t != 0) {
      diff = H.extend(<i32>((buf << <u64>e) >> <u64>(64 - t)), t);
      e += t;
    }
  }
  buf <<= <u64>(e & 255);
  cnt -= e & 255;
  const pred = F.cget(c, F.F_PRED) + diff;
  F.cset(c, F.F_PRED, pred);
  store<i16>(dst, <i16>pred);
  // AC (F.2.2.2)
  const slot = 4 + F.cget(c, F.F_TA);
  const fast = H.fastTable(slot);
  let last = 0;
  let k = 1;
  while (k < 64) {
    // A FAST entry uses at most LOOKAHEAD bits; the careful path below wants 31.
    if (cnt < 16) {
      const v = H.plain8(p, end);
      if (v != <u64>-1) {
        buf |= v >> <u64>cnt;
        p += <usize>((63 - cnt) >> 3);
        cnt |= 56;
      } else {
        H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
        H.refill();
        buf = H.bitbuf; cnt = H.bitcnt; p = H.pos;
      }
    }
    let f = H.fastAt(fast, buf);
    if (f != 0) {
      k += (f >> 8) & 255;
      buf <<= <u64>(f & 255);
      cnt -= f & 255;
      if (k > 63) {
        if ((f & H.FAST_EOB) != 0) break;
        H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
        fail(E_BAD_COEFFICIENT, H.bitOffset());
        return last;
      }
      store<i16>(dst + <usize>load<u8>(ZZT + k), <i16>(f >> 16));
      last = k;
      k++;
      continue;
    }
    if (cnt < 32) {
      H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
      H.refill();
      buf = H.bitbuf; cnt = H.bitcnt; p = H.pos;
    }
    f = H.peekSym(slot, buf);
    if (f == 0) {
      H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
      fail(E_BAD_HUFFMAN_CODE, H.bitOffset());
      return last;
    }
    buf <<= <u64>(f >> 8);
    cnt -= f >> 8;
    const s = f & 15;
    const r = (f >> 4) & 15;
    if (s == 0) {
      if (r != 15) break; // EOB
      k += 16; // ZRL
      continue;
    }
    k += r;
    if (k > 63) {
      H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
      fail(E_BAD_COEFFICIENT, H.bitOffset());
      return last;
    }
    store<i16>(dst + <usize>load<u8>(ZZT + k), <i16>H.extend(<i32>(buf >> <u64>(64 - s)), s));
    buf <<= <u64>s;
    cnt -= s;
    last = k;
    k++;
  }
  H.bitbuf = buf;
  H.bitcnt = cnt;
  H.pos = p;
  return last;
}

/** Progressive DC, first scan (G.1.2.1): the DC difference, scaled by 2^Al. */
function dcFirst(dst: usize, c: i32): void {
  const pred = F.cget(c, F.F_PRED) + dcDiff(c);
  F.cset(c, F.F_PRED, pred);
  store<i16>(dst, <i16>(pred << F.al));
}

/** Progressive DC, refinement (G.1.2.1): one more bit of the DC. */
function dcRefine(dst: usize): void {
  if (H.getBit()) store<i16>(dst, <i16>(<i32>load<i16>(dst) | (1 << F.al)));
}

/** Progressive AC, first scan of a band (G.1.2.2): like F.2.2.2 plus end-of-band runs. */
function acFirst(dst: usize, c: i32, mp: usize): void {
  if (eobrun > 0) {
    eobrun--;
    return;
  }
  const slot = 4 + F.cget(c, F.F_TA);
  const zz = ZZC + (<usize>c << 6);
  const se = F.se;
  const al = F.al;
  let k = F.ss;
  let buf = H.bitbuf;
  let cnt = H.bitcnt;
  let p = H.pos;
  const end = F.srcEnd;
  let nz = load<u64>(mp);
  while (k <= se) {
    if (cnt < 32) {
      const v = H.plain8(p, end);
      if (v != <u64>-1) {
        buf |= v >> <u64>cnt;
        p += <usize>((63 - cnt) >> 3);
        cnt |= 56;
      } else {
        H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
        H.refill();
        buf = H.bitbuf; cnt = H.bitcnt; p = H.pos;
      }
    }
    let f = H.fastEntry(slot, buf);
    if (f != 0) {
      k += (f >> 8) & 255;
      buf <<= <u64>(f & 255);
      cnt -= f & 255;
      if (k > se) {
        if ((f & H.FAST_EOB) != 0) break; // EOB0: this block alone
        H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
        fail(E_BAD_COEFFICIENT, H.bitOffset());
        return;
      }
      store<i16>(dst + <usize>load<u8>(zz + k), <i16>((f >> 16) << al));
      nz |= <u64>1 << <u64>k;
      k++;
      continue;
    }
    f = H.peekSym(slot, buf);
    if (f == 0) {
      H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
      fail(E_BAD_HUFFMAN_CODE, H.bitOffset());
      return;
    }
    buf <<= <u64>(f >> 8);
    cnt -= f >> 8;
    const s = f & 15;
    const r = (f >> 4) & 15;
    if (s == 0) {
      if (r < 15) {
        // EOBr: this block and 2^r − 1 + RECEIVE(r) more end here (G.1.2.2, Table G.1).
        eobrun = (1 << r) - 1;
        if (r != 0) {
          eobrun += <i32>(buf >> <u64>(64 - r));
          buf <<= <u64>r;
          cnt -= r;
        }
        break;
      }
      k += 16;
      continue;
    }
    k += r;
    if (k > se) {
      H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
      fail(E_BAD_COEFFICIENT, H.bitOffset());
      return;
    }
    store<i16>(dst + <usize>load<u8>(zz + k), <i16>(H.extend(<i32>(buf >> <u64>(64 - s)), s) << al));
    buf <<= <u64>s;
    cnt -= s;
    nz |= <u64>1 << <u64>k;
    k++;
  }
  store<u64>(mp, nz);
  H.bitbuf = buf;
  H.bitcnt = cnt;
  H.pos = p;
}

/**
 * Progressive AC, refinement (G.1.2.3). Coefficients already non-zero get one correction bit
 * each, in order, as the decoder passes them; new coefficients are ±1 (scaled by 2^Al) and
 * land after `r` zero-history coefficients. An EOB run refines what is left of the band.
 * The block's non-zero mask (NZ) finds where a run ends and which coefficients take a bit, so
 * only those are visited; the bit reader lives in locals, as in sequential().
 */
function acRefine(dst: usize, c: i32, mp: usize): void {
  const slot = 4 + F.cget(c, F.F_TA);
  const zz = ZZC + (<usize>c << 6);
  const se = F.se;
  const p1 = 1 << F.al;
  let k = F.ss;
  let buf = H.bitbuf;
  let cnt = H.bitcnt;
  let p = H.pos;
  const end = F.srcEnd;
  let nz = load<u64>(mp);
  const upToSe = <u64>-1 >> <u64>(63 - se); // bits 0…se
  if (eobrun == 0) {
    while (k <= se) {
      if (cnt < 32) {
        const v = H.plain8(p, end);
        if (v != <u64>-1) {
          buf |= v >> <u64>cnt;
          p += <usize>((63 - cnt) >> 3);
          cnt |= 56;
        } else {
          H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
          H.refill();
          buf = H.bitbuf; cnt = H.bitcnt; p = H.pos;
        }
      }
      let r = 0;
      let value = 0;
      let f = H.fastEntry(slot, buf);
      if (f != 0) {
        // A new coefficient (its sign bit included) or EOB0, in one lookup.
        buf <<= <u64>(f & 255);
        cnt -= f & 255;
        if ((f & H.FAST_EOB) != 0) {
          eobrun = 1;
          break;
        }
        const v = f >> 16;
        if (v != 1 && v != -1) {
          H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
          fail(E_BAD_COEFFICIENT, H.bitOffset()); // only ±1 can be new in a refinement
          return;
        }
        value = v > 0 ? p1 : -p1;
        r = (f >> 8) & 15;
      } else {
        f = H.peekSym(slot, buf);
        if (f == 0) {
          H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
          fail(E_BAD_HUFFMAN_CODE, H.bitOffset());
          return;
        }
        buf <<= <u64>(f >> 8);
        cnt -= f >> 8;
        r = (f >> 4) & 15;
        const s = f & 15;
        if (s != 0) {
          if (s != 1) {
            H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
            fail(E_BAD_COEFFICIENT, H.bitOffset()); // only ±1 can be new in a refinement
            return;
          }
          value = <i32>(buf >> 63) ? p1 : -p1;
          buf <<= 1;
          cnt--;
        } else if (r != 15) {
          eobrun = 1 << r;
          if (r != 0) {
            eobrun += <i32>(buf >> <u64>(64 - r));
            buf <<= <u64>r;
            cnt -= r;
          }
          break; // the rest of this band is refined below, as part of the run
        }
      }
      // The run ends at the (r+1)-th zero-history coefficient from k (ZRL: the 16th, passed
      // too); every non-zero one before it takes a correction bit. None left: the band's end.
      const band = (<u64>-1 << <u64>k) & upToSe;
      let zeros = ~nz & band;
      for (let i = 0; i < r; i++) zeros &= zeros - 1;
      const at = zeros != 0 ? <i32>ctz(zeros) : se + 1;
      const before = ((<u64>1 << <u64>(at - 1)) << 1) - 1; // bits 0…at−1 (at ≥ 1)
      let m = nz & band & before;
      while (m != 0) {
        if (cnt < 1) {
          H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
          H.refill();
          buf = H.bitbuf; cnt = H.bitcnt; p = H.pos;
        }
        refine(dst + <usize>load<u8>(zz + <i32>ctz(m)), <i32>(buf >> 63), p1);
        buf <<= 1;
        cnt--;
        m &= m - 1;
      }
      k = at;
      if (value != 0) {
        if (k > se) {
          H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
          fail(E_BAD_COEFFICIENT, H.bitOffset());
          return;
        }
        store<i16>(dst + <usize>load<u8>(zz + k), <i16>value);
        nz |= <u64>1 << <u64>k;
      }
      k++;
    }
  }
  if (eobrun > 0) {
    // Every non-zero coefficient left in the band takes a correction bit.
    let m = k > se ? 0 : nz & (<u64>-1 << <u64>k) & upToSe; // (k = 64 would shift by 0)
    while (m != 0) {
      if (cnt < 1) {
        H.bitbuf = buf; H.bitcnt = cnt; H.pos = p;
        H.refill();
        buf = H.bitbuf; cnt = H.bitcnt; p = H.pos;
      }
      refine(dst + <usize>load<u8>(zz + <i32>ctz(m)), <i32>(buf >> 63), p1);
      buf <<= 1;
      cnt--;
      m &= m - 1;
    }
    eobrun--;
  }
  store<u64>(mp, nz);
  H.bitbuf = buf;
  H.bitcnt = cnt;
  H.pos = p;
}

/**
 * A correction bit for the non-zero coefficient at `z` (G.1.2.3): when set, and the
 * coefficient lacks this bit, its magnitude grows by `p1`. Branch-free: the bits are noise.
 */
// @ts-ignore: decorator
@inline function refine(z: usize, bit: i32, p1: i32): void {
  const cur = <i32>load<i16>(z);
  const sign = cur >> 31;
  const grow = -(bit & <i32>((cur & p1) == 0));
  store<i16>(z, <i16>(cur + (((p1 ^ sign) - sign) & grow)));
}
