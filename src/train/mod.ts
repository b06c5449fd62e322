/**
 * Training on WebGPU (the `cassette/train` subpath): WGSL training kernels behind a small
 * sequential model API, and the training loop train.ts is built from.
 * @module
 */
export { createModel, Sequential } from "./model.ts";
export type { CreateModelOptions, Metrics, ModelSpec, Normalization, TrainBatch, TrainMetrics } from "./model.ts";
export { batchNorm, conv2d, dense, globalAvgPool, maxPool, reluLayer } from "./layers.ts";
export type { LayerSpec } from "./layers.ts";
export { MODELS } from "./models.ts";
export type { Optimizer, OptimizerSpec } from "./optim.ts";
export type { WeightFormat, WeightHeader } from "./weights.ts";
export { fit } from "./fit.ts";
export type { EpochCarry, EpochReport, FitOptions } from "./fit.ts";
export { readCheckpoint, restoreCheckpoint, saveCheckpoint } from "./checkpoint.ts";
export type { Checkpoint, CheckpointHeader, RunState } from "./checkpoint.ts";
export { GpuDataset } from "./gpu_dataset.ts";
export type { BatchOptions, GpuDatasetOptions } from "./gpu_dataset.ts";
export { trainInGpu } from "./train_in_gpu.ts";
export type { TrainInGpuOptions } from "./train_in_gpu.ts";
export { loaderBatches } from "./loader_batches.ts";
export type { LoaderBatchesOptions, LoaderTrainBatch } from "./loader_batches.ts";
export { loadModel, predict, topK } from "./predict.ts";
export type { LoadedModel, PredictedBatch, PredictOptions } from "./predict.ts";
