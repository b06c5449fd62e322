// Inflate (RFC 1951): stored, fixed-Huffman and dynamic-Huffman blocks, into a buffer of a size
// known in advance (IHDR's). Output never passes `outEnd`, not even by a wide store: a literal
// or copy that would is a zlib bomb (E_TOO_MUCH_DATA), found before writing it, so nothing is
// allocated beyond the image's own size.
//
// Bit reader. Deflate packs bits from each byte's least significant bit up (§3.1.1); `bitbuf`
// holds the next `bitcnt` bits of the stream from bit 0:
//
//   bit 63                                                              bit 0
//   ├── (bits of the next byte, already loaded, not yet counted) ──┼── bitcnt valid bits ──┤
//
// A refill ORs eight bytes in above the valid bits and counts the whole bytes that fit
// (F. Giesen, "Reading bits in far too many ways", variant 4): bits above `bitcnt` are always
// the stream's own, so ORing them again is harmless. Near the end of the stream refills go a
// byte at a time and feed zero bytes past it, counted in `overrun`; consuming any of them means
// the stream was cut short (E_TRUNCATED), which `truncated()` checks at each block's end and
// before a bomb or a bad code is reported.
//
// Huffman tables (§3.2.2, §3.2.6–7). Codes are canonical, sent most significant bit first, so
// a table indexed by the next FAST_BITS stream bits holds each short code at every index whose
// low `len` bits are its code reversed: entry = symbol | len << 9 (0: a longer code). Longer
// codes are decoded by the canonical walk over COUNT/SYMBOL (one bit at a time, as zlib's puff
// does), which a valid stream rarely needs.
import { fail, E_BAD_BLOCK, E_BAD_DISTANCE, E_BAD_HUFFMAN_CODE, E_TOO_MUCH_DATA, E_TRUNCATED } from "./errors";
import { fileOffset } from "./chunks";

const FAST_BITS = 10;
const FAST_MASK: u64 = (1 << FAST_BITS) - 1;

// Three tables: literal/length (288 symbols), distance (32), code-length codes (19).
const LIT_LUT: usize = memory.data(2 << FAST_BITS, 16);
const DIST_LUT: usize = memory.data(2 << FAST_BITS, 16);
const CL_LUT: usize = memory.data(2 << FAST_BITS, 16);
const LIT_COUNT: usize = memory.data(16 * 2, 16);
const DIST_COUNT: usize = memory.data(16 * 2, 16);
const CL_COUNT: usize = memory.data(16 * 2, 16);
const LIT_SYM: usize = memory.data(288 * 2, 16);
const DIST_SYM: usize = memory.data(32 * 2, 16);
const CL_SYM: usize = memory.data(19 * 2, 16);
const OFFS: usize = memory.data(17 * 2, 16);
/** Code lengths of one dynamic block: HLIT literal/length then HDIST distance lengths. */
const LENGTHS: usize = memory.data(320, 16);
/** The literal/length and distance tables hold the fixed code (§3.2.6) and need no rebuild. */
let fixedBuilt = false;

// §3.2.5: base and extra bits of length symbols 257…285 and distance symbols 0…29.
const LEN_BASE: usize = memory.data<u16>([3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]);
const LEN_EXTRA: usize = memory.data<u8>([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]);
const DIST_BASE: usize = memory.data<u16>([1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]);
const DIST_EXTRA: usize = memory.data<u8>([0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]);
// §3.2.7: the order in which code-length code lengths are sent.
const CL_ORDER: usize = memory.data<u8>([16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]);

// The stream being read.
let inStart: usize = 0;
let inPos: usize = 0;
let inEnd: usize = 0;
let bitbuf: u64 = 0;
let bitcnt: u32 = 0;
let overrun: u32 = 0;
// The output.
let outStart: usize = 0;
let out: usize = 0;
let outEnd: usize = 0;

/** Byte of the zlib stream (which starts 2 bytes before the deflate data) → file offset. */
@inline function at(p: usize): i32 {
  return fileOffset(<i32>(p - inStart) + 2);
}

/**
 * A malformed block found at `p`, unless the reader has run into the zero bytes fed past the
 * stream's end: then the stream was cut short, and that is the error (at its end, so the offset
 * stays within the file).
 */
function badAt(code: i32, p: usize, exp: i64 = 0, act: i64 = 0): i32 {
  return truncated() ? fail(E_TRUNCATED, at(inEnd)) : fail(code, at(p), exp, act);
}

/** Position of the next unread bit's byte. */
@inline function bitPos(): usize {
  return inPos - (<usize>(bitcnt >> 3)) + <usize>overrun;
}

