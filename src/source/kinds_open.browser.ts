/**
 * kinds_open.ts in a web page (the browser bundle and the architecture test's browser walk put
 * this file in its place: ARCHITECTURE.md, "The browser graph"): an export's objects over
 * http(s):// (http/http_web.ts) and s3:// (http/s3_web.ts, signed with WebCrypto), and
 * WebDataset shards, all read with the page's `fetch`; the kinds that need a file system or TCP
 * are refused by name, saying what a page can read instead. Same exports as kinds_open.ts, taking
 * the same arguments (the refusals ignore theirs), so that kinds.ts type-checks against either:
 * deno.json's `./browser` is this graph as source (build.ts, dist/browser-src/).
 */
import { CassetteError } from "../errors.ts";
import type { Store } from "../dataset/store.ts";
import { redact } from "./address.ts";
import type { Source } from "./source.ts";
import type { HttpSourceOptions } from "./http/http_source.ts";
import type { S3Options } from "./http/s3_target.ts";
import type { WebDatasetSourceOptions } from "./webdataset/webdataset_source.ts";

/** As files/file.ts names it (that module reads folders, which a page has not). */
export const LABELS_FILE = "labels.json";

const INSTEAD = "export the dataset (cassette export, or --format webdataset for shards), serve it over http(s):// or from a bucket with CORS, and read https://…, s3://… or wds:https://…/NAME.index.json";

export function openSqliteStore(path: string, _create?: boolean): Promise<Store> {
  return Promise.reject(new CassetteError("ERR_UNSUPPORTED", `Cannot open 'sqlite:${path}' in a browser as a page has no file system: ${INSTEAD}`));
}

export function sqliteSourceOf(_store?: Store, _dataset?: string, _maxInFlight?: number): Source | undefined {
  return undefined;
}

export function openCassandraStore(text: string, _o?: unknown, _create?: boolean, _parsed?: unknown): Promise<Store> {
  return Promise.reject(new CassetteError("ERR_UNSUPPORTED", `Cannot open '${redact(text)}' in a browser as a page cannot open TCP connections (Cassandra's protocol): ${INSTEAD}`));
}

export function cassandraSourceOf(_store?: Store, _dataset?: string, _maxInFlight?: number, _o?: unknown): Source | undefined {
  return undefined;
}

export function openFileSource(dir: string, _o?: unknown): Promise<Source> {
  return Promise.reject(new CassetteError("ERR_UNSUPPORTED", `Cannot open 'file:${dir}' in a browser as a page has no file system: ${INSTEAD}`));
}

export async function openHttpSource(url: string, o: HttpSourceOptions): Promise<Source> {
  const { openHttpSource } = await import("./http/http_web.ts");
  return openHttpSource(url, o);
}

export async function openS3Source(url: string, o: S3Options): Promise<Source> {
  const { openS3Source } = await import("./http/s3_web.ts");
  return openS3Source(url, o);
}

export async function openWebDatasetSource(index: string, o: WebDatasetSourceOptions): Promise<Source> {
  const { openWebDatasetSource } = await import("./webdataset/webdataset_source.ts");
  return openWebDatasetSource(index, o);
}
