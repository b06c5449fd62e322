// Huffman decoding (T.81 Annex C and F.2.2.3) and the bit reader over entropy-coded data
// (F.1.2.3 byte stuffing, B.1.1.2 markers).
//
// Tables. Eight slots: DC tables 0–3 are slots 0–3, AC tables 0–3 are slots 4–7. Each slot has
//   LUT     2^LOOKAHEAD × u16  the first LOOKAHEAD bits → (code length << 8) | symbol, 0 if the
//                      code is longer (then the MAXCODE/VALOFF walk of F.2.2.3, Figure F.16, decides)
//   MAXCODE 18 × i32   largest code of each length, -1 if none (F.2.2.3, Figure F.15)
//   VALOFF  18 × i32   VALPTR(l) − MINCODE(l): symbol index = code + VALOFF(l)
//   VALS    256 × u8   HUFFVAL in order of increasing code length (B.2.4.2)
//   FAST    2^LOOKAHEAD × i32  whole values: when a code and the magnitude bits that follow it
//                      (F.2.2.1, F.2.2.2: RECEIVE(SSSS), EXTEND) fit in LOOKAHEAD bits together,
//                      one lookup decodes them. 0 where they do not (then LUT, then the walk).
//
//   FAST entry    bit 31            16 15             8 7              0
//     AC value      ├── value (i16) ──┼── run (0–15) ───┼── bits used ───┤
//     AC EOB        ├────── 0 ────────┼────── 0x80 ─────┼── bits used ───┤  k + 0x80 leaves the block
//     DC            ├── diff (i16) ───┼─────── 0 ───────┼── bits used ───┤  diff may be 0
//
// Bit buffer. 64 bits, left-aligned: the next bit of the stream is bit 63 of `bitbuf`, and
// `bitcnt` bits are valid. Refills add whole bytes below them:
//
//   bit 63                                                              bit 0
//   ├──── bitcnt valid bits ────┼── next byte goes here ──┼── zero or ahead ──┤
//
// Below the valid bits the buffer holds zeros or the stream's own next bits, already in place
// (the bulk refill ORs in 8 bytes and counts only the whole ones that fit): a later refill ORs
// the same bits onto them, so they never need clearing.
// The hot loops in scan.ts keep the buffer in locals and refill 8 bytes at a time while those
// hold no 0xFF (refillFast, below); any 0xFF, and the end of the data, go through `refill`.
// When the reader meets a marker (0xFF then a non-zero byte) or the end of the input it does
// not pass it: it feeds zero bytes and counts them in `padBytes`. Consuming any of those zero
// bits means the scan ran short, which `overran()` reports at the end of each restart interval
// and scan. Decoding time stays bounded: the MCU count, not the data, drives the loops.
import * as F from "./frame";
import { fail, E_BAD_HUFFMAN_CODE, E_BAD_HUFFMAN_TABLE } from "./errors";

/** Bits resolved by one table lookup. */
export const LOOKAHEAD = 11;
const LUT_SIZE = 1 << LOOKAHEAD;

const LUT: usize = memory.data(8 * LUT_SIZE * 2, 16);
const MAXCODE: usize = memory.data(8 * 18 * 4, 16);
const VALOFF: usize = memory.data(8 * 18 * 4, 16);
const VALS: usize = memory.data(8 * 256, 16);
export const FAST: usize = memory.data(8 * LUT_SIZE * 4, 16);
/** The run field of an AC FAST entry for EOB (end of block; in a progressive scan, EOB0). */
export const FAST_EOB = 0x8000;
export let tablesDefined: i32 = 0; // bit s set once slot s is defined
/**
 * What each slot was last built from (n, then BITS and HUFFVAL), kept across images: most
 * encoders write the same (Annex K) tables into every file, and rebuilding the lookup tables
 * (~4 KiB of stores) cost a 28×28 image about a tenth of its decode. Bit s of `builtValid` says
 * slot s holds a complete build of SOURCE s.
 */
