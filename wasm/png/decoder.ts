// Decoding one PNG: chunks (chunks.ts, header.ts) → zlib stream → inflated image data
// (zlib.ts, inflate.ts) → unfiltered rows (unfilter.ts), pass by pass for Adam7 → output
// pixels (pixels.ts).
//
// The inflated data's size follows from IHDR alone (§7.2, §8.2), so it is allocated once,
// exactly, before inflating, and inflate may not write past it. Then, by case:
//
//   8-bit rows that are already the output        unfiltered in place, each row moved down
//   (grey, grey + alpha, RGB, RGBA; not Adam7)     over the filter bytes: no second buffer
//
//   everything else                                unfiltered into one of two row buffers
//                                                  (this row, the row above), then converted
//                                                  into the output, which Adam7 passes scatter
import * as H from "./header";
import { readChunks, stream, streamLen, fileOffset } from "./chunks";
import { inflateZlib } from "./zlib";
import { unfilterRow } from "./unfilter";
import { convertRow, outBytes, outChannels, plan, rowsAreOutput } from "./pixels";
import { alloc } from "../common/memory";
import { clearError, errorCode, fail, E_BAD_FILTER, E_OUT_OF_MEMORY } from "./errors";

export const FLAG_GREY = 1;
export const FLAG_DEPTH16 = 2;

/** Arena blocks above this are refused before asking (wasm32 memory is 4 GiB in all). */
const MAX_BLOCK: u64 = 0x7fff0000;

// Adam7 (§8.2): where each pass starts and how far apart its pixels are.
const X0: usize = memory.data<u8>([0, 4, 0, 2, 0, 1, 0]);
const Y0: usize = memory.data<u8>([0, 0, 4, 0, 2, 0, 1]);
const DX: usize = memory.data<u8>([8, 8, 4, 4, 2, 2, 1]);
const DY: usize = memory.data<u8>([8, 8, 8, 4, 4, 2, 2]);

export let outPtr: usize = 0;
export let outLen: usize = 0;

/** Bytes of one filtered row of `w` pixels, without its filter byte. */
@inline function rowBytes(w: i32): u64 {
  return (<u64>w * <u64>(H.samples * H.bitDepth) + 7) >> 3;
}

@inline function passSize(extent: i32, start: i32, step: i32): i32 {
  return extent > start ? (extent - start + step - 1) / step : 0;
}

function allocChecked(bytes: u64): usize {
  if (bytes > MAX_BLOCK) {
    fail(E_OUT_OF_MEMORY, H.ihdrOffset, <i64>MAX_BLOCK, <i64>bytes);
    return 0;
  }
  const p = alloc(<usize>bytes);
  if (p == 0) fail(E_OUT_OF_MEMORY, H.ihdrOffset, 0, <i64>bytes);
  return p;
}

/**
 * Decodes the PNG at `src` (`len` bytes, at the bottom of the arena). Returns 0 or an error
 * code; then outPtr/outLen hold the pixels until the next reset().
 */
export function decode(src: usize, len: i32, maxPixels: f64, flags: i32): i32 {
  clearError();
  H.resetHeader();
  outPtr = 0;
  outLen = 0;
  if (readChunks(src, len, maxPixels) != 0) return errorCode();
  plan((flags & FLAG_GREY) != 0, (flags & FLAG_DEPTH16) != 0);
  const w = H.width, h = H.height;
  // The inflated size (§7.2): a filter byte and the packed samples per row, per pass.
  let raw: u64 = 0;
  if (H.interlaced) {
    for (let p = 0; p < 7; p++) {
      const pw = passSize(w, load<u8>(X0 + p), load<u8>(DX + p));
      const ph = passSize(h, load<u8>(Y0 + p), load<u8>(DY + p));
      if (pw > 0 && ph > 0) raw += <u64>ph * (rowBytes(pw) + 1);
    }
  } else {
    raw = <u64>h * (rowBytes(w) + 1);
  }
  const pixelBytes = outChannels * outBytes;
  const outSize = <u64>w * <u64>h * <u64>pixelBytes;
  if (outSize > MAX_BLOCK) return fail(E_OUT_OF_MEMORY, H.ihdrOffset, <i64>MAX_BLOCK, <i64>outSize);
  const data = allocChecked(raw + 16); // slack for Paeth's 8-byte loads past the last row
  if (data == 0) return errorCode();
  if (inflateZlib(stream, streamLen, data, <usize>raw) != 0) return errorCode();

  const rb = <i32>rowBytes(w);
  const bpp = max(1, (H.samples * H.bitDepth) >> 3);
  const zero = allocChecked(<u64>rowBytes(w) + 16);
  if (zero == 0) return errorCode();
  memory.fill(zero, 0, <usize>rb + 16);

  if (!H.interlaced && rowsAreOutput()) {
    // Row y moves from data + y·(rb + 1) + 1 to data + y·rb as it is unfiltered.
    for (let y = 0; y < h; y++) {
      const s = data + <usize>y * <usize>(rb + 1) + 1;
      const d = data + <usize>y * <usize>rb;
      const f = <u32>load<u8>(s - 1);
      if (!unfilterRow(f, s, d, y == 0 ? zero : d - rb, rb, bpp)) return fail(E_BAD_FILTER, fileOffset(0), y, f);
    }
    outPtr = data;
    outLen = <usize>outSize;
    // Grey output of a grey file with tRNS keeps the grey: already so (one channel).
    return 0;
  }

  const out = allocChecked(outSize + 16);
  if (out == 0) return errorCode();
  const rows = allocChecked(<u64>(rb + 16) * 2);
  if (rows == 0) return errorCode();
  let s = data;
  for (let p = 0; p < 7; p++) {
    let x0 = 0, y0 = 0, dx = 1, dy = 1, pw = w, ph = h;
    if (H.interlaced) {
      x0 = load<u8>(X0 + p); y0 = load<u8>(Y0 + p);
      dx = load<u8>(DX + p); dy = load<u8>(DY + p);
      pw = passSize(w, x0, dx);
      ph = passSize(h, y0, dy);
      if (pw == 0 || ph == 0) continue;
    }
    const n = <i32>rowBytes(pw);
    let prev = zero;
    for (let r = 0; r < ph; r++) {
      const f = <u32>load<u8>(s);
      const cur = rows + <usize>((r & 1) * (rb + 16));
      if (!unfilterRow(f, s + 1, cur, prev, n, bpp)) return fail(E_BAD_FILTER, fileOffset(0), r, f);
      const y = y0 + r * dy;
      const o = out + (<usize>y * <usize>w + <usize>x0) * <usize>pixelBytes;
      if (convertRow(cur, pw, o, <usize>(dx * pixelBytes)) != 0) return errorCode();
      prev = cur;
      s += <usize>n + 1;
    }
    if (!H.interlaced) break;
  }
  outPtr = out;
  outLen = <usize>outSize;
  return 0;
}