/** The stream has run out under the reader: more zero bits consumed than were fed. */
@inline function truncated(): bool {
  return (overrun << 3) > bitcnt;
}

function refillSlow(): void {
  while (bitcnt <= 56) {
    if (inPos < inEnd) {
      bitbuf |= (<u64>load<u8>(inPos)) << bitcnt;
      inPos++;
    } else {
      overrun++;
    }
    bitcnt += 8;
  }
}

@inline function refill(): void {
  if (inPos + 8 <= inEnd) {
    bitbuf |= load<u64>(inPos) << bitcnt;
    inPos += (63 - bitcnt) >> 3;
    bitcnt |= 56;
  } else {
    refillSlow();
  }
}

/** The next `n` bits (n ≤ 32, with that many loaded). */
@inline function bits(n: u32): u32 {
  const v = <u32>(bitbuf & ((1 << <u64>n) - 1));
  bitbuf >>= n;
  bitcnt -= n;
  return v;
}

/**
 * Builds a decoding table from `n` code lengths at `lengths` (§3.2.2). Returns false for an
 * over-subscribed code; an incomplete one is kept (its unused patterns fail when met).
 */
function build(lengths: usize, n: i32, lut: usize, count: usize, sym: usize): bool {
  memory.fill(count, 0, 32);
  for (let i = 0; i < n; i++) {
    const l = <usize>load<u8>(lengths + i);
    store<u16>(count + (l << 1), load<u16>(count + (l << 1)) + 1);
  }
  store<u16>(count, 0);
  let left = 1;
  for (let l = 1; l < 16; l++) {
    left = (left << 1) - <i32>load<u16>(count + (l << 1));
    if (left < 0) return false;
  }
  store<u16>(OFFS + 2, 0);
  for (let l = 1; l < 16; l++) store<u16>(OFFS + ((l + 1) << 1), load<u16>(OFFS + (l << 1)) + load<u16>(count + (l << 1)));
  for (let i = 0; i < n; i++) {
    const l = <usize>load<u8>(lengths + i);
    if (l != 0) {
      const o = load<u16>(OFFS + (l << 1));
      store<u16>(sym + (<usize>o << 1), <u16>i);
      store<u16>(OFFS + (l << 1), o + 1);
    }
  }
  // Codes of FAST_BITS bits or fewer into the lookup table, canonical order: SYMBOL is sorted
  // by length then symbol, and codes of one length are consecutive integers (§3.2.2).
  memory.fill(lut, 0, 2 << FAST_BITS);
  let code = 0, k = 0;
  for (let l = 1; l <= FAST_BITS; l++) {
    const cnt = <i32>load<u16>(count + (<usize>l << 1));
    for (let i = 0; i < cnt; i++) {
      const s = <u32>load<u16>(sym + (<usize>k << 1));
      let rev = 0;
      for (let b = 0; b < l; b++) rev |= ((code >> b) & 1) << (l - 1 - b);
      const e = <u16>(s | (<u32>l << 9));
      for (let j = rev; j < 1 << FAST_BITS; j += 1 << l) store<u16>(lut + (<usize>j << 1), e);
      code++;
      k++;
    }
    code <<= 1;
  }
  return true;
}

/** A code longer than FAST_BITS, or none: the canonical walk. Returns the symbol or −1. */
function decodeSlow(count: usize, sym: usize): i32 {
  let code = 0, first = 0, index = 0;
  for (let l: u32 = 1; l < 16; l++) {
    code |= <i32>((bitbuf >> (l - 1)) & 1);
    const cnt = <i32>load<u16>(count + (<usize>l << 1));
    if (code - first < cnt) {
      bitbuf >>= l;
      bitcnt -= l;
      return <i32>load<u16>(sym + (<usize>(index + code - first) << 1));
    }
    index += cnt;
    first = (first + cnt) << 1;
    code <<= 1;
  }
  return -1;
}

/** One symbol (15 bits loaded). */
@inline function decodeSym(lut: usize, count: usize, sym: usize): i32 {
  const e = <u32>load<u16>(lut + (<usize>(bitbuf & FAST_MASK) << 1));
  if (e != 0) {
    const l = e >> 9;
    bitbuf >>= l;
    bitcnt -= l;
    return <i32>(e & 511);
  }
  return decodeSlow(count, sym);
}

