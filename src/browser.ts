/**
 * cassette in a web page (`cassette/browser`; the bundle build.ts writes to dist/browser/): the
 * part of the API that needs nothing a browser lacks. The Loader over an export served over
 * http(s):// (`https://…/PREFIX`, one object per sample), from a bucket (`s3://…`, each request
 * signed with WebCrypto by the credentials the page gives `open`, or presigned), or as
 * WebDataset shards (`wds:https://…/NAME.index.json`, or an index relative to the page), with
 * its read workers as module workers; `open` for a source with its options (an S3 bucket's
 * credentials, the HTTP limits); the wasm decoders and their pool, `requestDevice` from
 * `navigator.gpu`, the GPU preprocessing, the training API (with `loaderBatches`), the
 * dashboard's figures as a component the page mounts (`mountDashboard`: the tiles and charts the
 * served dashboard shows, drawn by the same code) and the SVG charts. Nothing this module
 * reaches imports a Node, Bun or Deno built-in: test/architecture.test.ts walks its graph
 * (ARCHITECTURE.md, "The browser graph"; deno.json's `./browser` is that graph as source, its
 * twins named, which build.ts writes to dist/browser-src/). The
 * server or bucket must answer the page's origin with CORS headers; sqlite:, cassandra:// and
 * file: are refused by name (ERR_UNSUPPORTED), as a page has no file system nor TCP.
 *
 * @example
 * ```ts ignore
 * import { createModel, requestDevice } from "cassette/browser";
 * const device = await requestDevice(); // ERR_NO_GPU_ADAPTER, saying how to enable WebGPU, where the page has none
 * const model = createModel(device, "mlp", { seed: 1 });
 * ```
 */
export { CassetteError } from "./errors.ts";
export type { ErrorCode } from "./errors.ts";
export { epochOrder, epochPlan } from "./plan/epoch.ts";
export type { EpochPlanOptions } from "./plan/epoch.ts";

export { createAutoDecoder, createDecoder, sniffFormat, UnknownFormatError } from "./decode/decoders.ts";
export type { DecoderFormat, ImageFormat } from "./decode/decoders.ts";
export type { AsyncDecoder, DctColorSpace, DctComponent, DctImage, DecodeOptions, Decoder, DecodeRegion, Image } from "./decode/decoder.ts";
export { TargetTooSmallError } from "./decode/decoder.ts";
export { createJpegDecoder } from "./decode/jpeg.ts";
export type { JpegDecodeOptions, JpegDecoder, JpegImage } from "./decode/jpeg.ts";
export { JpegError } from "./decode/jpeg_error.ts";
export { createPngDecoder } from "./decode/png.ts";
export type { PngDecodeOptions, PngDecoder, PngImage } from "./decode/png.ts";
export { PngError } from "./decode/png_error.ts";
export { createDecodePool, JpegDecodePool } from "./decode/pool.ts";
export type { DecodeJob, DecodePoolOptions, DecodeResult, PoolStats } from "./decode/pool.ts";

export { open } from "./read/open.ts";
export type { OpenReadOptions } from "./read/open.ts";
export type { Source } from "./source/source.ts";
export { Loader } from "./loader.ts";
export type { EpochOptions, LoaderOptions, LoaderState, LoaderStats } from "./loader.ts";
export type { Batch, ImageTable } from "./assemble/batch.ts";

export { deviceInfo, requestDevice } from "./gpu/device.ts";
export type { DeviceInfo, DeviceOptions } from "./gpu/device.ts";
export { createPreprocessor, Preprocessor } from "./gpu/preprocess.ts";
export type { GpuDecodeReport, PreprocessedBatch, PreprocessOptions, PreprocessRunOptions } from "./gpu/preprocess.ts";
export { isJpegScan } from "./decode/jpeg_scan.ts";
export type { HuffmanSource, JpegScan, JpegScanComponent, JpegScanRefusal } from "./decode/jpeg_scan.ts";
export { parseAugment } from "./decode/augment.ts";
export type {
  AugmentOptions, AugmentPlan, AugmentStep, ColourJitter, ColourOp, EraseBox, Erasing, FactorRange, RandomAffine, TrivialOp, Warp,
} from "./decode/augment.ts";
export type { BatchMixOptions, BatchMixPlan } from "./decode/mix.ts";

