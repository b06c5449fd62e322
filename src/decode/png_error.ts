/**
 * Errors of the PNG decoder. The wasm module (wasm/png/errors.ts) returns a numeric code, a byte
 * offset into the file, the chunk it was reading and, for some codes, the value it expected and
 * the one it found; this file owns the words. Malformed input (`ERR_MALFORMED_INPUT`) and files
 * this decoder will not take (`ERR_UNSUPPORTED`) are different codes, as for JPEG (jpeg_error.ts).
 */
import { CassetteError } from "../errors.ts";

/** Why a PNG could not be decoded: stable names, one per wasm error code. */
export type PngErrorReason =
  | "empty"
  | "not-png"
  | "truncated"
  | "bad-crc"
  | "bad-chunk"
  | "bad-ihdr"
  | "bad-palette"
  | "bad-trns"
  | "chunk-order"
  | "no-image-data"
  | "bad-zlib-header"
  | "bad-deflate-block"
  | "bad-huffman-code"
  | "bad-distance"
  | "bad-adler"
  | "too-much-data"
  | "too-little-data"
  | "bad-filter"
  | "bad-palette-index"
  | "too-large"
  | "out-of-memory"
  | "bit-depth"
  | "method"
  | "critical-chunk"
  | "unknown";

/** What the module reported beside the code (see wasm/png/errors.ts). */
export interface PngErrorFacts {
  /** The value expected there, when the code has one (a CRC, a size, a count). */
  expected: number;
  /** The value found instead. */
  actual: number;
  /** The chunk being read ("IDAT", …), or for a cut between chunks the last one read; "" before the first. */
  chunk: string;
}