const SOURCE_SIZE: usize = 4 + 16 + 256;
const SOURCE: usize = memory.data(8 * <i32>SOURCE_SIZE, 16);

/** Where slot `slot`'s BITS and HUFFVAL are (n as i32, 16 counts, n symbols): the GPU's Huffman decode reads them (src/decode/jpeg.ts, readScan). */
export function tableSource(slot: i32): usize {
  return SOURCE + <usize>slot * SOURCE_SIZE;
}
let builtValid: i32 = 0;

export function resetTables(): void {
  tablesDefined = 0;
}

/**
 * Builds slot `slot` from BITS (16 counts at `counts`) and HUFFVAL (`n` symbols at `vals`):
 * the code assignment of C.2 (Figures C.1–C.3) and the decoder tables of F.2.2.3.
 * Returns 0, or E_BAD_HUFFMAN_TABLE when the counts overflow a code length.
 */
export function buildTable(slot: i32, counts: usize, vals: usize, n: i32, at: i32): i32 {
  const src = SOURCE + <usize>slot * SOURCE_SIZE;
  if ((builtValid & (1 << slot)) != 0 && load<i32>(src) == n && same(src + 4, counts, 16) && same(src + 20, vals, n)) {
    tablesDefined |= 1 << slot; // the same table as last built: its lookup tables stand
    return 0;
  }
  builtValid &= ~(1 << slot); // until this build completes
  const lut = LUT + ((<usize>slot) << (LOOKAHEAD + 1));
  const maxcode = MAXCODE + <usize>slot * 72;
  const valoff = VALOFF + <usize>slot * 72;
  memory.copy(VALS + ((<usize>slot) << 8), vals, n);
  memory.fill(lut, 0, LUT_SIZE * 2);
  let code = 0;
  let k = 0;
  for (let l = 1; l <= 16; l++) {
    const cnt = <i32>load<u8>(counts + l - 1);
    store<i32>(valoff + (l << 2), k - code);
    for (let i = 0; i < cnt; i++) {
      // Codes of length l are the integers below 2^l (C.2): more cannot be decoded, and
      // would write past this slot's lookup table.
      if (code >= 1 << l) return fail(E_BAD_HUFFMAN_TABLE, at);
      if (l <= LOOKAHEAD) {
        // Every LOOKAHEAD-bit word that starts with this code maps to it.
        const first = code << (LOOKAHEAD - l);
        const entry = <u16>((l << 8) | load<u8>(vals + k));
        for (let j = 0; j < 1 << (LOOKAHEAD - l); j++) store<u16>(lut + ((<usize>(first + j)) << 1), entry);
      }
      code++;
      k++;
    }
    store<i32>(maxcode + (l << 2), cnt ? code - 1 : -1);
    code <<= 1;
  }
  store<i32>(maxcode + (17 << 2), 0x7fffffff); // sentinel: the walk stops at 16 bits anyway
  buildFast(slot);
  tablesDefined |= 1 << slot;
  store<i32>(src, n);
  memory.copy(src + 4, counts, 16);
  memory.copy(src + 20, vals, n);
  builtValid |= 1 << slot;
  return 0;
}

/**
 * Whether `n` bytes at `a` and `b` are equal, 8 at a time at any alignment (memory.compare
 * goes byte by byte unless both share an alignment, and a DHT in the input seldom does: for a
 * 28×28 image that byte loop cost about 4 % of the decode).
 */
function same(a: usize, b: usize, n: i32): bool {
  let i = 0;
  for (; i + 8 <= n; i += 8) if (load<u64>(a + <usize>i) != load<u64>(b + <usize>i)) return false;
  for (; i < n; i++) if (load<u8>(a + <usize>i) != load<u8>(b + <usize>i)) return false;
  return true;
}

