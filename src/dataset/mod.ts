/**
 * Datasets beyond ingest and splits (the `cassette/dataset` subpath): Fashion-MNIST straight
 * from its idx files, for training without a store (train.ts --no-io) and for examples.
 * @module
 */
export { FASHION_MNIST_MEAN, FASHION_MNIST_STD, loadFashionMnist } from "./fashion_mnist.ts";
export type { ImageSplit } from "./fashion_mnist.ts";
// Types that ingest's, a store's and an export's signatures name (cassette's root exports those).
export type { IngestError, IngestProgress, IngestVerifier } from "./ingest.ts";
export type { ColumnType } from "./spec.ts";
export type { MetaValue, PutResult } from "./store.ts";
export type { ObjectSink } from "./object_sink.ts";
export type { ShardInfo } from "./webdataset.ts";
