/**
 * objects.ts in a web page (the browser bundle and the architecture test's browser walk put
 * this file in its place: ARCHITECTURE.md, "The browser graph"): the index and its shards over
 * http(s)://, read with the page's `fetch` (a relative index is the page's own origin's), a
 * resume or a single sample asked for with a Range header. The server must answer this page's
 * origin with CORS headers (Access-Control-Allow-Origin, and Range allowed); a request that
 * fails without an answer says so. An s3:// index and its shards are keys of a bucket, each GET
 * signed in the page (WebCrypto) or presigned, as the S3 source's (http/s3_web.ts).
 */
import { skipped } from "../../util/byte_range.ts";
import { CassetteError } from "../../errors.ts";
import type { ErrorAnswer, HttpSourceOptions } from "../http/http_source.ts";
import type { S3Options } from "../http/s3_target.ts";
import { retryableStatus, storeError } from "../retryable.ts";

const MiB = 1 << 20;

/** Where the shards are and how one is read from an offset (as objects.ts declares it). */
export interface Objects {
  where: string;
  index(): Promise<Uint8Array>;
  locate(url: string): { at: string; shown: string };
  stream(at: string, shown: string, start: number, signal: AbortSignal, end?: number): Promise<AsyncIterable<Uint8Array>>;
  close(): Promise<void>;
}

/** An error's message with its code, as objects.ts gives it. */
export function describe(e: unknown): string {
  const err = e as { message?: string; code?: string; cause?: { code?: string } };
  const code = err?.code ?? err?.cause?.code;
  const msg = err?.message || String(e);
  return code && !msg.includes(code) ? `${msg} (${code})` : msg;
}

function pageOrigin(): string | undefined {
  return (globalThis as { location?: { href: string; origin: string } }).location?.origin;
}

/** The objects of the index at `index`: an http(s):// URL, or one relative to the page. */
export function openObjects(index: string, http: HttpSourceOptions, s3: S3Options): Promise<Objects> {
  return index.startsWith("s3://") ? s3Objects(index, s3) : new Promise((resolve) => resolve(fetchObjects(index, http)));
}

/** An s3:// index: its shards are keys beside it in the bucket, each GET signed (or presigned) in the page. */
async function s3Objects(index: string, o: S3Options): Promise<Objects> {
  const { s3WebTarget } = await import("../http/s3_web.ts");
  const { s3IndexAddress, s3IndexPaths } = await import("../http/s3_target.ts");
  const { bucket, name } = s3IndexAddress(index);
  const { target, opts } = s3WebTarget(bucket, o);
  const paths = s3IndexPaths(target, name);
  const indexPath = paths.index, shownOf = paths.shown;
  const request = async (p: string, shown: string, start: number, signal?: AbortSignal, end?: number) => {
    const [headers, q] = await Promise.all([target.headers?.("GET", p), target.query?.("GET", p)]);
    return get(`${target.origin}${p}${q ? `?${q}` : ""}`, shown, headers ?? {}, start, signal, end, target.explain);
  };
  return {
    where: shownOf(indexPath),
    index: () => readIndex(request(indexPath, shownOf(indexPath), 0), shownOf(indexPath), opts.maxLabelsBytes ?? 64 * MiB),
    locate: (url) => {
      const p = paths.shard(url);
      return { at: p, shown: shownOf(p) };
    },
    stream: (at, shown, start, signal, end) => request(at, shown, start, signal, end),
    close: async () => {},
  };
}

/** A shard index's bytes, at most `max` of them. */
async function readIndex(body: Promise<AsyncIterable<Uint8Array>>, shown: string, max: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const c of await body) {
    n += c.length;
    if (n > max) throw storeError("ERR_TOO_LARGE", `Cannot read shard index ${shown} as more than ${max} bytes arrived, over the limit (maxLabelsBytes)`, false);
    chunks.push(c);
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) out.set(c, at), at += c.length;
  return out;
}