function buildFixed(): void {
  // §3.2.6: 0–143 → 8 bits, 144–255 → 9, 256–279 → 7, 280–287 → 8; 30 distances of 5 bits
  // (and the two unused, 30 and 31, which a stream must not send).
  memory.fill(LENGTHS, 8, 144);
  memory.fill(LENGTHS + 144, 9, 112);
  memory.fill(LENGTHS + 256, 7, 24);
  memory.fill(LENGTHS + 280, 8, 8);
  build(LENGTHS, 288, LIT_LUT, LIT_COUNT, LIT_SYM);
  memory.fill(LENGTHS, 5, 32);
  build(LENGTHS, 32, DIST_LUT, DIST_COUNT, DIST_SYM);
  fixedBuilt = true;
}

/** A dynamic block's header (§3.2.7): the code-length code, then both tables. */
function readDynamic(): i32 {
  fixedBuilt = false;
  refill();
  const start = bitPos();
  const hlit = <i32>bits(5) + 257;
  const hdist = <i32>bits(5) + 1;
  const hclen = <i32>bits(4) + 4;
  // 286, 287 and distance codes 30, 31 cannot occur in a stream (§3.2.5): zlib refuses them.
  if (hlit > 286 || hdist > 30) return badAt(E_BAD_BLOCK, start, 286, hlit);
  memory.fill(LENGTHS, 0, 19);
  for (let i = 0; i < hclen; i++) {
    if (bitcnt < 3) refill();
    store<u8>(LENGTHS + <usize>load<u8>(CL_ORDER + i), <u8>bits(3));
  }
  if (!build(LENGTHS, 19, CL_LUT, CL_COUNT, CL_SYM)) return badAt(E_BAD_BLOCK, start);
  const n = hlit + hdist;
  let i = 0;
  while (i < n) {
    refill();
    const s = decodeSym(CL_LUT, CL_COUNT, CL_SYM);
    if (s < 0) return badAt(E_BAD_HUFFMAN_CODE, bitPos());
    if (s < 16) {
      store<u8>(LENGTHS + i, <u8>s);
      i++;
      continue;
    }
    let rep = 0, v: u8 = 0;
    if (s == 16) {
      if (i == 0) return badAt(E_BAD_BLOCK, bitPos()); // repeat of nothing
      v = load<u8>(LENGTHS + i - 1);
      rep = 3 + <i32>bits(2);
    } else if (s == 17) {
      rep = 3 + <i32>bits(3);
    } else {
      rep = 11 + <i32>bits(7);
    }
    if (i + rep > n) return badAt(E_BAD_BLOCK, bitPos(), n, i + rep);
    memory.fill(LENGTHS + i, v, rep);
    i += rep;
  }
  if (truncated()) return fail(E_TRUNCATED, at(inEnd));
  // Without a code for end-of-block (256) the block could not end.
  if (load<u8>(LENGTHS + 256) == 0) return badAt(E_BAD_BLOCK, start, 256);
  if (!build(LENGTHS, hlit, LIT_LUT, LIT_COUNT, LIT_SYM)) return badAt(E_BAD_BLOCK, start);
  if (!build(LENGTHS + hlit, hdist, DIST_LUT, DIST_COUNT, DIST_SYM)) return badAt(E_BAD_BLOCK, start);
  return 0;
}

/** A stored block (§3.2.4): LEN, ~LEN, then LEN bytes as they are. */
function stored(): i32 {
  bits(bitcnt & 7); // to a byte boundary
  if (bitcnt < 32) refill();
  const start = bitPos();
  const len = bits(16);
  const nlen = bits(16);
  if (truncated()) return fail(E_TRUNCATED, at(inEnd));
  if ((len ^ 0xffff) != nlen) return badAt(E_BAD_BLOCK, start, len ^ 0xffff, nlen);
  // Give back the whole bytes still in the bit buffer, then copy.
  inPos = bitPos();
  overrun = 0;
  bitbuf = 0;
  bitcnt = 0;
  if (inPos + len > inEnd) return fail(E_TRUNCATED, at(inEnd));
  if (out + len > outEnd) return fail(E_TOO_MUCH_DATA, at(inPos), <i64>(outEnd - outStart), <i64>(out - outStart) + len);
  memory.copy(out, inPos, len);
  out += len;
  inPos += len;
  return 0;
}

/**
 * A Huffman block's data with the current tables, until end-of-block (§3.2.5). The hot loop:
 * the reader's state lives in locals while it runs.
 */
