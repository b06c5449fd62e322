/**
 * A labelled image set held in GPU memory, served as shuffled batches without any I/O: the
 * `--no-io` upper bound of train.ts, and the way benchmarks and tests feed a model. Each batch
 * is gathered on the GPU (gather_rows.wgsl) from a seeded permutation of the epoch; only the
 * batch's indices cross the bus.
 */
import { CassetteError } from "../errors.ts";
import { epochPermutation } from "./shuffle.ts";
import type { TrainBatch } from "./model.ts";
import { Program } from "./program.ts";
import { createTensor, Tensor, tensorFrom } from "./tensor.ts";
import { gatherRows } from "./ops/gather_rows.ts";
import { gatherU8 } from "./ops/gather_u8.ts";

/** How a `GpuDataset` holds its images: the per-sample shape, and the normalization of byte images. */
export interface GpuDatasetOptions {
  /** Per-sample shape, e.g. [1, 28, 28]. */
  shape: number[];
  /**
   * For byte images: batches are (byte/255 − mean) / std in f32 (one mean and std for every
   * channel). Required with a Uint8Array, refused with a Float32Array.
   */
  normalize?: { mean: number; std: number };
}

/** How `GpuDataset.batches` serves an epoch: batch size, shuffle, seed, and whether to drop a short last batch. */
export interface BatchOptions {
  /** Samples per batch. */
  batch: number;
  /** Permute the samples per epoch from (seed, epoch) (default true). */
  shuffle?: boolean;
  /** Seed of the permutation (default 0): with the epoch, it fixes the order. */
  seed?: number;
  /** Drop a last batch smaller than `batch` (default false). */
  dropLast?: boolean;
}

/** A labelled image set held in GPU memory, served as shuffled batches with no I/O: for benchmarks, tests, and train.ts's `--no-io` bound. */
export class GpuDataset {
  /** The device holding the images. */
  readonly device: GPUDevice;
  /** How many samples it holds. */
  readonly count: number;
  /** Per-sample shape, e.g. [1, 28, 28]. */
  readonly shape: number[];
  readonly #images: Tensor;
  readonly #normalize?: { mean: number; std: number };
  readonly #labels: Tensor;
  readonly #gathers = new Map<number, Promise<{ program: Program; index: Tensor; x: Tensor; y: Tensor }>>();

  /**
   * Uploads `images` and their labels: count·∏shape values, f32 (used as they are) or bytes
   * (normalized per batch as they are gathered; a quarter of the memory).
   */
  constructor(device: GPUDevice, images: Float32Array<ArrayBuffer> | Uint8Array, labels: ArrayLike<number>, o: GpuDatasetOptions) {
    const per = o.shape.reduce((a, b) => a * b, 1);
    const count = labels.length;
    if (count < 1 || images.length !== count * per) {
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot hold a dataset of ${count} labels with ${images.length} image values: samples of shape [${o.shape}] need ${count * per}`,
      );
    }
    const bytes = images instanceof Uint8Array;
    if (bytes !== !!o.normalize) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot hold a dataset as 'normalize' (mean, std) is required for byte images and only for them: images are ${bytes ? "bytes" : "f32"}`);
    }
    const limit = device.limits.maxStorageBufferBindingSize;
    if (images.byteLength > limit) {
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot hold a dataset of ${images.byteLength} bytes on this device as one binding takes at most ${limit}${bytes ? "" : ": pass the images as bytes (Uint8Array + normalize)"}`,
      );
    }
    this.device = device;
    this.count = count;
    this.shape = o.shape;
    this.#normalize = o.normalize;
    if (bytes) {
      const padded = new Uint8Array(Math.ceil(images.length / 4) * 4);
      padded.set(images);
      this.#images = tensorFrom(device, new Uint32Array(padded.buffer), [padded.length / 4], "dataset/images");
    } else {
      this.#images = tensorFrom(device, images, [count, ...o.shape], "dataset/images");
    }
    this.#labels = tensorFrom(device, Uint32Array.from(labels), [count], "dataset/labels");
  }

  /** The batches of one epoch, gathered on the GPU in a seeded order. */
  async *batches(epoch: number, o: BatchOptions): AsyncGenerator<TrainBatch> {
    const B = o.batch;
    if (!Number.isInteger(B) || B < 1) throw new CassetteError("ERR_INVALID_OPTION", `Cannot make batches as 'batch' must be a positive integer: current value is ${B}`);
    const order = o.shuffle === false ? Uint32Array.from({ length: this.count }, (_, i) => i) : epochPermutation(this.count, o.seed ?? 0, epoch);
    const end = o.dropLast ? this.count - (this.count % B) : this.count;
    for (let first = 0; first < end; first += B) {
      const n = Math.min(B, end - first);
      const g = await this.#gather(n);
      this.device.queue.writeBuffer(g.index.buffer, 0, order, first, n);
      const encoder = this.device.createCommandEncoder();
      g.program.encode(encoder);
      this.device.queue.submit([encoder.finish()]);
      // The model copies x and labels in its next submit (queue order): the buffers can be
      // reused for the batch after, as TrainBatch allows.
      yield { x: g.x.buffer, labels: g.y.buffer, n };
    }
  }

  #gather(n: number) {
    let g = this.#gathers.get(n);
    if (!g) {
      const index = createTensor(this.device, [n], "dataset/index", "u32");
      const x = createTensor(this.device, [n, ...this.shape], "dataset/x");
      const y = createTensor(this.device, [n], "dataset/y", "u32");
      const images = this.#normalize ? gatherU8(this.#images, index, x, this.#normalize) : gatherRows(this.#images, index, x);
      g = Program.build(this.device, [images, gatherRows(this.#labels, index, y)], "gather")
        .then((program) => ({ program, index, x, y }));
      this.#gathers.set(n, g);
    }
    return g;
  }

  /** Frees the GPU buffers it holds. */
  async destroy(): Promise<void> {
    for (const g of this.#gathers.values()) {
      const { program, index, x, y } = await g;
      program.destroy();
      for (const t of [index, x, y]) t.buffer.destroy();
    }
    this.#images.buffer.destroy();
    this.#labels.buffer.destroy();
  }
}
