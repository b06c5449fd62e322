/**
 * The decode stage's surface (the `cassette/decode` subpath): the Decoder seam, the wasm JPEG
 * decoder, its errors, and the worker pool.
 * @module
 */
export { createDecoder } from "./decoders.ts";
export type { DecoderFormat } from "./decoders.ts";
export type { AsyncDecoder, DecodeOptions, Decoder, DecodeScale, Image } from "./decoder.ts";
export { createJpegDecoder, orient } from "./jpeg.ts";
export type {
  JpegCoefficients, JpegColorSpace, JpegComponentCoefficients, JpegDecodeOptions, JpegDecoder, JpegImage, JpegInfo,
  JpegProcess, JpegScale,
} from "./jpeg.ts";
export { JpegError } from "./jpeg_error.ts";
export type { JpegErrorReason } from "./jpeg_error.ts";
export { createDecodePool, JpegDecodePool } from "./pool.ts";
export type { DecodeJob, DecodePoolOptions, DecodeResult } from "./pool.ts";
