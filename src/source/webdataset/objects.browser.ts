/**
 * objects.ts in a web page (the browser bundle and the architecture test's browser walk put
 * this file in its place: ARCHITECTURE.md, "The browser graph"): the index and its shards over
 * http(s)://, read with the page's `fetch` (a relative index is the page's own origin's), a
 * resume or a single sample asked for with a Range header. The server must answer this page's
 * origin with CORS headers (Access-Control-Allow-Origin, and Range allowed); a request that
 * fails without an answer says so. s3:// indexes are not readable from a page yet (issue 39).
 */
import { skipped } from "../../util/byte_range.ts";
import { CassetteError } from "../../errors.ts";
import type { HttpSourceOptions } from "../http/http.ts";
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
export function openObjects(index: string, http: HttpSourceOptions, _s3: unknown): Promise<Objects> {
  return new Promise((resolve) => resolve(fetchObjects(index, http)));
}

function fetchObjects(index: string, o: HttpSourceOptions): Objects {
  if (index.startsWith("s3://")) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot open wds:${index.replace(/\?.*$/, "")} in a browser: s3:// shards are not readable from a page yet (issue 39); serve them over https:// (a public or presigned bucket URL) and read wds:https://…`);
  }
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
    index: async () => {
      const chunks: Uint8Array[] = [];
      let n = 0;
      for await (const c of await get(url.href, shownOf(url), headers, 0)) {
        n += c.length;
        if (n > maxIndex) throw storeError("ERR_TOO_LARGE", `Cannot read shard index ${shownOf(url)} as more than ${maxIndex} bytes arrived, over the limit (maxLabelsBytes)`, false);
        chunks.push(c);
      }
      const out = new Uint8Array(n);
      let at = 0;
      for (const c of chunks) out.set(c, at), at += c.length;
      return out;
    },
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
async function get(url: string, shown: string, auth: Record<string, string>, start: number, signal?: AbortSignal, end?: number): Promise<AsyncIterable<Uint8Array>> {
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
      `Cannot get ${shown}${from}: ${describe(e)}: the server is unreachable, or it does not answer this page's origin (${pageOrigin()}) with CORS headers (Access-Control-Allow-Origin, and Range in Access-Control-Allow-Headers)`,
      true,
      { cause: e },
    );
  }
  const status = res.status;
  if (res.body && (status === 206 || (status === 200 && start === 0 && end === undefined))) return chunks(res.body);
  if (res.body && status === 200) return skipped(chunks(res.body), start, end);
  await res.body?.cancel().catch(() => {});
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

