/**
 * GPU preprocessing (the `cassette/gpu` subpath): the device, the preprocessor, and the CPU
 * half that plans each image's crop, flip and scale from (seed, epoch, id).
 * @module
 */
export { deviceInfo, requestDevice } from "./device.ts";
export type { DeviceInfo, DeviceOptions } from "./device.ts";
export { createPreprocessor, Preprocessor } from "./preprocess.ts";
export type { GpuDecodeReport, PreprocessedBatch, PreprocessOptions, PreprocessRunOptions } from "./preprocess.ts";
export type { JpegScan, JpegScanRefusal } from "../decode/jpeg_scan.ts";
export { planImage, planRegion } from "./pack.ts";
export type { CropPolicy, DecodedImage, FrameBox, ImagePlan, PlanOptions, SampleKey } from "./pack.ts";
export type { AugmentOptions, AugmentPlan } from "../decode/augment.ts";
export { decodePlanned } from "./decode_planned.ts";
export type { PlannedDecodeOptions } from "./decode_planned.ts";
export type { GpuBackend } from "../../runtime-adapters/index.ts";
export type { PackedImages } from "./pack.ts";
