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
export type { DatasetInfo, NatRow, SampleInput, Store, StoredSample } from "./dataset/store.ts";
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
// Any store address as a Source (sqlite:, cassandra://, and cassette export's layout over http(s):// or file:).
export { openReadSource } from "./read/open.ts";
export type { OpenReadOptions } from "./read/open.ts";
export type { HttpSourceOptions } from "./source/http.ts";
export type { FileSourceOptions } from "./source/file.ts";
// Source → Source wrappers: hedged requests for stragglers; which errors are worth retrying.
export { HedgeSource, hedgeOptions } from "./read/hedge.ts";
export type { HedgeOptions } from "./read/hedge.ts";
export { isRetryable, retryableStatus, storeError } from "./source/retryable.ts";
export type { Retryable } from "./source/retryable.ts";
export { epochPlan } from "./plan/epoch.ts";
export * from "./decode/mod.ts";
export { createPreprocessor, Preprocessor } from "./gpu/preprocess.ts";
export type { PreprocessedBatch, PreprocessOptions, PreprocessRunOptions } from "./gpu/preprocess.ts";
export { planImage } from "./gpu/pack.ts";
export type { CropPolicy, DecodedImage, ImagePlan, PlanOptions, SampleKey } from "./gpu/pack.ts";
// Training (src/train/): WGSL training kernels, a sequential model, the training loop.
export { createModel, Sequential } from "./train/model.ts";
export type { CreateModelOptions, Metrics, ModelSpec, TrainBatch } from "./train/model.ts";
export { batchNorm, conv2d, dense, globalAvgPool, maxPool, reluLayer } from "./train/layers.ts";
export type { LayerSpec } from "./train/layers.ts";
export { MODELS } from "./train/models.ts";
export type { OptimizerSpec } from "./train/optim.ts";
export { fit } from "./train/fit.ts";
export type { EpochReport, FitOptions } from "./train/fit.ts";
export { GpuDataset } from "./train/gpu_dataset.ts";
export type { BatchOptions, GpuDatasetOptions } from "./train/gpu_dataset.ts";
export { trainInGpu } from "./train/train_in_gpu.ts";
export { loaderBatches } from "./train/loader_batches.ts";
export { lineChart } from "./observe/svg.ts";
export type { LineChartOptions, Series } from "./observe/svg.ts";
export type { LoaderBatchesOptions, LoaderTrainBatch } from "./train/loader_batches.ts";
export type { TrainInGpuOptions } from "./train/train_in_gpu.ts";
export { loadFashionMnist } from "./dataset/fashion_mnist.ts";
export type { ImageSplit } from "./dataset/fashion_mnist.ts";
