// The chunk layer (PNG §5): the signature, then chunks of
//
//   ┌─ length (4, big-endian) ─┬─ type (4 letters) ─┬─ data (length bytes) ─┬─ CRC-32 (4) ─┐
//                              └──────── the CRC covers type and data ─────┘
//
// Two passes over the file. The first checks every chunk's framing, CRC and order up to IEND,
// reads IHDR, PLTE and tRNS (header.ts), refuses an image over maxPixels as soon as IHDR is
// read, and counts the IDAT chunks. The second moves the IDAT chunks' data together, in place,
// into one zlib stream (each chunk's data only moves towards the file's start, over headers
// already read), and keeps a table from stream position to file offset so that errors found
// while inflating still name a byte of the file.
import * as H from "./header";
import { crc32 } from "./crc";
import { alloc } from "../common/memory";
import { errorCode, fail, setChunk, E_BAD_CHUNK, E_BAD_CRC, E_BAD_PLTE, E_CHUNK_ORDER, E_EMPTY, E_NOT_PNG, E_NO_IMAGE_DATA, E_OUT_OF_MEMORY, E_TOO_LARGE, E_TRUNCATED, E_UNSUP_CHUNK } from "./errors";

export const T_IHDR: u32 = 0x49484452;
export const T_PLTE: u32 = 0x504c5445;
export const T_IDAT: u32 = 0x49444154;
export const T_IEND: u32 = 0x49454e44;
export const T_TRNS: u32 = 0x74524e53;

/** The file: where the host put it in the arena. */
export let src: usize = 0;
export let srcLen: i32 = 0;
/** The zlib stream, once compacted: IDAT data back to back, from `stream`. */
export let stream: usize = 0;
export let streamLen: i32 = 0;
/** IDAT chunks: for chunk i, u32 stream position then u32 file offset of its data. */
let segments: usize = 0;
let segmentCount: i32 = 0;

@inline function be32(p: usize): u32 { return bswap<u32>(load<u32>(p)); }

@inline function isLetter(b: u32): bool {
  return (b - 0x41 < 26) || (b - 0x61 < 26);
}

/**
 * Reads the chunks of the `len`-byte file at `p`: pass 1 and pass 2 above. Returns 0 or an
 * error code.
 */
export function readChunks(p: usize, len: i32, maxPixels: f64): i32 {
  src = p;
  srcLen = len;
  stream = 0;
  streamLen = 0;
  segmentCount = 0;
  if (len == 0) return fail(E_EMPTY, 0);
  // §5.2: 89 50 4E 47 0D 0A 1A 0A.
  const SIG: u64 = 0x0a1a0a0d474e5089;
  if (len < 8) {
    for (let i = 0; i < len; i++) {
      if (<u64>load<u8>(p + i) != ((SIG >> (<u64>i << 3)) & 0xff)) return fail(E_NOT_PNG, i);
    }
    return fail(E_TRUNCATED, len);
  }
  const sig = load<u64>(p);
  if (sig != SIG) return fail(E_NOT_PNG, <i32>(ctz(sig ^ SIG) >> 3));

  let pos = 8;
  let seenIhdr = false;
  let idatCount = 0;
  let idatBytes: u64 = 0;
  let idatDone = false;
  let firstIdat = 0;
  while (true) {
    // A cut between chunks keeps the last chunk read as the error's chunk ("after IDAT").
    if (pos + 8 > len) return fail(E_TRUNCATED, len);
    const length = be32(p + pos);
    const type = be32(p + pos + 4);
    if (!isLetter(type >> 24) || !isLetter((type >> 16) & 0xff) || !isLetter((type >> 8) & 0xff) || !isLetter(type & 0xff)) {
      return fail(E_BAD_CHUNK, pos + 4, 0, type);
    }
    setChunk(type);
    if (length > 0x7fffffff) return fail(E_BAD_CHUNK, pos, 0x7fffffff, length);
    const data = pos + 8;
    if (<u64>data + <u64>length + 4 > <u64>len) return fail(E_TRUNCATED, len);
    const stored = be32(p + data + length);
    const computed = crc32(p + pos + 4, <usize>length + 4);
    if (stored != computed) return fail(E_BAD_CRC, data + <i32>length, computed, stored);
    if (!seenIhdr && type != T_IHDR) return fail(E_CHUNK_ORDER, pos + 4, T_IHDR, type);
    if (idatCount > 0 && type != T_IDAT) idatDone = true;
    if (type == T_IHDR) {
      if (seenIhdr) return fail(E_CHUNK_ORDER, pos + 4, 0, type);
      seenIhdr = true;
      if (H.readIhdr(p + data, length, data) != 0) return errorCode();
      // Decompression bombs in the header are refused here, before anything is allocated.
      if (<f64>H.width * <f64>H.height > maxPixels) return fail(E_TOO_LARGE, data, <i64>maxPixels, <i64>H.width * <i64>H.height);
    } else if (type == T_PLTE) {
      if (idatCount > 0) return fail(E_CHUNK_ORDER, pos + 4, 0, type);
      if (H.readPlte(p + data, length, data) != 0) return errorCode();
    } else if (type == T_TRNS) {
      if (idatCount > 0) return fail(E_CHUNK_ORDER, pos + 4, 0, type);
      if (H.readTrns(p + data, length, data) != 0) return errorCode();
    } else if (type == T_IDAT) {
      if (idatDone) return fail(E_CHUNK_ORDER, pos + 4, 0, type); // IDATs must be consecutive
      if (idatCount == 0) firstIdat = pos;
      idatCount++;
      idatBytes += length;
    } else if (type == T_IEND) {
      break;
    } else if ((type & 0x20000000) == 0) {
      return fail(E_UNSUP_CHUNK, pos + 4, 0, type); // critical (§5.4): cannot be skipped
    }
    pos = data + <i32>length + 4;
  }
  setChunk(T_IDAT);
  if (idatCount == 0) return fail(E_NO_IMAGE_DATA, pos + 4);
  if (H.colorType == H.CT_PALETTE && H.paletteSize == 0) return fail(E_BAD_PLTE, firstIdat + 4); // none before IDAT

  // Pass 2: the IDAT data back to back, from where the first IDAT's data starts.
  segments = alloc(<usize>idatCount << 3);
  if (segments == 0) return fail(E_OUT_OF_MEMORY, firstIdat);
  stream = p + firstIdat + 8;
  let to = stream;
  pos = firstIdat;
  for (let i = 0; i < idatCount; i++) {
    const length = be32(p + pos);
    const seg = segments + (<usize>i << 3);
    store<u32>(seg, <u32>(to - stream));
    store<u32>(seg + 4, pos + 8);
    memory.copy(to, p + pos + 8, length);
    to += length;
    pos += 12 + <i32>length;
  }
  segmentCount = idatCount;
  streamLen = <i32>idatBytes;
  return 0;
}

/** The file offset of byte `at` of the zlib stream (at = streamLen: just past the last IDAT's data). */
export function fileOffset(at: i32): i32 {
  if (segmentCount == 0) return at;
  let lo = 0, hi = segmentCount - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (<i32>load<u32>(segments + (<usize>mid << 3)) <= at) lo = mid;
    else hi = mid - 1;
  }
  const seg = segments + (<usize>lo << 3);
  return <i32>load<u32>(seg + 4) + (at - <i32>load<u32>(seg));
}
