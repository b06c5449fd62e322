// The first scan's entropy-coded bytes without their stuffing (T.81 F.1.2.3), cut at its
// restart markers (B.1.1.5), each interval from a 4-byte boundary with zeros between: what the
// GPU's Huffman decode reads (src/decode/jpeg.ts, readScan; src/gpu/huffman.ts). No code is
// decoded; runs without 0xFF move 16 bytes at a time.
import * as F from "./frame";
import { alloc } from "../common/memory";

let out: usize = 0;
let cuts: usize = 0;
let length: i32 = 0;
let marker: i32 = 0;

export function unstuffedData(): usize { return out; }
/** Per interval, its first byte and its length (u32 pairs). */
export function unstuffedCuts(): usize { return cuts; }
export function unstuffedLength(): i32 { return length; }
/** The marker that ended the data, or the one out of place. */
export function unstuffedMarker(): i32 { return marker; }

/**
 * Takes the stuffing out of the scan whose data starts at byte `start` of the input, allowing
 * `most` intervals. Returns the intervals found (≥ 1, the last ended by EOI), or a refusal:
 * −1 the data runs to the input's end, −2 a marker other than RSTn or EOI ends it, −3 an RSTn
 * out of sequence, −4 more than `most` intervals, −5 no memory.
 */
export function unstuff(start: i32, most: i32): i32 {
  let p = F.src + <usize>start;
  const end = F.srcEnd;
  const n = <usize>(end - p);
  out = alloc(n + 4 * <usize>most + 32);
  cuts = alloc(8 * <usize>most + 8);
  if (out == 0 || cuts == 0) return -5;
  let o = out;
  let first = out;
  let seen = 0;
  let rst = 0;
  const ff = i8x16.splat(-1);
  while (true) {
    while (p + 16 <= end) {
      const v = v128.load(p);
      if (v128.any_true(i8x16.eq(v, ff))) break;
      v128.store(o, v);
      p += 16;
      o += 16;
    }
    while (p < end && load<u8>(p) != 0xff) {
      store<u8>(o, load<u8>(p));
      p++;
      o++;
    }
    if (p + 1 >= end) return -1;
    if (load<u8>(p + 1) == 0) {
      store<u8>(o, 0xff); // a stuffed 0xFF data byte
      o++;
      p += 2;
      continue;
    }
    let r = p + 1;
    while (r < end && load<u8>(r) == 0xff) r++; // fill bytes before a marker (B.1.1.2)
    if (r >= end) return -1;
    const m = <i32>load<u8>(r);
    marker = m;
    const restart = m >= 0xd0 && m <= 0xd7;
    if (!restart && m != 0xd9) return -2;
    if (seen == most) return -4;
    store<u32>(cuts + (<usize>seen << 3), <u32>(first - out));
    store<u32>(cuts + (<usize>seen << 3) + 4, <u32>(o - first));
    seen++;
    // Zeros to the next 4-byte boundary, and past the end: the GPU reads whole words.
    store<u64>(o, 0);
    store<u64>(o + 8, 0);
    o = out + ((o - out + 3) & ~(<usize>3));
    if (m == 0xd9) break;
    if (m != 0xd0 + rst) return -3;
    rst = (rst + 1) & 7;
    first = o;
    p = r + 1;
  }
  length = <i32>(o - out);
  return seen;
}
