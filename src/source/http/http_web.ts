/**
 * The HTTP source in a web page: http_source.ts's logic (its limits, redirects, named errors)
 * over the page's `fetch` in place of undici. Each GET is one fetch whose response the same
 * handler (`Get`) reads chunk by chunk, so a body over `maxSampleBytes` (an endless one among
 * them) is cut off as it arrives, not buffered. The browser keeps its own connections (six
 * per origin over HTTP/1.1; many streams over HTTP/2): `connections` and `pipelining` only
 * size `maxInFlight` here.
 *
 * What a page cannot do as undici does, and how it is met:
 * - see why a request failed: `fetch` says "Failed to fetch" for a refused connection and for
 *   an answer the browser withheld as it lacked CORS headers alike, so the error names both
 *   (ERR_STORE_UNREACHABLE, retryable as a network failure is). A server that sends CORS
 *   headers on its objects but not on its errors (versitygw 1.8 on a refused signature) looks
 *   the same: its named error (ERR_STORE_AUTH under Node) cannot reach the page;
 * - follow redirects by hand: the browser follows them (at most 20); one that ends on another
 *   origin is ERR_REDIRECT, as in http_source.ts;
 * - trust a CA of its own (`ca`): ERR_UNSUPPORTED, as a page trusts the browser's;
 * - read a compressed body's length: the browser hands the bytes decoded, so Content-Length
 *   is not held against them where the answer shows a Content-Encoding (a cross-origin one
 *   shows it only when the server exposes it: Access-Control-Expose-Headers).
 */
import { CassetteError } from "../../errors.ts";
import { storeError } from "../retryable.ts";
import {
  type Controller, describe, type Get, type HttpSource, type HttpSourceOptions, type HttpTarget, type MakeTransport,
  openHttpSourceVia, openHttpTargetVia,
} from "./http_source.ts";

function pageOrigin(): string | undefined {
  return (globalThis as { location?: { origin: string } }).location?.origin;
}

/** A fetch that failed without an answer: the network, or the browser's CORS check. */
export function unreachable(url: string, e: unknown): CassetteError {
  return storeError(
    "ERR_STORE_UNREACHABLE",
    `Cannot get ${url}: ${describe(e)}: the server is unreachable, or it does not answer this page's origin (${pageOrigin()}) with CORS headers (Access-Control-Allow-Origin, and its request headers in Access-Control-Allow-Headers), ` +
      "or it left them off an error answer, which the page then cannot read either (versitygw does on a refused signature: check the credentials)",
    true,
    { cause: e },
  );
}

const fetchTransport: MakeTransport = (target, o) => {
  if (o.ca) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot open ${target.shown} with a CA of its own (ca) in a browser: a page trusts the certificate authorities the browser trusts`);
  }
  const open = new Set<AbortController>();
  let closed = false;
  return {
    // A request signed after the source closed (WebCrypto signs asynchronously) is not sent.
    send: (path, headers, get) => closed ? get.onResponseError(null, new Error(`the source at ${target.shown} was closed`)) : void exchange(target, path, headers, get, o.timeoutMs, open),
    get closed() {
      return closed;
    },
    close: () => {
      closed = true;
      return Promise.resolve();
    },
    destroy: () => {
      closed = true;
      for (const ac of open) ac.abort(new Error(`the source at ${target.shown} was closed`));
      return Promise.resolve();
    },
  };
};

/**
 * One GET through `fetch`, answered through `get` as undici's dispatch would answer it. The
 * timeout runs until the headers, then between chunks, as undici's headersTimeout and
 * bodyTimeout do.
 */
async function exchange(target: HttpTarget, path: string, headers: Record<string, string> | undefined, get: Get, timeoutMs: number, open: Set<AbortController>): Promise<void> {
  const ac = new AbortController();
  const controller: Controller = { abort: (reason) => ac.abort(reason) };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (what: string) => {
    clearTimeout(timer);
    timer = setTimeout(() => ac.abort(storeError("ERR_STORE_UNREACHABLE", `Cannot get ${get.url}: no ${what} came within ${timeoutMs} ms (timeoutMs)`, true)), timeoutMs);
  };
  open.add(ac);
  try {
    get.onRequestStart(controller);
    if (ac.signal.aborted) return;
    arm("answer");
    let res: Response;
    try {
      res = await fetch(target.origin + path, { ...(headers ? { headers } : {}), signal: ac.signal });
    } catch (e) {
      return get.onResponseError(controller, ac.signal.aborted ? ac.signal.reason as Error : unreachable(get.url, e));
    }
    if (res.redirected && new URL(res.url).origin !== target.origin) {
      await res.body?.cancel().catch(() => {});
      return get.onResponseError(controller, storeError("ERR_REDIRECT", `Cannot get ${get.what} from ${get.url} as it redirects to ${new URL(res.url).origin}, another origin: only redirects within ${target.origin} are followed`, false));
    }
    const seen: Record<string, string> = {};
    res.headers.forEach((v, k) => (seen[k] = v));
    if (seen["content-encoding"] && seen["content-encoding"] !== "identity") delete seen["content-length"];
    get.onResponseStart(controller, res.status, seen, res.statusText);
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        arm("bytes");
        const r = await reader.read();
        if (r.done) break;
        get.onResponseData(controller, r.value);
      }
    }
    get.onResponseEnd();
  } catch (e) {
    get.onResponseError(controller, ac.signal.aborted ? ac.signal.reason as Error : e as Error);
  } finally {
    clearTimeout(timer);
    open.delete(ac);
  }
}

/** Opens the store at `url` (http(s)://HOST/PREFIX): labels.json fetched once. */
export function openHttpSource(url: string, o: HttpSourceOptions = {}): Promise<HttpSource> {
  return openHttpSourceVia(fetchTransport, url, o);
}

/** Opens an object store at `target` (an S3 bucket's, s3_web.ts) over `fetch`. */
export function openHttpTarget(target: HttpTarget, opts: HttpSourceOptions): Promise<HttpSource> {
  return openHttpTargetVia(fetchTransport, target, opts);
}