const hex = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, "0")}`;
const TYPE_NAMES: Record<number, string> = { 0: "grey", 2: "RGB", 3: "palette", 4: "grey + alpha", 6: "RGBA" };

/** code → [reason, why, detail from the facts]. */
const TABLE: Record<number, [PngErrorReason, string, (f: PngErrorFacts) => string]> = {
  1: ["empty", "the input is empty", () => ""],
  2: ["not-png", "it does not start with the PNG signature (89 50 4E 47 0D 0A 1A 0A)", () => ""],
  3: ["truncated", "the data ends inside a chunk, before IEND, or inside the compressed image data", (f) => f.chunk ? ` (in or after ${f.chunk})` : ""],
  4: ["bad-crc", "a chunk's CRC-32 does not match its contents", (f) => ` (chunk ${f.chunk}: stored ${hex(f.actual)}, computed ${hex(f.expected)})`],
  5: ["bad-chunk", "a chunk's length or type is invalid", (f) => f.expected ? ` (length ${f.actual}, at most ${f.expected})` : ` (type bytes ${hex(f.actual)} are not four letters)`],
  6: ["bad-ihdr", "the header chunk (IHDR) is invalid", (f) => f.expected === 13 ? ` (length ${f.actual}, expected 13)` : ` (width or height ${f.actual}, expected 1 to 2^31 − 1)`],
  7: ["bad-palette", "the palette (PLTE) is missing, repeated, not allowed for the colour type, or of a wrong length", (f) => f.expected ? ` (length ${f.actual}, expected a multiple of 3 up to ${f.expected})` : ""],
  8: ["bad-trns", "the transparency chunk (tRNS) has the wrong length, or comes before PLTE", (f) => f.expected ? ` (length ${f.actual}, expected at most ${f.expected})` : ""],
  9: ["chunk-order", "a chunk is out of order (IHDR first, PLTE and tRNS before IDAT, IDATs consecutive)", (f) => ` (${f.chunk})`],
  10: ["no-image-data", "it has no IDAT chunk before IEND", () => ""],
  11: ["bad-zlib-header", "the zlib header of the image data is invalid (not deflate, bad check bits, or a preset dictionary)", (f) => ` (byte ${hex(f.actual)})`],
  12: ["bad-deflate-block", "a deflate block header is invalid (block type 3, LEN not matching NLEN, or bad code lengths)", () => ""],
  13: ["bad-huffman-code", "the compressed data holds a code that is not in its Huffman table", () => ""],
  14: ["bad-distance", "a back-reference in the compressed data reaches before the start of the image data", () => ""],
  15: ["bad-adler", "the Adler-32 of the inflated image data does not match", (f) => ` (stored ${hex(f.actual)}, computed ${hex(f.expected)})`],
  16: ["too-much-data", "the image data inflates to more bytes than IHDR's size needs (a zlib bomb, stopped there)", (f) => ` (expected ${f.expected} bytes)`],
  17: ["too-little-data", "the image data inflates to fewer bytes than IHDR's size needs", (f) => ` (expected ${f.expected} bytes, got ${f.actual})`],
  18: ["bad-filter", "a row has a filter type other than 0 to 4", (f) => ` (row ${f.expected} of its pass has filter type ${f.actual})`],
  19: ["bad-palette-index", "a pixel's palette index is past the end of the palette", (f) => ` (index ${f.actual}, the palette has ${f.expected} entries)`],
  20: ["too-large", "its width × height exceeds 'maxPixels'", (f) => ` (${f.actual} pixels, maxPixels ${f.expected})`],
  21: ["out-of-memory", "the decoder could not allocate memory for it", (f) => f.actual ? ` (${f.actual} bytes)` : ""],
  32: ["bit-depth", "its bit depth and colour type are not a combination PNG allows", (f) => ` (bit depth ${f.actual} with colour type ${f.expected}, ${TYPE_NAMES[f.expected] ?? "unknown"})`],
  33: ["method", "it names a compression, filter or interlace method other than PNG's", (f) => ` (method ${f.actual})`],
  34: ["critical-chunk", "it has a critical chunk this decoder does not know", (f) => ` (${f.chunk})`],
};

/** A PNG the decoder refused: `reason` names the problem, `offset` the byte where it was found. */
export class PngError extends CassetteError {
  /** What is wrong, as a stable name ("bad-crc", "too-large", …) a program can test. */
  readonly reason: PngErrorReason;
  /** The byte of the input where the problem was found. */
  readonly offset: number;
  /** The chunk being read ("IHDR", "IDAT", …), or for a cut between chunks the last one read; "" before the first. */
  readonly chunk: string;
  /** The values involved, when the code has them (0 otherwise). */
  readonly expected: number;
  /** The value found (0 when the reason has none). */
  readonly actual: number;
  /** ERR_UNSUPPORTED for a valid file the decoder cannot read, ERR_MALFORMED_INPUT for a broken one. */
  constructor(reason: PngErrorReason, offset: number, message: string, unsupported: boolean, facts: PngErrorFacts) {
    super(unsupported ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", message);
    this.name = "PngError";
    this.reason = reason;
    this.offset = offset;
    this.chunk = facts.chunk;
    this.expected = facts.expected;
    this.actual = facts.actual;
  }

  /** The error for wasm code `code` at byte `offset`, with the module's facts; `more` is added to the words. */
  static fromCode(code: number, offset: number, facts: PngErrorFacts = { expected: 0, actual: 0, chunk: "" }, more = ""): PngError {
    const [reason, why, detail] = TABLE[code] ?? ["unknown", `the decoder returned code ${code}`, () => ""];
    const unsupported = code >= 32;
    const what = unsupported ? `Cannot decode PNG as ${why}, which is not supported` : `Cannot decode PNG as ${why}`;
    return new PngError(reason, offset, `${what}${detail(facts)}${more}: at byte ${offset}`, unsupported, facts);
  }
}

/** A chunk type (four bytes, big-endian, as the module reports it) as text: "IDAT"; "" for 0. */
export function chunkName(type: number): string {
  if (type === 0) return "";
  const s = String.fromCharCode((type >>> 24) & 255, (type >>> 16) & 255, (type >>> 8) & 255, type & 255);
  return /^[A-Za-z]{4}$/.test(s) ? s : hex(type);
}
