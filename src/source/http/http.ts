/**
 * An HTTP(S) object store as a Source, its requests carried by undici (Bun, Deno, Node): the
 * source's logic, answers and limits are http_source.ts's, shared with a page's source over
 * `fetch` (http_web.ts); this file is the transport, and the streams of a shard set.
 *
 * One undici Pool to the origin: `connections` keep-alive connections, each with up to
 * `pipelining` requests on the wire (sent non-blocking, so they really are pipelined).
 * Requests past what the pool can send wait in its queue; `fetch` answers false once
 * `maxInFlight` are in flight, so the pool's own busy signal is not needed. Each connection is
 * an undici Client made by the pool's `factory`; tagging them there tells which connection
 * served a sample (`conn`: "HOST:PORT#N") for one property write per request.
 *
 * Answers, limits against a hostile server, and URL options: http_source.ts.
 *
 * @example
 * ```ts
 * import { openHttpSource } from "./http.ts";
 * try {
 *   await openHttpSource("http://127.0.0.1:9/no-server", { connections: 1 });
 * } catch (e) {
 *   console.log((e as { code: string }).code); // ERR_STORE_UNREACHABLE
 * }
 * ```
 */
// Bun answers a bare "undici" with its own stub, whose Pool cannot close
// (oven-sh/bun#12773, #19748): the file path reaches the installed package in every runtime.
import undici from "undici/index.js";
import { skipped } from "../../util/byte_range.ts";
import { readBoundedBody } from "../../util/bounded_body.ts";
import { retryableStatus, storeError } from "../retryable.ts";
import {
  describe, ERROR_BODY_BYTES, type Get, type HttpSource, type HttpSourceOptions, type HttpTarget, type Link, type MakeTransport,
  openHttpSourceVia, openHttpTargetVia, positive, readCa, retryAfter, untrusted, untrustedError,
} from "./http_source.ts";

export { HttpSource, parseHttpParams, parseHttpUrl, readCa, retryAfter } from "./http_source.ts";
export type { ErrorAnswer, HttpSourceOptions, HttpTarget } from "./http_source.ts";

const { Client, Pool } = undici;
type UndiciClient = InstanceType<typeof Client>;
type UndiciPool = InstanceType<typeof Pool>;

/** Per request: the Client the pool chose sets `conn` and `link` here when it takes the request. */
const kRequest = Symbol("cassette.request");

interface Options {
  path: string;
  method: "GET";
  blocking: false;
  headers?: Record<string, string>;
  [kRequest]: Get;
}

/**
 * One undici Pool to the origin: `connections` keep-alive connections, each with up to
 * `pipelining` requests on the wire (sent non-blocking, so they really are pipelined).
 * Requests past what the pool can send wait in its queue; the source's `fetch` answers false
 * once `maxInFlight` are in flight, so the pool's own busy signal is not needed. Each
 * connection is an undici Client made by the pool's `factory`; tagging them there tells which
 * connection served a sample (`conn`: "HOST:PORT#N") for one property write per request.
 */
const undiciTransport: MakeTransport = (target, o) => {
  const host = new URL(target.origin).host;
  let made = 0;
  const connect = { ...(o.ca ? { ca: o.ca } : {}), ...(target.servername ? { servername: target.servername } : {}) };
  const pool = new Pool(target.origin, {
    connections: o.connections,
    pipelining: o.pipelining,
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
    ...(Object.keys(connect).length ? { connect } : {}),
    factory: (origin: string | URL, opts: object) => new TaggedClient(origin, opts as never, `${host}#${++made}`),
  });
  return {
    // blocking: false, or undici sends the next request on a connection only once this one's
    // headers are back (its default for GET), and pipelining buys nothing over a long RTT.
    send: (path, headers, get) => {
      const opts: Options = { path, method: "GET", blocking: false, [kRequest]: get, ...(headers ? { headers } : {}) };
      pool.dispatch(opts, get as never);
    },
    get closed() {
      return pool.closed || pool.destroyed;
    },
    close: () => pool.close(),
    destroy: () => pool.destroy(),
  };
};

/** Opens the store at `url`: checks the address and its options, fetches labels.json once. */
export function openHttpSource(url: string, o: HttpSourceOptions = {}): Promise<HttpSource> {
  return openHttpSourceVia(undiciTransport, url, o);
}

/** Opens an object store at `target` with `opts` (its CA from `caFile` when no `ca` is given); fetches labels.json once. */
export function openHttpTarget(target: HttpTarget, opts: HttpSourceOptions, caFile?: string): Promise<HttpSource> {
  return openHttpTargetVia(undiciTransport, target, opts, caFile);
}

