/**
 * The no-I/O trainer behind `train.ts --no-io`: a named model trained on images already in
 * memory, uploaded once to the GPU and served as shuffled batches by a GpuDataset. Its
 * throughput is the upper bound the loader-fed run is compared with.
 */
import { CassetteError } from "../errors.ts";
import { fit } from "./fit.ts";
import type { EpochReport, FitOptions } from "./fit.ts";
import { GpuDataset } from "./gpu_dataset.ts";
import { createModel } from "./model.ts";
import type { ModelSpec, Sequential } from "./model.ts";
import type { OptimizerSpec } from "./optim.ts";
import type { ImageSplit } from "../dataset/fashion_mnist.ts";
export type { ImageSplit };

/** What `trainInGpu` trains: a model on in-memory image splits, epochs, batch size, optimizer, seed and callbacks. */
export interface TrainInGpuOptions {
  /** A name of MODELS ("mlp", "cnn", "cnn-bn") or a spec. */
  model: string | ModelSpec;
  /** The training images. */
  train: ImageSplit;
  /** Test images, evaluated after every epoch. */
  test?: ImageSplit;
  /** Epochs to train. */
  epochs: number;
  /** Samples per training batch. */
  batch: number;
  /** Default: Adam, lr 1e-3. */
  optimizer?: OptimizerSpec;
  /** Seeds initialization and the per-epoch shuffles (default 0). */
  seed?: number;
  /**
   * Drop the last partial training batch (default false: every sample trains each epoch, the
   * short last batch through a program of its own size).
   */
  dropLast?: boolean;
  /** Called after each epoch with its report. */
  onEpoch?: (r: EpochReport) => void | Promise<void>;
  /** Called after each step is submitted, as `fit`'s `onStep`. */
  onStep?: FitOptions["onStep"];
  /** Learning rate per epoch (a schedule); default: the optimizer's. */
  lr?: (epoch: number) => number;
  /** Keep the model (for evaluation or save) instead of destroying it. */
  keepModel?: boolean;
}

/**
 * Trains on in-memory tensors without any I/O; returns the per-epoch reports (and the model
 * when `keepModel`).
 *
 * @example
 * ```ts
 * import { requestDevice } from "cassette";
 * import { trainInGpu } from "cassette/train";
 * const device = await requestDevice();
 * const n = 32, images = new Float32Array(n * 784), labels = new Uint32Array(n);
 * for (let i = 0; i < n; i++) { labels[i] = i % 10; images[i * 784 + labels[i]] = 5; }
 * const split = { images, labels, count: n, shape: [1, 28, 28] };
 * const { epochs } = await trainInGpu(device, { model: "mlp", train: split, test: split, epochs: 2, batch: 16 });
 * console.log(epochs.length, epochs[1].imagesPerSec > 0); // 2 true
 * device.destroy();
 * ```
 */
export async function trainInGpu(device: GPUDevice, o: TrainInGpuOptions): Promise<{ epochs: EpochReport[]; model?: Sequential }> {
  if (!Number.isInteger(o.batch) || o.batch < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot train as 'batch' must be a positive integer: current value is ${o.batch}`);
  }
  const seed = o.seed ?? 0;
  const model = createModel(device, o.model, { seed, optimizer: o.optimizer });
  const train = new GpuDataset(device, o.train.images, o.train.labels, { shape: o.train.shape, normalize: o.train.normalize });
  const test = o.test ? new GpuDataset(device, o.test.images, o.test.labels, { shape: o.test.shape, normalize: o.test.normalize }) : undefined;
  const dropLast = (o.dropLast ?? false) && o.train.count >= o.batch;
  try {
    const epochs = await fit(model, {
      epochs: o.epochs,
      train: (e) => train.batches(e, { batch: o.batch, seed, dropLast }),
      test: test && (() => test.batches(0, { batch: Math.max(o.batch, 500), shuffle: false })),
      onEpoch: o.onEpoch,
      onStep: o.onStep,
      lr: o.lr,
    });
    return o.keepModel ? { epochs, model } : { epochs };
  } finally {
    await train.destroy();
    await test?.destroy();
    if (!o.keepModel) await model.destroy();
  }
}
