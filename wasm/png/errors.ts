// Error codes the PNG decoder returns. The host (src/decode/png_error.ts) owns the message table:
// the module says *what* went wrong, *where* (a byte offset into the file) and, for some codes,
// the values involved (what was expected, what was found, the chunk type), which keeps strings
// out of the binary, as wasm/jpeg/errors.ts does.
//
// Codes below UNSUPPORTED_BASE mean malformed input; codes from it up mean a file this decoder
// will not take. Keep in sync with the host's table.

export const OK = 0;
export const E_EMPTY = 1; //              no bytes at all
export const E_NOT_PNG = 2; //            the 8-byte signature is wrong (PNG §5.2)
export const E_TRUNCATED = 3; //          the file ends inside a chunk, before IEND, or inside the zlib stream
export const E_BAD_CRC = 4; //            a chunk's CRC-32 disagrees with its type and data (§5.3)
export const E_BAD_CHUNK = 5; //          a chunk length over 2^31−1, or a type byte that is not a letter
export const E_BAD_IHDR = 6; //           IHDR: wrong length, zero or huge size (§11.2.2)
export const E_BAD_PLTE = 7; //           PLTE: length not 3·n with 1 ≤ n ≤ 2^depth, twice, or absent for colour type 3
export const E_BAD_TRNS = 8; //           tRNS: wrong length for the colour type, more entries than PLTE
export const E_CHUNK_ORDER = 9; //        IHDR not first, PLTE or tRNS after IDAT, IDATs not consecutive
export const E_NO_IMAGE_DATA = 10; //     IEND before any IDAT
export const E_BAD_ZLIB_HEADER = 11; //   CMF/FLG (RFC 1950 §2.2): method, window, check bits, preset dictionary
export const E_BAD_BLOCK = 12; //         a deflate block header (RFC 1951 §3.2.3–7): type 3, LEN ≠ ~NLEN, bad code lengths
export const E_BAD_HUFFMAN_CODE = 13; //  compressed data holds a code that no table assigns, or symbol 286/287, 30/31
export const E_BAD_DISTANCE = 14; //      a back-reference reaches before the start of the image data
export const E_BAD_ADLER = 15; //         the Adler-32 after the deflate data disagrees with the inflated bytes
export const E_TOO_MUCH_DATA = 16; //     the stream inflates to more bytes than IHDR's size needs (a zlib bomb)
export const E_TOO_LITTLE_DATA = 17; //   the stream ends (final block) before IHDR's size is filled
export const E_BAD_FILTER = 18; //        a row's filter type is not 0–4 (§9.2)
export const E_BAD_PALETTE_INDEX = 19; // a palette index at or past the number of PLTE entries
export const E_TOO_LARGE = 20; //         width × height above the caller's maxPixels
export const E_OUT_OF_MEMORY = 21; //     the arena could not grow, or a buffer would pass 2 GiB

export const UNSUPPORTED_BASE = 32;
export const E_UNSUP_DEPTH = 32; //       a bit depth / colour type pair §11.2.2 does not allow (16-bit palette, 4-bit RGB…)
export const E_UNSUP_METHOD = 33; //      compression, filter or interlace method other than 0, 0, 0/1
export const E_UNSUP_CHUNK = 34; //       an unknown critical chunk (first letter upper case, §5.4)

let code: i32 = 0;
let offset: i32 = 0;
let expected: i64 = 0;
let actual: i64 = 0;
/** The type of the chunk being read (or, between chunks, the last one read), four bytes big-endian; 0 before the first. */
export let chunkType: u32 = 0;

/** Records the first error (later ones are consequences) and returns its code. */
export function fail(c: i32, at: i32, exp: i64 = 0, act: i64 = 0): i32 {
  if (code == 0) {
    code = c;
    offset = at;
    expected = exp;
    actual = act;
  }
  return c;
}

export function clearError(): void {
  code = 0;
  offset = 0;
  expected = 0;
  actual = 0;
  chunkType = 0;
}

export function setChunk(type: u32): void {
  chunkType = type;
}

// @ts-ignore: decorator
@inline export function failed(): bool {
  return code != 0;
}

export function errorCode(): i32 { return code; }
/** Byte offset into the file where the error was found. */
export function errorOffset(): i32 { return offset; }
/** What was expected there (a CRC, a size, a count), when the code has one. */
export function errorExpected(): f64 { return <f64>expected; }
/** What was found instead. */
export function errorActual(): f64 { return <f64>actual; }
/** The chunk being read when it failed (four bytes, big-endian), 0 outside chunks. */
export function errorChunk(): u32 { return chunkType; }
