/**
 * kinds_open.ts in a web page (the browser bundle and the architecture test's browser walk put
 * this file in its place: ARCHITECTURE.md, "The browser graph"): WebDataset shards over
 * http(s)://, read with the page's `fetch`; every other kind is refused by name, saying what a
 * page can read instead. Same exports as kinds_open.ts.
 */
import { CassetteError } from "../errors.ts";
import type { Store } from "../dataset/store.ts";
import { redact } from "./address.ts";
import type { Source } from "./source.ts";
import type { WebDatasetSourceOptions } from "./webdataset/webdataset_source.ts";

/** As files/file.ts names it (that module reads folders, which a page has not). */
export const LABELS_FILE = "labels.json";

const INSTEAD = "export the dataset as WebDataset shards (cassette export --format webdataset), serve them over http(s):// with CORS, and read wds:https://…/NAME.index.json";

function notYet(kind: string, at: string): Promise<never> {
  return Promise.reject(new CassetteError("ERR_UNSUPPORTED", `Cannot open '${redact(at)}' in a browser: ${kind} sources are not readable from a page yet (issue 39); ${INSTEAD}`));
}

export function openSqliteStore(path: string): Promise<Store> {
  return Promise.reject(new CassetteError("ERR_UNSUPPORTED", `Cannot open 'sqlite:${path}' in a browser as a page has no file system: ${INSTEAD}`));
}

export function sqliteSourceOf(): Source | undefined {
  return undefined;
}

export function openCassandraStore(text: string): Promise<Store> {
  return Promise.reject(new CassetteError("ERR_UNSUPPORTED", `Cannot open '${redact(text)}' in a browser as a page cannot open TCP connections (Cassandra's protocol): ${INSTEAD}`));
}

export function cassandraSourceOf(): Source | undefined {
  return undefined;
}

export function openFileSource(dir: string): Promise<Source> {
  return Promise.reject(new CassetteError("ERR_UNSUPPORTED", `Cannot open 'file:${dir}' in a browser as a page has no file system: ${INSTEAD}`));
}

export function openHttpSource(url: string): Promise<Source> {
  return notYet("http(s)://", url);
}

export function openS3Source(url: string): Promise<Source> {
  return notYet("s3://", url);
}

export async function openWebDatasetSource(index: string, o: WebDatasetSourceOptions): Promise<Source> {
  const { openWebDatasetSource } = await import("./webdataset/webdataset_source.ts");
  return openWebDatasetSource(index, o);
}
