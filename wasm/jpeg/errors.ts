// Error codes the decoder returns. The host (src/decode/jpeg_error.ts) owns the message table:
// the module only says *what* went wrong and *where* (a byte offset into the input), which keeps
// strings out of the binary and the words in one place, as AS std's util/error.ts does.
//
// Codes below UNSUPPORTED_BASE mean malformed input; codes from it up mean well-formed input
// that uses a feature this decoder does not implement. Keep in sync with the host's table.

export const OK = 0;
export const E_EMPTY = 1; //               no bytes at all
export const E_NOT_JPEG = 2; //            no SOI marker at the start (B.2.1)
export const E_TRUNCATED = 3; //           the data ends inside a segment or a scan
export const E_BAD_MARKER = 4; //          a byte where a marker must be, or a marker out of place
export const E_BAD_SEGMENT = 5; //         a segment's length disagrees with its content
export const E_BAD_QUANT_TABLE = 6; //     DQT (B.2.4.1)
export const E_BAD_HUFFMAN_TABLE = 7; //   DHT (B.2.4.2) or codes that overflow their length (C.2)
export const E_BAD_FRAME = 8; //           SOF (B.2.2): zero size, bad sampling, a second frame
export const E_BAD_SCAN = 9; //            SOS (B.2.3): bad component, spectral or approximation values
export const E_MISSING_TABLE = 10; //      a scan uses a Huffman or quantization table never defined
export const E_BAD_HUFFMAN_CODE = 11; //   entropy data holds a code that is not in the table
export const E_BAD_COEFFICIENT = 12; //    run-lengths push past the end of the block (F.2.2.2)
export const E_BAD_RESTART = 13; //        RSTn missing or out of sequence (B.2.1, F.1.2.3)
export const E_TOO_LARGE = 14; //          width × height above the caller's maxPixels
export const E_OUT_OF_MEMORY = 15; //      the arena could not grow
export const E_NO_FRAME = 16; //           a scan before any SOF, or EOI before any scan
export const E_TOO_MANY_SCANS = 17; //     more scans than MAX_SCANS (bounded time on hostile input)
export const E_SHORT_SCAN = 18; //         a marker comes before the scan's last MCU is decoded
export const E_BAD_REGION = 19; //         the region asked for lies outside the image (a caller's error)

export const UNSUPPORTED_BASE = 32;
export const E_UNSUP_ARITHMETIC = 32; //   SOF9–11, SOF13–15 or DAC: arithmetic coding (Annex D)
export const E_UNSUP_LOSSLESS = 33; //     SOF3, SOF7, SOF11, SOF15 (Annex H)
export const E_UNSUP_HIERARCHICAL = 34; // SOF5–7, DHP, EXP (Annex J)
export const E_UNSUP_PRECISION = 35; //    sample precision other than 8 bits
export const E_UNSUP_SAMPLING = 36; //     sampling factors whose ratios are not integers
export const E_UNSUP_COMPONENTS = 37; //   2 components, or more than 4
export const E_UNSUP_DNL = 38; //          height 0 in SOF, given later by DNL (B.2.5)

let code: i32 = 0;
let offset: i32 = 0;

/** Records the first error (later ones are consequences) and returns its code. */
export function fail(c: i32, at: i32): i32 {
  if (code == 0) {
    code = c;
    offset = at;
  }
  return c;
}

export function clearError(): void {
  code = 0;
  offset = 0;
}

@inline export function failed(): bool {
  return code != 0;
}

export function errorCode(): i32 {
  return code;
}

/** Byte offset into the input where the error was found. */
export function errorOffset(): i32 {
  return offset;
}