function codes(): i32 {
  let buf = bitbuf, cnt = bitcnt, ip = inPos, op = out;
  const ie = inEnd, oe = outEnd, os = outStart;
  let rc = 0;
  while (true) {
    // One refill covers a whole length/distance pair: 15 + 5 + 15 + 13 = 48 bits.
    if (ip + 8 <= ie) {
      buf |= load<u64>(ip) << cnt;
      ip += (63 - cnt) >> 3;
      cnt |= 56;
    } else {
      bitbuf = buf; bitcnt = cnt; inPos = ip;
      refillSlow();
      buf = bitbuf; cnt = bitcnt; ip = inPos;
    }
    let e = <u32>load<u16>(LIT_LUT + (<usize>(buf & FAST_MASK) << 1));
    let s: i32;
    if (e != 0) {
      buf >>= e >> 9;
      cnt -= e >> 9;
      s = <i32>(e & 511);
    } else {
      bitbuf = buf; bitcnt = cnt;
      s = decodeSlow(LIT_COUNT, LIT_SYM);
      buf = bitbuf; cnt = bitcnt;
      if (s < 0) { rc = E_BAD_HUFFMAN_CODE; break; }
    }
    if (s < 256) {
      if (op >= oe) { rc = E_TOO_MUCH_DATA; break; }
      store<u8>(op, <u8>s);
      op++;
      continue;
    }
    if (s == 256) break;
    s -= 257;
    if (s >= 29) { rc = E_BAD_HUFFMAN_CODE; break; }
    let n = <u32>load<u8>(LEN_EXTRA + s);
    const len = <usize>load<u16>(LEN_BASE + (<usize>s << 1)) + <usize>(buf & ((1 << <u64>n) - 1));
    buf >>= n;
    cnt -= n;
    e = <u32>load<u16>(DIST_LUT + (<usize>(buf & FAST_MASK) << 1));
    if (e != 0) {
      buf >>= e >> 9;
      cnt -= e >> 9;
      s = <i32>(e & 511);
    } else {
      bitbuf = buf; bitcnt = cnt;
      s = decodeSlow(DIST_COUNT, DIST_SYM);
      buf = bitbuf; cnt = bitcnt;
      if (s < 0) { rc = E_BAD_HUFFMAN_CODE; break; }
    }
    if (s >= 30) { rc = E_BAD_HUFFMAN_CODE; break; }
    n = <u32>load<u8>(DIST_EXTRA + s);
    const dist = <usize>load<u16>(DIST_BASE + (<usize>s << 1)) + <usize>(buf & ((1 << <u64>n) - 1));
    buf >>= n;
    cnt -= n;
    if (dist > op - os) { rc = E_BAD_DISTANCE; break; }
    if (op + len > oe) { rc = E_TOO_MUCH_DATA; break; }
    const end = op + len;
    let from = op - dist;
    if (dist >= 8 && oe - end >= 8) {
      // Eight bytes at a time: each load reads bytes already written. Up to 7 bytes land past
      // `end`, never past `outEnd`; the next symbols overwrite them.
      do {
        store<u64>(op, load<u64>(from));
        op += 8;
        from += 8;
      } while (op < end);
    } else if (dist == 1) {
      memory.fill(op, load<u8>(from), len);
    } else {
      do {
        store<u8>(op, load<u8>(from));
        op++;
        from++;
      } while (op < end);
    }
    op = end;
  }
  bitbuf = buf; bitcnt = cnt; inPos = ip; out = op;
  if (rc != 0) {
    if (truncated()) return fail(E_TRUNCATED, at(inEnd));
    if (rc == E_TOO_MUCH_DATA) return fail(rc, at(bitPos()), <i64>(oe - os), <i64>(op - os) + 1);
    return fail(rc, at(bitPos()));
  }
  return 0;
}

/**
 * Inflates the deflate data at `src` (`len` bytes, just after the zlib header) into
 * `dst`…`dst + dstLen`. Returns 0 or an error code; `written()` and `consumed()` say how far it
 * got.
 */
export function inflate(src: usize, len: usize, dst: usize, dstLen: usize): i32 {
  inStart = inPos = src;
  inEnd = src + len;
  bitbuf = 0;
  bitcnt = 0;
  overrun = 0;
  outStart = out = dst;
  outEnd = dst + dstLen;
  while (true) {
    if (bitcnt < 3) refill();
    const start = bitPos();
    const final = bits(1);
    const type = bits(2);
    let rc = 0;
    if (type == 0) rc = stored();
    else if (type == 1) {
      if (!fixedBuilt) buildFixed();
      rc = codes();
    } else if (type == 2) {
      rc = readDynamic();
      if (rc == 0) rc = codes();
    } else {
      rc = badAt(E_BAD_BLOCK, start, 2, 3);
    }
    if (rc != 0) return rc;
    if (truncated()) return fail(E_TRUNCATED, at(inEnd));
    if (final != 0) break;
  }
  return 0;
}

/** Bytes written by the last inflate(). */
export function written(): usize { return out - outStart; }

/** Bytes of deflate data read by the last inflate(), to the end of its last whole byte. */
export function consumed(): usize {
  return bitPos() - inStart;
}
