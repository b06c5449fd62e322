/**
 * Datasets beyond ingest and splits (the `cassette/dataset` subpath): Fashion-MNIST straight
 * from its idx files, for training without a store (train.ts --no-io) and for examples.
 * @module
 */
export { FASHION_MNIST_MEAN, FASHION_MNIST_STD, loadFashionMnist } from "./fashion_mnist.ts";
export type { ImageSplit } from "./fashion_mnist.ts";
