/**
 * The read path's parts (the `cassette/read` subpath): Source → Source wrappers for those who
 * compose their own, and how sources say which errors are worth retrying.
 * @module
 */
export { DecodeSource } from "./decode_source.ts";
export { HedgeSource, hedgeOptions } from "./hedge.ts";
export type { HedgeOptions } from "./hedge.ts";
export type { Clock, ClockTimer } from "../util/clock.ts";
export { RetrySource } from "./retry.ts";
export type { RetryOptions } from "./retry.ts";
export { openWorkerSource } from "./worker_source.ts";
export type { WorkerSourceOptions } from "./worker_source.ts";
export { isRetryable, retryableStatus, storeError } from "../source/retryable.ts";
export type { Retryable } from "../source/retryable.ts";
export type { HttpSourceOptions } from "../source/http/http.ts";
export type { FileSourceOptions } from "../source/files/file.ts";
export type { Fetched, FetchCallback, Source } from "../source/source.ts";
export type { ReadSource, Sample } from "./sample.ts";
// Types that open's, openSource's and the read wrappers' signatures name.
export type { S3Options } from "../source/http/s3.ts";
export type { AwsCredentials } from "../source/http/sigv4.ts";
export type { CassandraOptions, CassandraTls } from "../source/cassandra/cassandra_client.ts";
export type { CassandraStoreOptions } from "../source/cassandra/cassandra.ts";
export type { CassandraSourceOptions } from "../source/cassandra/cassandra_source.ts";
export type { WebDatasetSourceOptions } from "../source/webdataset/webdataset_source.ts";
export type { PixelSink, PreparePool, SampleClaim } from "./decode_source.ts";
export type { GpuReadCounts } from "../decode/decoder.ts";
export type { PacketReadOptions, WorkerSource } from "./worker_source.ts";
