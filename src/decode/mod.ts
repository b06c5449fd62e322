/**
 * The decode stage's surface (the `cassette/decode` subpath): the Decoder seam, the wasm JPEG
 * and PNG decoders, their errors, and the worker pool.
 * @module
 */
import { entryUrl } from "../util/entry_url.ts";
export { createAutoDecoder, createDecoder, sniffFormat, UnknownFormatError } from "./decoders.ts";
export type { DecoderFormat, ImageFormat } from "./decoders.ts";
export { isJpegScan } from "./jpeg_scan.ts";
export type { HuffmanSource, JpegScan, JpegScanComponent, JpegScanRefusal } from "./jpeg_scan.ts";
export type { AsyncDecoder, DctColorSpace, DctComponent, DctImage, DecodedInto, DecodeOptions, Decoder, DecodeRegion, DecodeScale, Image } from "./decoder.ts";
export { TargetTooSmallError } from "./decoder.ts";
export { createJpegDecoder, orient } from "./jpeg.ts";
export type {
  JpegCoefficients, JpegColorSpace, JpegComponentCoefficients, JpegDecodedInto, JpegDecodeOptions, JpegDecoder, JpegImage, JpegInfo,
  JpegProcess, JpegScale,
} from "./jpeg.ts";
export { JpegError } from "./jpeg_error.ts";
export type { JpegErrorReason } from "./jpeg_error.ts";
export { createPngDecoder } from "./png.ts";
export type { PngDecodeOptions, PngDecoder, PngImage } from "./png.ts";
export { PngError } from "./png_error.ts";
export type { PngErrorFacts, PngErrorReason } from "./png_error.ts";
export { createDecodePool, JpegDecodePool } from "./pool.ts";
export type { DecodeJob, DecodePoolOptions, DecodeResult, PoolStats, PrepareJob, ScalePeriod } from "./pool.ts";
export type { TransformContext, TransformFn, TransformInput, TransformModule } from "./transform.ts";
export { randomCropBox, resizeBilinear } from "./crop.ts";
export type { CropBox } from "./crop.ts";
export { cpuTensor, planBatch } from "./tensor.ts";
export { drawAugment, inverseAffine, parseAugment, TRIVIAL_OPS } from "./augment.ts";
export { drawMix, mixTargets, mixTensor } from "./mix.ts";
export type { BatchMixOptions, BatchMixPlan } from "./mix.ts";
export type { AugmentOptions, AugmentPlan, AugmentStep, ColourJitter, ColourOp, EraseBox, Erasing, FactorRange, RandomAffine, TrivialOp, Warp } from "./augment.ts";
export type { BatchPlanOptions, CpuTensor, PackedImages, PlannedShape, TensorImage, TensorOptions } from "./tensor.ts";

/**
 * The built-in random-resized-crop as a transform module, for a Loader's
 * `transform: { module: randomResizedCrop, options: { size: 224 } }`: the box drawn on the full
 * image, decoded at the largest reduction that keeps it at least `size` (src/decode/transforms/).
 */
export const randomResizedCrop: URL = entryUrl(import.meta.url, "./transforms/random_resized_crop.ts", "decode/transforms/random_resized_crop.js");