export { createModel, Sequential } from "./train/model.ts";
export type { CreateModelOptions, Metrics, ModelSpec, Normalization, TrainBatch, TrainMetrics } from "./train/model.ts";
export { batchNorm, conv2d, dense, globalAvgPool, maxPool, reluLayer } from "./train/layers.ts";
export type { LayerSpec } from "./train/layers.ts";
export { MODELS } from "./train/models.ts";
export type { OptimizerSpec } from "./train/optim.ts";
export { fit } from "./train/fit.ts";
export type { EpochReport, FitOptions } from "./train/fit.ts";
export { GpuDataset } from "./train/gpu_dataset.ts";
export type { BatchOptions, GpuDatasetOptions } from "./train/gpu_dataset.ts";
export { loaderBatches } from "./train/loader_batches.ts";
export type { LoaderBatchesOptions, LoaderTrainBatch } from "./train/loader_batches.ts";
export { trainInGpu } from "./train/train_in_gpu.ts";
export type { TrainInGpuOptions } from "./train/train_in_gpu.ts";

export { mountDashboard } from "./observe/dashboard_mount.ts";
export type { DashboardElement, MountDashboardOptions, MountedDashboard } from "./observe/dashboard_mount.ts";
export type { DashboardFigures } from "./observe/dashboard_figures.ts";
export { frameFromStats } from "./observe/dashboard_run.ts";
export type { DashboardFrame, HistoryPoint, ServedFrame } from "./observe/dashboard_run.ts";
export { lineChart } from "./observe/svg.ts";
export type { LineChartOptions, Series } from "./observe/svg.ts";

// The types the API above names, so that a page's TypeScript (and deno doc) can name them too.
export type { CacheStats } from "./source/cache/cache_source.ts";
export type {
  CpuOptions, FaultOptions, FlatLoaderOptions, LifecycleOptions, LoaderGroups, LoaderTarget, LoaderTransform, PlanIdentity, PlanOptions, SkippedSample, SourceSettings,
  WindowOptions,
} from "./loader.ts";
export type { DecodedInto, DecodeScale } from "./decode/decoder.ts";
export type { DecodedImage } from "./gpu/pack.ts";
export type { CropPolicy, FrameBox, ImagePlan, PlannedDecode, PlannedDecodeOptions, PlanOptions as CropPlanOptions, SampleKey } from "./decode/crop.ts";
export type { BatchPlanOptions, PackedImages, PlannedShape, TensorOptions } from "./decode/tensor.ts";
export type { EpochCarry } from "./train/fit.ts";
export type { Fetched, FetchCallback } from "./source/source.ts";
export type { GpuBackend } from "./gpu/device.ts";
export type { ImageSplit } from "./train/train_in_gpu.ts";
export type { JpegCoefficients, JpegColorSpace, JpegComponentCoefficients, JpegDecodedInto, JpegInfo, JpegProcess } from "./decode/jpeg.ts";
export type { JpegErrorReason } from "./decode/jpeg_error.ts";
export type { PngErrorReason } from "./decode/png_error.ts";
export type {
  AwsCredentials, CacheOptions, CassandraOptions, CassandraSourceOptions, CassandraTls, CassandraStoreOptions, FileSourceOptions, HttpSourceOptions, OpenStoreOptions, S3Options,
  SourceOpenOptions, WebDatasetSourceOptions,
} from "./source/kinds.ts";
export type { Optimizer } from "./train/optim.ts";
export type { Clock, ClockTimer, HedgeOptions } from "./read/hedge.ts";
export type { MixOptions, MixPart } from "./plan/mix.ts";
export type { TransformModule } from "./decode/transform.ts";
export type { PacketReadOptions } from "./read/worker_source.ts";
export type { PixelSink, SampleClaim } from "./read/decode_source.ts";
export type { GpuReadCounts } from "./decode/decoder.ts";
export type { PrepareJob } from "./decode/pool.ts";
export type { PreprocessedMasks } from "./gpu/preprocess.ts";
export type { ReadSource, Sample } from "./read/sample.ts";
export type { ScalePeriod } from "./decode/scaler.ts";
export type { Store } from "./read/open.ts";
export type { WeightFormat, WeightHeader } from "./train/weights.ts";
export type { DatasetInfo, MetaValue, NatRow, PredictionRow, PutResult, SampleInput, StoredSample } from "./dataset/store.ts";
export type { Column, ColumnType, DatasetSpec } from "./dataset/spec.ts";
export type { LabelSpec, LabelValue } from "./dataset/label.ts";