function buildFast(slot: i32): void {
  const lut = LUT + ((<usize>slot) << (LOOKAHEAD + 1));
  const fast = FAST + ((<usize>slot) << (LOOKAHEAD + 2));
  for (let i = 0; i < LUT_SIZE; i++) {
    const e = <i32>load<u16>(lut + (<usize>i << 1));
    let f = 0;
    if (e != 0) {
      const len = e >> 8;
      const sym = e & 255;
      if (slot < 4) {
        // DC: the symbol is the magnitude category (F.2.2.1); ≥ 16 is left to the careful path.
        if (sym == 0) f = len;
        else if (sym < 16 && len + sym <= LOOKAHEAD) {
          const bits = (i >> (LOOKAHEAD - len - sym)) & ((1 << sym) - 1);
          f = (extend(bits, sym) << 16) | (len + sym);
        }
      } else {
        const r = sym >> 4;
        const s = sym & 15;
        if (s != 0 && len + s <= LOOKAHEAD) {
          const bits = (i >> (LOOKAHEAD - len - s)) & ((1 << s) - 1);
          f = (extend(bits, s) << 16) | (r << 8) | (len + s);
        } else if (sym == 0) f = FAST_EOB | len;
      }
    }
    store<i32>(fast + (<usize>i << 2), f);
  }
}

/** Slot `slot`'s FAST table (for fastAt). */
// @ts-ignore: decorator
@inline export function fastTable(slot: i32): usize {
  return FAST + ((<usize>slot) << (LOOKAHEAD + 2));
}

/** The FAST entry of `table` for the bits at the top of `buf`; 0 if none. */
// @ts-ignore: decorator
@inline export function fastAt(table: usize, buf: u64): i32 {
  return load<i32>(table + (<usize>(buf >> <u64>(64 - LOOKAHEAD)) << 2));
}

/** The FAST entry of `slot` for the bits at the top of `buf`; 0 if none. */
// @ts-ignore: decorator
@inline export function fastEntry(slot: i32, buf: u64): i32 {
  return fastAt(fastTable(slot), buf);
}

/**
 * DECODE (F.2.2.3) of the code at the top of `buf` (at least 16 valid bits) without consuming
 * it: (code length << 8) | symbol, or 0 when no code of the table matches.
 */
// @ts-ignore: decorator
@inline export function peekSym(slot: i32, buf: u64): i32 {
  const e = <i32>load<u16>(LUT + ((<usize>slot) << (LOOKAHEAD + 1)) + (<usize>(buf >> <u64>(64 - LOOKAHEAD)) << 1));
  return e != 0 ? e : peekLong(slot, buf);
}

/** Codes longer than LOOKAHEAD bits: the MAXCODE walk of Figure F.16; 0 if none matches. */
function peekLong(slot: i32, buf: u64): i32 {
  const maxcode = MAXCODE + <usize>slot * 72;
  for (let l = LOOKAHEAD + 1; l <= 16; l++) {
    const code = <i32>(buf >> <u64>(64 - l));
    if (code <= load<i32>(maxcode + (l << 2))) {
      const idx = code + load<i32>(VALOFF + <usize>slot * 72 + (l << 2));
      return (l << 8) | <i32>load<u8>(VALS + ((<usize>slot) << 8) + <usize>(idx & 255));
    }
  }
  return 0;
}

// ─── the bit reader ───────────────────────────────────────────────────────────────────────────

export let pos: usize = 0;
export let bitbuf: u64 = 0;
export let bitcnt: i32 = 0;
export let padBytes: i32 = 0;

export function startBits(p: usize): void {
  pos = p;
  bitbuf = 0;
  bitcnt = 0;
  padBytes = 0;
}

/** Fills the buffer to at least 57 bits. */
export function refill(): void {
  const end = F.srcEnd;
  while (bitcnt <= 56) {
    if (pos + 8 <= end) {
      // Fast path: 8 bytes with no 0xFF among them need no stuffing or marker checks.
      const v = bswap<u64>(load<u64>(pos));
      const nv = ~v;
      if (((nv - 0x0101010101010101) & v & 0x8080808080808080) == 0) {
        const n = (64 - bitcnt) >> 3;
        const keep = bitcnt + (n << 3); // 8 … 64
        const mask = ~((<u64>-1 >> 1) >> <u64>(keep - 1));
        bitbuf |= (v >> <u64>bitcnt) & mask;
        bitcnt = keep;
        pos += n;
        return;
      }
    }
    let b: u64 = 0;
    if (pos < end) {
      const c = load<u8>(pos);
      if (c != 0xff) {
        b = c;
        pos++;
      } else if (pos + 1 < end && load<u8>(pos + 1) == 0) {
        b = 0xff; // F.1.2.3: 0xFF 0x00 is a stuffed 0xFF data byte
        pos += 2;
      } else {
        padBytes++; // a marker: stay before it
      }
    } else {
      padBytes++;
    }
    bitbuf |= b << <u64>(56 - bitcnt);
    bitcnt += 8;
  }
}