function fetchObjects(index: string, o: HttpSourceOptions): Objects {
  let url: URL;
  try {
    url = new URL(index, (globalThis as { location?: { href: string } }).location?.href);
  } catch {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address 'wds:${index}' in a browser as it is no URL, nor one relative to the page`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot open wds:${url.origin}${url.pathname} in a browser: a page reads shards over http(s):// only`);
  }
  const headers: Record<string, string> = {};
  if (url.username) {
    if (url.protocol === "http:" && !o.allowInsecureAuth) {
      throw new CassetteError("ERR_INSECURE_AUTH", `Cannot open ${url.origin}${url.pathname} with the credentials in its URL as plain http:// would send the password readable to anyone on the path: use https://, or allow it with allowInsecureAuth`);
    }
    headers.authorization = `Basic ${btoa(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`)}`;
    url.username = url.password = "";
  }
  const shownOf = (u: URL) => `${u.origin}${u.pathname}`;
  const maxIndex = o.maxLabelsBytes ?? 64 * MiB;
  return {
    where: shownOf(url),
    index: () => readIndex(get(url.href, shownOf(url), headers, 0), shownOf(url), maxIndex),
    locate: (u) => {
      const at = new URL(u, url);
      if (at.origin !== url.origin) throw new CassetteError("ERR_UNSUPPORTED", `Cannot read shard ${u} of ${shownOf(url)} as it is on another origin (${at.origin}): shards must be beside their index`);
      return { at: at.href, shown: shownOf(at) };
    },
    stream: (at, shown, start, signal, end) => get(at, shown, headers, start, signal, end),
    close: async () => {},
  };
}

/** The bytes of `url` from `start` (to `end`, inclusive), as they arrive. */
async function get(
  url: string, shown: string, auth: Record<string, string>, start: number, signal?: AbortSignal, end?: number,
  explain?: (a: ErrorAnswer) => Error | undefined,
): Promise<AsyncIterable<Uint8Array>> {
  const headers = { ...auth };
  if (start > 0 || end !== undefined) headers.range = `bytes=${start}-${end ?? ""}`;
  const from = start > 0 ? ` from byte ${start}` : "";
  let res: Response;
  try {
    res = await fetch(url, { headers, ...(signal ? { signal } : {}) });
  } catch (e) {
    if (signal?.aborted) throw e;
    // fetch says no more than "Failed to fetch" for both: the console has the browser's reason.
    throw storeError(
      "ERR_STORE_UNREACHABLE",
      `Cannot get ${shown}${from}: ${describe(e)}: the server is unreachable, or it does not answer this page's origin (${pageOrigin()}) with CORS headers (Access-Control-Allow-Origin, and Range in Access-Control-Allow-Headers, with the Authorization and X-Amz-* headers of a signed request)`,
      true,
      { cause: e },
    );
  }
  const status = res.status;
  if (res.body && (status === 206 || (status === 200 && start === 0 && end === undefined))) return chunks(res.body);
  if (res.body && status === 200) return skipped(chunks(res.body), start, end);
  if (explain) {
    // S3 names its errors in an XML body (a refused signature, a missing bucket).
    const body = await errorStart(res);
    const seen: Record<string, string> = {};
    res.headers.forEach((v, k) => (seen[k] = v));
    const named = explain({ status, headers: seen, body, url: shown });
    if (named) throw named;
  } else await res.body?.cancel().catch(() => {});
  if (status === 404 || status === 410) throw storeError("ERR_STORE", `Cannot find ${shown}: it answered HTTP ${status}`, false);
  const again = retryableStatus(status);
  throw storeError(again ? "ERR_STORE_UNREACHABLE" : "ERR_STORE", `Cannot get ${shown}${from}: it answered HTTP ${status}`, again);
}

/** A response body's chunks; a reader that stops early cancels the response. */
async function* chunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {});
  }
}

/** The first 4 KiB of an error answer's body (where S3 names the error); the rest is not read. */
async function errorStart(res: Response): Promise<Uint8Array> {
  const out = new Uint8Array(4096);
  let n = 0;
  try {
    for await (const c of chunks(res.body ?? new ReadableStream())) {
      const take = Math.min(c.length, out.length - n);
      out.set(c.subarray(0, take), n);
      n += take;
      if (n === out.length) break;
    }
  } catch { /* what arrived names it, or nothing does */ }
  return out.subarray(0, n);
}
