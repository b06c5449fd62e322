/**
 * Errors of the JPEG decoder. The wasm module returns a numeric code and a byte offset
 * (wasm/jpeg/errors.ts); this file owns the words, which keeps
 * strings out of the wasm binary. Malformed input and
 * unsupported features are different `code`s, so callers can skip one and report the other.
 */
import { CassetteError } from "../errors.ts";

/** Why a JPEG could not be decoded: stable names, one per wasm error code. */
export type JpegErrorReason =
  | "empty"
  | "not-jpeg"
  | "truncated"
  | "bad-marker"
  | "bad-segment"
  | "bad-quant-table"
  | "bad-huffman-table"
  | "bad-frame"
  | "bad-scan"
  | "missing-table"
  | "bad-huffman-code"
  | "bad-coefficient"
  | "bad-restart"
  | "too-large"
  | "out-of-memory"
  | "no-frame"
  | "too-many-scans"
  | "short-scan"
  | "region"
  | "arithmetic"
  | "lossless"
  | "hierarchical"
  | "precision"
  | "sampling"
  | "components"
  | "dnl"
  | "unknown";

const TABLE: Record<number, [JpegErrorReason, string]> = {
  1: ["empty", "the input is empty"],
  2: ["not-jpeg", "it does not start with the SOI marker (FF D8)"],
  3: ["truncated", "the data ends inside a segment or scan"],
  4: ["bad-marker", "a marker is missing or out of place"],
  5: ["bad-segment", "a segment's length disagrees with its content"],
  6: ["bad-quant-table", "a quantization table (DQT) is invalid"],
  7: ["bad-huffman-table", "a Huffman table (DHT) is invalid"],
  8: ["bad-frame", "the frame header (SOF) is invalid"],
  9: ["bad-scan", "a scan header (SOS) is invalid"],
  10: ["missing-table", "a scan uses a table that was never defined"],
  11: ["bad-huffman-code", "the entropy-coded data holds a code that is not in its Huffman table"],
  12: ["bad-coefficient", "the entropy-coded data runs past the end of a block"],
  13: ["bad-restart", "a restart marker (RSTn) is missing or out of sequence"],
  14: ["too-large", "its width × height exceeds 'maxPixels'"],
  15: ["out-of-memory", "the decoder could not allocate memory for it"],
  16: ["no-frame", "it has a scan before any frame header, or no scan at all"],
  17: ["too-many-scans", "it has more than 1000 scans"],
  18: ["short-scan", "a marker interrupts the entropy-coded data before the scan's last block"],
  19: ["region", "the 'region' asked for lies outside the image"],
  32: ["arithmetic", "it uses arithmetic coding"],
  33: ["lossless", "it uses the lossless process"],
  34: ["hierarchical", "it uses the hierarchical process"],
  35: ["precision", "its sample precision is not 8 bits"],
  36: ["sampling", "its sampling factors have a non-integer ratio"],
  37: ["components", "it has a number of components other than 1, 3 or 4"],
  38: ["dnl", "its height is defined by a DNL marker"],
};

/** A JPEG the decoder refused: `reason` names the problem, `offset` the byte where it was found. */
export class JpegError extends CassetteError {
  /** What is wrong, as a stable name ("truncated", "arithmetic", …) a program can test. */
  readonly reason: JpegErrorReason;
  /** The byte of the input where the problem was found. */
  readonly offset: number;
  /** ERR_UNSUPPORTED for a valid file the decoder cannot read, ERR_MALFORMED_INPUT for a broken one. */
  constructor(reason: JpegErrorReason, offset: number, message: string, unsupported: boolean) {
    super(unsupported ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", message);
    this.name = "JpegError";
    this.reason = reason;
    this.offset = offset;
  }

  /** The error for wasm code `code` at byte `offset`; `detail` adds the values involved. */
  static fromCode(code: number, offset: number, detail = ""): JpegError {
    const [reason, why] = TABLE[code] ?? ["unknown", `the decoder returned code ${code}`];
    const unsupported = code >= 32;
    const what = unsupported ? `Cannot decode JPEG as ${why}, which is not supported` : `Cannot decode JPEG as ${why}`;
    return new JpegError(reason, offset, `${what}${detail}: at byte ${offset}`, unsupported);
  }
}
