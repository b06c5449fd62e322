/**
 * The MosaicML Streaming peer's side of a bench (bench/peers/streaming_mds.py does the work):
 * write a dataset's samples as MDS shards once, serve the shard folder with nginx, and the
 * argv of a timed read.
 *
 *   const mds = await prepareMds({ python, store, dataset: "fm10k", dir: mdsDir("fm10k") });
 *   const web = await serveMds(mds.out);                 // nginx on a free loopback port
 *   // a latency proxy in front of 127.0.0.1:web.port, listening on PROXY_PORT …
 *   const args = streamingReadArgs({ remote: mdsRemote(`127.0.0.1:${PROXY_PORT}`), local, batch: 128 });
 *   spawn(python, [STREAMING_SCRIPT, ...args]);           // one JSON line on stdout
 *   await web.close();
 *
 * The read reaches nginx through Streaming's S3 downloader (boto3, `S3_ENDPOINT_URL`, path-style
 * `/BUCKET/KEY`): nginx serves the folder at `/${MDS_BUCKET}/`, so any `http://HOST:PORT` that
 * forwards to it (nginx itself, or the proxy) is a remote.
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { homedir } from "node:os";
import { join } from "node:path";
import { startNginx } from "../../test/_support/nginx.ts";

/** The peer program, relative to the repository root. */
export const STREAMING_SCRIPT = "bench/peers/streaming_mds.py";
/** The S3 bucket name the shards are served under (nginx's location `/mds/`). */
export const MDS_BUCKET = "mds";

/** Where a bench keeps a dataset's shards between runs: ${CASSETTE_CACHE:-~/.cache/cassette}/peers-mds/NAME. */
export function mdsDir(dataset: string): string {
  return join(process.env.CASSETTE_CACHE ?? join(homedir(), ".cache", "cassette"), "peers-mds", dataset);
}

/** streaming_mds.py write's summary. */
export interface MdsSummary {
  dataset: string;
  out: string;
  samples: number;
  /** The JPEG bytes in the shards (what the read reports as `bytes`). */
  jpegBytes: number;
  shards: number;
  /** The shard files' bytes. */
  bytes: number;
  /** The write (fetching from the store included); of the earlier write when reused. */
  seconds: number;
  /** Whether `dir` already held these ids' shards and was kept. */
  reused: boolean;
  streaming: string;
}

export interface PrepareOptions {
  /** The streaming venv's python (`bash bench/peers/env.sh streaming --check`). */
  python: string;
  /** cassandra://[user:pass@]host[:port]/KEYSPACE */
  store: string;
  dataset: string;
  /** The shard folder (kept when it already holds the same ids). */
  dir: string;
  /** The first N ids of the shuffled order (common.epoch_ids), as the other peers' --limit. */
  limit?: number;
  /** A file of ids, one a line. */
  ids?: string;
  seed?: number;
  /** MDSWriter's size_limit in bytes (default: Streaming's 64 MiB); small in tests, for several shards. */
  shardBytes?: number;
  /** The repository root (default: the current folder). */
  root?: string;
}

/** Runs `streaming_mds.py write` and returns its summary (rejects with its stderr if it fails). */
export function prepareMds(o: PrepareOptions): Promise<MdsSummary> {
  const args = [join(o.root ?? process.cwd(), STREAMING_SCRIPT), "write", "--store", o.store, "--dataset", o.dataset, "--out", o.dir, "--json"];
  if (o.limit !== undefined) args.push("--limit", String(o.limit));
  if (o.ids) args.push("--ids", o.ids);
  if (o.seed !== undefined) args.push("--seed", String(o.seed));
  if (o.shardBytes !== undefined) args.push("--shard-bytes", String(o.shardBytes));
  return new Promise((resolve, reject) => {
    const child = spawn(o.python, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`${STREAMING_SCRIPT} write exited ${code}: ${err.trim()}`));
      const lines = out.trim().split("\n");
      resolve(JSON.parse(lines[lines.length - 1]));
    });
  });
}

export interface MdsServer {
  /** nginx's port on 127.0.0.1 (the proxy's target). */
  port: number;
  /** The remote for `read`, straight to nginx: http://127.0.0.1:PORT/mds. */
  remote: string;
  close(): Promise<void>;
}

/** Serves a shard folder with nginx at /mds/ (GET, HEAD and Range, as S3 answers boto3). */
export async function serveMds(dir: string): Promise<MdsServer> {
  const web = await startNginx({ root: dir, prefix: MDS_BUCKET });
  return { port: web.port, remote: mdsRemote(`127.0.0.1:${web.port}`), close: () => web.close() };
}

/** The remote for `read` through any HOST:PORT that forwards to nginx (e.g. the latency proxy). */
export function mdsRemote(hostPort: string): string {
  return `http://${hostPort}/${MDS_BUCKET}`;
}

export interface ReadOptions {
  /** http://HOST:PORT/mds (mdsRemote). */
  remote: string;
  /** Streaming's local cache folder; emptied by the peer before it reads. */
  local: string;
  /** DataLoader worker processes (default 2). */
  workers?: number;
  batch?: number;
  tensor?: "fm" | "imagenet";
  stepMs?: number;
  /** Read N samples (Streaming's epoch_size). */
  limit?: number;
  /** Streaming's shuffle_seed. */
  seed?: number;
  /** The first batch's tensor as .npy. */
  dump?: string;
  /** Each batch's hand-over time in the report (batchAtMs). */
  series?: boolean;
  /** The dataset's name, for the report. */
  dataset?: string;
}

/** The arguments after STREAMING_SCRIPT for a timed read (it prints one JSON line: common.Clock's report). */
export function streamingReadArgs(o: ReadOptions): string[] {
  const args = ["read", "--remote", o.remote, "--local", o.local, "--workers", String(o.workers ?? 2), "--json"];
  if (o.batch !== undefined) args.push("--batch", String(o.batch));
  if (o.tensor) args.push("--tensor", o.tensor);
  if (o.stepMs) args.push("--step-ms", String(o.stepMs));
  if (o.limit !== undefined) args.push("--limit", String(o.limit));
  if (o.seed !== undefined) args.push("--seed", String(o.seed));
  if (o.dump) args.push("--dump", o.dump);
  if (o.series) args.push("--series");
  if (o.dataset) args.push("--dataset", o.dataset);
  return args;
}