/**
 * A pool for objects read as streams (a WebDataset source's shards): `target`'s origin, CA and
 * TLS name, with the source's timeouts and no pipelining (a request queued behind a paused body
 * would wait for it).
 */
export async function streamPool(target: HttpTarget, opts: HttpSourceOptions, caFile?: string): Promise<UndiciPool> {
  const connections = positive(opts.connections ?? 8, "connections", target.shown);
  const timeout = positive(opts.timeoutMs ?? 30_000, "timeoutMs", target.shown);
  const cas = await readCa(opts.ca, caFile, target.shown);
  const connect = { ...(cas ? { ca: cas } : {}), ...(target.servername ? { servername: target.servername } : {}) };
  return new Pool(target.origin, { connections, pipelining: 1, headersTimeout: timeout, bodyTimeout: timeout, ...(Object.keys(connect).length ? { connect } : {}) });
}

/**
 * Object `path` (as sent, under `target`'s origin) from byte `start` on, to byte `end`
 * (inclusive) when given: one GET, with `Range: bytes=START-[END]` past 0 or with an end, and
 * `target`'s headers (signed afresh), for objects read as a
 * stream rather than whole into one buffer. Resolves once a 2xx has arrived, with its body's
 * chunks; a server that ignores the Range (200) has the bytes before `start` skipped. Other
 * answers are named as a sample's are (the target's `explain`, 404/410 ERR_STORE, 5xx
 * retryable); a failure mid-body surfaces from the iteration, for the caller to name with its
 * offset. `shown` is the object's URL for messages.
 */
export async function streamObject(pool: UndiciPool, target: HttpTarget, path: string, shown: string, start: number, signal?: AbortSignal, end?: number): Promise<AsyncIterable<Uint8Array>> {
  const headers: Record<string, string> = { ...(await target.headers?.("GET", path)) };
  if (start > 0 || end !== undefined) headers.range = `bytes=${start}-${end ?? ""}`;
  let res: Awaited<ReturnType<UndiciPool["request"]>>;
  try {
    res = await pool.request({ path, method: "GET", headers, ...(signal ? { signal } : {}) });
  } catch (e) {
    if (untrusted(e)) throw untrustedError(`Cannot get ${shown}`, e);
    throw storeError("ERR_STORE_UNREACHABLE", `Cannot get ${shown}${start > 0 ? ` from byte ${start}` : ""}: ${describe(e)}`, true, { cause: e });
  }
  const status = res.statusCode;
  if (status === 206 || (status === 200 && start === 0 && end === undefined)) return res.body as AsyncIterable<Uint8Array>;
  if (status === 200) return skipped(res.body as AsyncIterable<Uint8Array>, start, end);
  const body = await readBoundedBody(res.body, -1, 1 << 16, () => new Error("an error page over 64 KiB")).catch(() => new Uint8Array(0));
  const named = target.explain?.({ status, headers: res.headers as Record<string, string | string[]>, body: body.subarray(0, ERROR_BODY_BYTES), url: shown });
  if (named) throw named;
  if (status === 404 || status === 410) throw storeError("ERR_STORE", `Cannot find ${shown}: it answered HTTP ${status}`, false);
  const again = retryableStatus(status);
  const e = storeError(again ? "ERR_STORE_UNREACHABLE" : "ERR_STORE", `Cannot get ${shown}${start > 0 ? ` from byte ${start}` : ""}: it answered HTTP ${status}`, again);
  const after = retryAfter(res.headers["retry-after"]);
  if (again && after !== undefined) e.retryAfterMs = after;
  throw e;
}

type Connect = (opts: object, cb: (err: Error | null, socket: Link["socket"] | null) => void) => void;

/**
 * A pool connection that writes its name into each request it takes, and keeps its socket:
 * the pool's connector (with the CA, if one was given) is wrapped to see each socket it opens.
 */
class TaggedClient extends Client {
  readonly #tag: string;
  readonly #link: Link;
  constructor(origin: string | URL, opts: ConstructorParameters<typeof Client>[1] & { connect: Connect }, tag: string) {
    const link: Link = {};
    const connect: Connect = (o, cb) => opts.connect(o, (err, socket) => (link.socket = socket ?? undefined, cb(err, socket)));
    super(origin, { ...opts, connect: connect as never });
    this.#tag = tag;
    this.#link = link;
  }
  override dispatch(opts: Parameters<UndiciClient["dispatch"]>[0], handler: Parameters<UndiciClient["dispatch"]>[1]): boolean {
    const r = (opts as unknown as Partial<Options>)[kRequest];
    if (r) r.conn = this.#tag, r.link = this.#link;
    return super.dispatch(opts, handler);
  }
}

