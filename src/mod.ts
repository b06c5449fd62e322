/**
 * cassette: a deep-learning data loader for Deno, Bun and Node.
 *
 * The flow of a sample, and where each stage lives:
 *
 *   split (ids) → plan/ → schedule/ → source/ → decode/ → assemble/ → gpu/ → train/
 *
 * This module is the public surface: re-exports only.
 * @module
 */
export { CassetteError } from "./errors.ts";
export type { ErrorCode } from "./errors.ts";
export { deviceInfo, requestDevice } from "./gpu/device.ts";
export type { DeviceInfo, DeviceOptions } from "./gpu/device.ts";
export { SAMPLE_NAMESPACE, sampleId } from "./dataset/sample_id.ts";
export { openStore } from "./source/open.ts";
export type { OpenStoreOptions } from "./source/open.ts";
export type { DatasetInfo, NatRow, SampleInput, Store, StoredSample } from "./source/store.ts";
export type { Column, DatasetSpec } from "./dataset/spec.ts";
export { ingest } from "./dataset/ingest.ts";
export type { IngestOptions, IngestSummary } from "./dataset/ingest.ts";
export { createSplits, loadSplit, loadSplits, saveSplits } from "./dataset/splits.ts";
export type { Split, SplitFile, SplitParams } from "./dataset/splits.ts";
export { Loader } from "./loader.ts";
export type { EpochOptions, LoaderOptions, LoaderStats } from "./loader.ts";
export type { Batch } from "./assemble/batch.ts";
export type { Fetched, Source } from "./source/source.ts";
export { openSource } from "./source/open.ts";
export { epochPlan } from "./plan/epoch.ts";
export * from "./decode/mod.ts";
export { createPreprocessor, Preprocessor } from "./gpu/preprocess.ts";
export type { PreprocessedBatch, PreprocessOptions, PreprocessRunOptions } from "./gpu/preprocess.ts";
export { planImage } from "./gpu/pack.ts";
export type { CropPolicy, DecodedImage, ImagePlan, PlanOptions, SampleKey } from "./gpu/pack.ts";
