/**
 * Fashion-MNIST from Debian's idx files, for the no-I/O path of train.ts and for benchmarks:
 * bytes plus the normalization pixels/255, then (x − 0.2860) / 0.3530 (the train split's mean
 * and std, the same constants train.ts's GPU preprocessing uses).
 */
import { readIdxDataset } from "./idx.ts";
import { CassetteError } from "../errors.ts";

/** Mean of Fashion-MNIST's train pixels scaled to 0…1: the normalization train.ts uses, (x − mean) / std. */
export const FASHION_MNIST_MEAN = 0.2860;
/** Standard deviation of Fashion-MNIST's train pixels scaled to 0…1: the normalization train.ts uses, (x − mean) / std. */
export const FASHION_MNIST_STD = 0.3530;

/** One split of Fashion-MNIST (train or test) held in memory: its images, labels and shape. */
export interface ImageSplit {
  /** f32 values used as they are, or bytes normalized on the GPU with `normalize`. */
  images: Float32Array<ArrayBuffer> | Uint8Array;
  /** The class of each image, 0…9. */
  labels: Uint32Array;
  /** How many images the split holds. */
  count: number;
  /** Per-sample shape, [1, 28, 28]. */
  shape: number[];
  /** Set when `images` are raw bytes: the mean and std to normalize them with on the GPU. */
  normalize?: { mean: number; std: number };
}

/** u8 pixels → normalized f32 (NCHW with one channel is the same order as the bytes). */
export function normalizePixels(bytes: Uint8Array, mean = FASHION_MNIST_MEAN, std = FASHION_MNIST_STD): Float32Array {
  const out = new Float32Array(bytes.length);
  const scale = 1 / (255 * std), bias = -mean / std;
  for (let i = 0; i < bytes.length; i++) out[i] = bytes[i] * scale + bias;
  return out;
}

/** The train and t10k splits as bytes (normalized on the GPU), the first `limit` samples of each when given. */
export async function loadFashionMnist(prefix = "/usr/share/datasets/fashion-mnist/", limit?: number): Promise<{ train: ImageSplit; test: ImageSplit }> {
  const splits = await readIdxDataset(prefix);
  const take = (name: string): ImageSplit => {
    const s = splits.find((x) => x.name === name);
    if (!s) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot load Fashion-MNIST from ${prefix} as its ${name} split is missing`);
    const count = Math.min(s.count, limit ?? s.count);
    const px = s.height * s.width;
    return {
      images: s.images.slice(0, count * px),
      normalize: { mean: FASHION_MNIST_MEAN, std: FASHION_MNIST_STD },
      labels: Uint32Array.from(s.labels.subarray(0, count)),
      count,
      shape: [1, s.height, s.width],
    };
  };
  return { train: take("train"), test: take("t10k") };
}
