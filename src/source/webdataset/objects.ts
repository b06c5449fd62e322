/**
 * Where a shard set is and how a shard is read from an offset, for webdataset_source.ts: a
 * folder (node:fs), an http(s):// index or an s3:// one (http.ts's pool and answers; undici is
 * loaded only when such an index is opened). A page's bundle puts objects.browser.ts in this
 * file's place (ARCHITECTURE.md, "The browser graph").
 */
import { createReadStream } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { runtime } from "../../../runtime-adapters/index.ts";
import { CassetteError } from "../../errors.ts";
import { readBoundedBody } from "../../util/bounded_body.ts";
import type { HttpSourceOptions, HttpTarget } from "../http/http.ts";
import type { S3Options } from "../http/s3.ts";
import { storeError } from "../retryable.ts";

const MiB = 1 << 20;

export /** Where the shards are and how one is read from an offset. */
interface Objects {
  /** The index as messages show it. */
  where: string;
  /** The index, whole. */
  index(): Promise<Uint8Array>;
  /** A shard's location and how messages show it (`url` as the index lists it). */
  locate(url: string): { at: string; shown: string };
  /** The bytes of the shard at `at` from byte `start` (to `end`, inclusive, when given). */
  stream(at: string, shown: string, start: number, signal: AbortSignal, end?: number): Promise<AsyncIterable<Uint8Array>>;
  close(): Promise<void>;
}

export /** An undici/Node error's message with its code. */
function describe(e: unknown): string {
  const err = e as { message?: string; code?: string; cause?: { code?: string } };
  const code = err?.code ?? err?.cause?.code;
  const msg = err?.message || String(e);
  return code && !msg.includes(code) ? `${msg} (${code})` : msg;
}

/** The objects of the index at `index`: an s3:// address, an http(s):// URL, or a path. */
export async function openObjects(index: string, http: HttpSourceOptions, s3: S3Options): Promise<Objects> {
  return index.startsWith("s3://") ? await s3Objects(index, s3)
    : /^https?:\/\//.test(index) ? await httpObjects(index, http)
    : fileObjects(index);
}

// --- where the shards are ---------------------------------------------------------------------

/** The index and its shards in a folder: shard URLs relative to the index's folder, or absolute paths. */
function fileObjects(index: string): Objects {
  const dir = dirname(index);
  return {
    where: index,
    index: async () => {
      try {
        return await runtime.readFile(index);
      } catch (e) {
        throw storeError("ERR_STORE", `Cannot open shard index ${index}: ${describe(e)}`, false, { cause: e });
      }
    },
    locate: (url) => {
      const at = isAbsolute(url) ? url : join(dir, url);
      return { at, shown: at };
    },
    stream: (at, shown, start, _signal, end) =>
      new Promise((resolve, reject) => {
        const f = createReadStream(at, { start, ...(end !== undefined ? { end } : {}), highWaterMark: 1 << 16 });
        f.once("open", () => resolve(f as AsyncIterable<Uint8Array>));
        f.once("error", (e: Error & { code?: string }) => {
          reject(storeError(e.code === "ENOENT" ? "ERR_STORE" : "ERR_STORE_UNREACHABLE", `Cannot find shard ${shown}: ${describe(e)}`, e.code !== "ENOENT", { cause: e }));
        });
      }),
    close: async () => {},
  };
}

/** An http(s):// index: its shards on the same origin, read through http.ts's target, pool and answers. */
async function httpObjects(index: string, o: HttpSourceOptions): Promise<Objects> {
  const { parseHttpUrl } = await import("../http/http.ts");
  const { origin, prefix, auth, params, caFile, shown } = parseHttpUrl(index);
  const opts = { ...params, ...o };
  if (auth && origin.startsWith("http:") && !opts.allowInsecureAuth) {
    throw new CassetteError("ERR_INSECURE_AUTH", `Cannot open ${shown} with the credentials in its URL as plain http:// would send the password readable to anyone on the path: use https://, or allow it with insecureauth=1 in the address`);
  }
  const basic = auth ? { authorization: `Basic ${auth}` } : undefined;
  const target: HttpTarget = { origin, prefix: prefix.replace(/\/[^/]*$/, ""), shown: shown.replace(/\/[^/]*$/, ""), ...(basic ? { headers: () => basic } : {}) };
  return targetObjects(target, prefix, opts, caFile, (url) => {
    const u = new URL(url, `${origin}${prefix}`);
    if (u.origin !== origin) throw new CassetteError("ERR_UNSUPPORTED", `Cannot read shard ${url} of ${shown} as it is on another origin (${u.origin}): shards must be beside their index`);
    return u.pathname;
  });
}

/** An s3:// index: its shards are keys beside it in the bucket, each GET signed (s3.ts's target). */
async function s3Objects(index: string, o: S3Options): Promise<Objects> {
  const { s3Target } = await import("../http/s3.ts");
  const { s3IndexAddress, s3IndexPaths } = await import("../http/s3_target.ts");
  const { bucket, name } = s3IndexAddress(index);
  const { target, opts, caFile } = await s3Target(bucket, o);
  const paths = s3IndexPaths(target, name);
  return targetObjects(target, paths.index, opts, caFile, paths.shard);
}

async function targetObjects(target: HttpTarget, indexPath: string, opts: HttpSourceOptions, caFile: string | undefined, path: (url: string) => string): Promise<Objects> {
  const { streamObject, streamPool } = await import("../http/http.ts");
  // A connection per shard streamed: a block of shards, the next epoch's read ahead, single samples.
  const pool = await streamPool(target, { ...opts, connections: opts.connections ?? 16 }, caFile);
  const maxIndex = opts.maxLabelsBytes ?? 64 * MiB;
  const shownOf = (p: string) => `${target.shown}${decodeURIComponent(p.slice(target.prefix.length))}`;
  return {
    where: shownOf(indexPath),
    index: async () => {
      const where = shownOf(indexPath);
      const body = await streamObject(pool, target, indexPath, where, 0);
      return await readBoundedBody(body as AsyncIterable<Uint8Array> & { destroy(): void }, -1, maxIndex, (why) =>
        storeError("ERR_TOO_LARGE", `Cannot read shard index ${where} as ${why}, over the ${maxIndex}-byte limit (maxLabelsBytes)`, false));
    },
    locate: (url) => {
      const p = path(url);
      return { at: p, shown: shownOf(p) };
    },
    stream: (at, shown, start, signal, end) => streamObject(pool, target, at, shown, start, signal, end),
    close: () => pool.destroy(),
  };
}
