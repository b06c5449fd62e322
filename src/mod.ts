/**
 * cassette: a deep-learning data loader for Deno, Bun and Node.
 *
 * The flow of a sample, and where each stage lives (ARCHITECTURE.md):
 *
 *   split (ids) → plan/ → schedule/ → read/ (source/ + decode/) → assemble/ → gpu/ → train/
 *
 * This module is the public surface: opening stores, ingest and splits, the Loader, the
 * decoder, the GPU device and preprocessing. The rest is in subpaths:
 *   cassette/decode   the Decoder seam, the JPEG decoder's details, the decode pool
 *   cassette/read     Source → Source wrappers (hedging, retries, decoding), error classes of sources
 *   cassette/gpu      GPU preprocessing's planning and packing
 *   cassette/train    the WGSL training kernels' model API and the training loop
 *   cassette/dataset  Fashion-MNIST from its idx files, for training without a store
 * @module
 */
export { CassetteError } from "./errors.ts";
export type { ErrorCode } from "./errors.ts";
export { deviceInfo, requestDevice } from "./gpu/device.ts";
export type { DeviceInfo, DeviceOptions } from "./gpu/device.ts";
export { SAMPLE_NAMESPACE, sampleId } from "./dataset/sample_id.ts";
// Opening by address: open(address, { mode: "read" | "write" }); openStore, openSource and
// openReadSource are its older names.
export { open, openReadSource } from "./read/open.ts";
export type { OpenOptions, OpenReadOptions } from "./read/open.ts";
export type { SourceOpenOptions } from "./source/kinds.ts";
export { openSource, openStore } from "./source/open.ts";
export type { OpenStoreOptions } from "./source/open.ts";
export type { DatasetInfo, NatRow, PredictionRow, SampleInput, Store, StoredSample } from "./dataset/store.ts";
export type { Column, DatasetSpec } from "./dataset/spec.ts";
export type { LabelSpec, LabelValue } from "./dataset/label.ts";
export { ingest } from "./dataset/ingest.ts";
export { exportDataset, exportShards, openSink } from "./source/export/export.ts";
export type { ExportOptions, ExportSummary, ShardExportOptions, ShardExportSummary } from "./source/export/export.ts";
export type { IngestOptions, IngestSummary } from "./dataset/ingest.ts";
export { createFolds, createSplits, loadSplit, loadSplits, saveSplits } from "./dataset/splits.ts";
export type { FoldParams, Split, SplitFile, SplitParams } from "./dataset/splits.ts";
export { epochOrder, epochPlan } from "./plan/epoch.ts";
export type { EpochPlanOptions } from "./plan/epoch.ts";
export { mixCounts, mixOrder } from "./plan/mix.ts";
export type { MixOptions, MixPart } from "./plan/mix.ts";
export { MixSource } from "./source/mix/mix_source.ts";
export type { MixSourcePart } from "./source/mix/mix_source.ts";
export { CacheSource } from "./source/cache/cache_source.ts";
export type { CacheOptions, CacheStats } from "./source/cache/cache_source.ts";
export { Loader, mergeStates } from "./loader.ts";
export type {
  CpuOptions, EpochOptions, FaultOptions, FlatLoaderOptions, LifecycleOptions, LoaderGroups, LoaderOptions, LoaderState, LoaderStats, LoaderTarget, LoaderTransform, PlanIdentity, PlanOptions,
  SkippedSample, SourceSettings, WindowOptions,
} from "./loader.ts";
export type { Batch, ImageTable } from "./assemble/batch.ts";
export type { Source } from "./source/source.ts";
export type { ReadSource, Sample } from "./read/sample.ts";
export type { FetchedSample as Fetched } from "./read/sample.ts";
export { createDecoder } from "./decode/decoders.ts";
export type { DctColorSpace, DctComponent, DctImage, DecodeOptions, Decoder, Image } from "./decode/decoder.ts";
export type { PlannedDecode } from "./decode/crop.ts";
export { createJpegDecoder } from "./decode/jpeg.ts";
export { createPngDecoder } from "./decode/png.ts";
export type { JpegDecodeOptions, JpegDecoder, JpegImage } from "./decode/jpeg.ts";
export { createPreprocessor, Preprocessor } from "./gpu/preprocess.ts";
export type { GpuDecodeReport, PreprocessedBatch, PreprocessedMasks, PreprocessOptions, PreprocessRunOptions } from "./gpu/preprocess.ts";
export { isJpegScan } from "./decode/jpeg_scan.ts";
export type { HuffmanSource, JpegScan, JpegScanComponent, JpegScanRefusal } from "./decode/jpeg_scan.ts";
export { parseAugment } from "./decode/augment.ts";
export type {
  AugmentOptions, AugmentPlan, AugmentStep, ColourJitter, ColourOp, EraseBox, Erasing, FactorRange, RandomAffine, TrivialOp, Warp,
} from "./decode/augment.ts";
export type { BatchMixOptions, BatchMixPlan } from "./decode/mix.ts";
export { lineChart } from "./observe/svg.ts";
export type { LineChartOptions, Series } from "./observe/svg.ts";
export { frameFromStats, startDashboard } from "./observe/dashboard.ts";
export type { Dashboard, DashboardFrame, DashboardOptions, HistoryPoint, ServedFrame } from "./observe/dashboard.ts";