/**
 * The 8 bytes at `p`, most significant first, when they all lie before `end` and none is 0xFF;
 * otherwise all ones (no data word is: it would hold 0xFF bytes), for `refill` to handle.
 */
// @ts-ignore: decorator
@inline export function plain8(p: usize, end: usize): u64 {
  if (p + 8 > end) return <u64>-1;
  const v = bswap<u64>(load<u64>(p));
  const nv = ~v;
  return ((nv - 0x0101010101010101) & v & 0x8080808080808080) == 0 ? v : <u64>-1;
}

/** True when decoding consumed bits past the end of the entropy-coded segment. */
@inline export function overran(): bool {
  return padBytes > 0 && (padBytes << 3) > bitcnt;
}

/** Offset of the byte holding the next unread bit, for error reports. */
export function bitOffset(): i32 {
  const ahead = (bitcnt >> 3) - padBytes;
  return F.offsetOf(pos) - (ahead > 0 ? ahead : 0);
}

@inline export function ensure(n: i32): void {
  if (bitcnt < n) refill();
}

@inline export function consume(n: i32): void {
  bitbuf <<= <u64>n;
  bitcnt -= n;
}

/** The next bit (used by refinement scans, G.1.2.3). */
@inline export function getBit(): i32 {
  if (bitcnt < 1) refill();
  const b = <i32>(bitbuf >> 63);
  consume(1);
  return b;
}

/** RECEIVE(s) (F.2.2.4), 1 ≤ s ≤ 16; the caller has ensured s bits. */
@inline export function receive(s: i32): i32 {
  const v = <i32>(bitbuf >> <u64>(64 - s));
  consume(s);
  return v;
}

/** EXTEND(v, t) (F.2.2.1, Figure F.12), branch-free: values below 2^(t−1) are negative. */
@inline export function extend(v: i32, t: i32): i32 {
  return v + (((v - (1 << (t - 1))) >> 31) & ((-1 << t) + 1));
}

/** RECEIVE then EXTEND, s ≥ 1; the caller has ensured s bits. */
@inline export function receiveExtend(s: i32): i32 {
  return extend(receive(s), s);
}

/** DECODE (F.2.2.3) from `slot`; the caller has ensured 16 bits. */
@inline export function decodeSym(slot: i32): i32 {
  const look = <usize>(bitbuf >> <u64>(64 - LOOKAHEAD));
  const e = <i32>load<u16>(LUT + ((<usize>slot) << (LOOKAHEAD + 1)) + (look << 1));
  if (e != 0) {
    consume(e >> 8);
    return e & 255;
  }
  return decodeLong(slot);
}

/** Codes longer than LOOKAHEAD bits: the MAXCODE walk of Figure F.16. */
function decodeLong(slot: i32): i32 {
  const maxcode = MAXCODE + <usize>slot * 72;
  for (let l = LOOKAHEAD + 1; l <= 16; l++) {
    const code = <i32>(bitbuf >> <u64>(64 - l));
    if (code <= load<i32>(maxcode + (l << 2))) {
      consume(l);
      const idx = code + load<i32>(VALOFF + <usize>slot * 72 + (l << 2));
      return <i32>load<u8>(VALS + ((<usize>slot) << 8) + <usize>(idx & 255));
    }
  }
  fail(E_BAD_HUFFMAN_CODE, bitOffset());
  consume(16);
  return 0;
}
