/**
 * The HTTP source's logic, whatever carries its requests: `http(s)://HOST/PREFIX` serves each
 * sample at PREFIX/<id> and the labels at PREFIX/labels.json (the layout in file.ts, written by
 * `cassette export`; any static web server can serve it). labels.json is fetched once at open;
 * each sample is then one GET, its label taken from that table. A `Transport` sends the GETs:
 * undici's pool under Bun, Deno and Node (http.ts), the page's `fetch` in a browser
 * (http_web.ts); both hand the answer to the same handler (`Get`), so the limits, redirects and
 * named errors below are the same in both.
 *
 * Answers: 2xx is the sample; 404/410 is "Cannot find sample <id>" (ERR_STORE, not
 * retryable); 5xx, 408, 429 and network failures or timeouts are ERR_STORE_UNREACHABLE,
 * retryable; any other status (403, 401, 400, a 3xx not followed) is ERR_STORE, not
 * retryable: asking again gets the same answer. Every error carries that `retryable` flag
 * (retryable.ts) and names the id's URL, and the status if any.
 *
 * Against a hostile or broken server, none of these is retried:
 * - ERR_TOO_LARGE: a sample over `maxSampleBytes` (labels.json over `maxLabelsBytes`; both
 *   64 MiB by default), seen in Content-Length before any buffer is made, or as the bytes of
 *   a body without one arrive (an endless body among them); the request is dropped. The
 *   source remembers such ids and answers them without asking again: with a hedge, one is
 *   asked for at most twice.
 * - ERR_BAD_RESPONSE: more bytes than Content-Length announced (see Get.onResponseEnd). A body
 *   cut short is a failed connection (ERR_STORE_UNREACHABLE, retried): never handed on.
 * - ERR_REDIRECT: redirects (301, 302, 303, 307, 308) are followed within the store's origin
 *   only, at most `maxRedirects` (3) per request.
 * - ERR_INSECURE_AUTH, at open: credentials in an http:// URL, unless allowed.
 * - ERR_TLS_UNTRUSTED: an https:// certificate that no CA trusted signs (`ca` adds one).
 *
 * URL options (query string, removed from the prefix): `connections`, `pipelining`,
 * `inflight`, `maxsample`, `maxlabels` (bytes, or 64MiB), `redirects`, `insecureauth=1`,
 * `ca=PATH` (parseHttpUrl); credentials in the URL are sent as HTTP Basic authorization.
 */
import { runtime } from "../../../runtime-adapters/index.ts";
import { CassetteError } from "../../errors.ts";
import { checkDataset, LABELS_FILE, parseLabels } from "../files/layout.ts";
import { type Retryable, retryableStatus, storeError } from "../retryable.ts";
import { caWouldHelp, UNTRUSTED_CERT_CODES } from "../tls_trust.ts";
import { Capacity, type FetchCallback, type Fetched, type Source } from "../source.ts";

const MiB = 1 << 20;

/** How an `http(s)://` source reads an export from a web server: connections, pipelining, timeouts, size limits, redirects, credentials and CA. */
export interface HttpSourceOptions {
  /** The dataset expected in labels.json (default: whatever it names). */
  dataset?: string;
  /** Keep-alive connections to the server (default 8). */
  connections?: number;
  /** Requests on the wire per connection (HTTP/1.1 pipelining; default 4, 1 turns it off). */
  pipelining?: number;
  /** Requests in flight before `fetch` answers false (default connections × pipelining × 4). */
  maxInFlight?: number;
  /** Milliseconds to wait for a response's headers, and between body chunks (default 30 000). */
  timeoutMs?: number;
  /**
   * The largest sample, in bytes (default 64 MiB). A larger one is ERR_TOO_LARGE, not
   * retried: checked against Content-Length before any buffer is made, and against the bytes
   * as they arrive.
   */
  maxSampleBytes?: number;
  /** The largest labels.json, in bytes (default 64 MiB), checked as `maxSampleBytes` is. */
  maxLabelsBytes?: number;
  /** Redirects followed per request, within the store's origin only (default 3; 0 follows none). */
  maxRedirects?: number;
  /**
   * Send credentials given in an `http://` URL (default false: refused at open, as Basic
   * authorization puts the password on the wire readable by anyone on the path).
   */
  allowInsecureAuth?: boolean;
  /** CA certificates (PEM) to trust for `https://`, in place of the runtime's built-in list. */
  ca?: string | Uint8Array | Array<string | Uint8Array>;
}

/** A connection's current socket, kept by its Client (see Get.onResponseEnd for why). */
export interface Link {
  socket?: { destroyed: boolean; errored?: unknown };
  /** The last response that ended on it. */
  last?: Get;
}

/** A request's controller (undici's, or the fetch transport's), as far as a handler uses it. */
export interface Controller {
  abort(reason: Error): void;
}

/** How much of an error answer's body is kept. */
export const ERROR_BODY_BYTES = 4096;

/** Redirects that say "the same GET, elsewhere" (RFC 9110 §15.4). */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * One GET, answered once through `cb`: the status and, for a 2xx, the body. A handler in
 * undici's dispatch API: no stream per response, and the body lands in one buffer sized by
 * content-length once that is checked against the limit; without one, chunks are kept up to
 * the limit. A body over the limit aborts the request (undici closes that connection).
 */
export class Get {
  /** Set by the connection that takes the request. */
  conn?: string;
  link?: Link;
  /** An error answer's Retry-After, in ms from now (RFC 9110 §10.2.3). */
  retryAfterMs?: number;
  /** A redirect's Location. */
  location?: string;
  status = 0;
  statusText = "";
  body: Uint8Array = new Uint8Array(0);
  /** An error answer's headers and first ERROR_BODY_BYTES of body (S3 names its errors in XML there). */
  errorHeaders: Record<string, string | string[]> = {};
  errorBody: Uint8Array = new Uint8Array(0);
  /** The body's bytes so far, and what Content-Length announced (-1: none). */
  received = 0;
  announced = -1;
  /** True while undici's dispatch() runs: errors it reports synchronously are deferred. */
  dispatching = false;
  #buf: Uint8Array | null = null;
  #chunks: Uint8Array[] = [];
  #answered = false;
  #controller?: Controller;
  /** "sample ID" or "labels.json", and where it is asked (no credentials), for messages. */
  readonly what: string;
  readonly url: string;
  /** The most bytes kept, and the option that sets it (for the error). */
  readonly limit: number;
  readonly limitName: string;
  readonly #cb: (err: Error | null, get: Get) => void;

  constructor(what: string, url: string, limit: number, limitName: string, cb: (err: Error | null, get: Get) => void) {
    this.what = what;
    this.url = url;
    this.limit = limit;
    this.limitName = limitName;
    this.#cb = cb;
  }

  // Called again when undici re-sends a request that was behind a failed pipeline head.
  onRequestStart(c: Controller): void {
    this.#controller = c;
    if (this.#answered) return c.abort(new Error("cancelled")); // cancel()ed before it was sent
    this.status = 0;
    this.received = 0;
    this.announced = -1;
    this.#buf = null;
    this.#chunks = [];
  }
  onResponseStart(c: Controller, status: number, headers: Record<string, string | string[]>, statusText?: string): void {
    if (status < 200) return; // 1xx informational: the real answer follows
    this.status = status;
    this.statusText = statusText ?? "";
    if (status >= 300) {
      this.errorHeaders = headers;
      this.retryAfterMs = retryAfter(headers["retry-after"]);
      const loc = headers["location"];
      if (typeof loc === "string") this.location = loc;
      return;
    }
    const cl = headers["content-length"];
    const len = typeof cl === "string" && /^\d+$/.test(cl.trim()) ? Number(cl) : NaN;
    if (!Number.isSafeInteger(len)) return;
    // Checked before the buffer is made: a hostile length must not allocate.
    if (len > this.limit) return this.#refuse(c, this.#tooLarge(`its Content-Length announces ${len} bytes`));
    this.announced = len;
    this.#buf = new Uint8Array(len);
  }
  onResponseData(c: Controller, chunk: Uint8Array): void {
    if (this.#answered) return;
    if (this.status >= 300) { // an error page: only its start is kept, to name the error
      const room = ERROR_BODY_BYTES - this.errorBody.length;
      if (room > 0) this.errorBody = joined([this.errorBody, chunk.slice(0, room)], this.errorBody.length + Math.min(room, chunk.length));
      return;
    }
    const n = this.received + chunk.length;
    // undici frames the body by Content-Length, so this is a second line of defence.
    if (this.announced >= 0 && n > this.announced) return this.#refuse(c, this.#overrun());
    if (n > this.limit) return this.#refuse(c, this.#tooLarge(`more than ${this.limit} bytes arrived${this.announced < 0 ? " with no Content-Length" : ""}`));
    // Copy: undici's chunks are views of the socket's read buffer, shared with the next
    // pipelined responses, and consumers may transfer (detach) a sample's buffer.
    if (this.#buf) this.#buf.set(chunk, this.received);
    else this.#chunks.push(chunk.slice());
    this.received = n;
  }
  onResponseEnd(): void {
    if (this.#answered) return;
    if (this.status < 200 || this.status >= 300) return this.#answer(null);
    if (this.#buf) {
      // undici fails a body shorter than Content-Length before this; never hand on a short one.
      if (this.received !== this.announced) {
        return this.#answer(storeError("ERR_BAD_RESPONSE", `Cannot get ${this.what} from ${this.url} as the server ended its answer after ${this.received} of the ${this.announced} bytes its Content-Length announced`, false));
      }
      this.body = this.#buf;
    } else this.body = joined(this.#chunks, this.received);
    this.#buf = null;
    this.#chunks = [];
    // A server that sends more than it announced: undici ends this response at Content-Length
    // and fails the connection on the extra bytes, in the same read (so before a microtask
    // runs) when they came with the body's end. Wait that long, and refuse the body if the
    // connection broke that way: the bytes were not what the server meant to send. Other
    // breaks (a close undici asked for, a failed write of the next request) leave it alone,
    // as do answers that ended before this one in the same read (pipelining).
    const link = this.link;
    const socket = link?.socket;
    if (link) link.last = this;
    queueMicrotask(() => {
      const e = socket?.destroyed && link?.last === this ? socket.errored : undefined;
      this.#answer(notAResponse(e) ? this.#overrun(e) : null);
    });
  }
  onResponseError(_c: unknown, err: Error): void {
    if (this.#answered) return;
    if (this.dispatching) queueMicrotask(() => this.#answer(err));
    else this.#answer(err);
  }

  /** Answers `err` now and drops the request: unsent, it never will be; sent, its connection closes. */
  cancel(err: Error): void {
    if (this.#answered) return;
    this.#answer(err);
    this.#controller?.abort(err);
  }

  #answer(err: Error | null): void {
    if (this.#answered) return;
    this.#answered = true;
    this.#cb(err, this);
  }
  /** Fails this request with `err` (ours, named and not retryable) and drops the connection. */
  #refuse(c: Controller, err: CassetteError): void {
    this.#answer(err);
    this.#buf = null;
    this.#chunks = [];
    c.abort(err);
  }
  #tooLarge(why: string): CassetteError & Retryable {
    return storeError("ERR_TOO_LARGE", `Cannot get ${this.what} from ${this.url} as it is over the ${bytes(this.limit)} limit (${this.limitName}): ${why}`, false);
  }
  #overrun(cause?: unknown): CassetteError & Retryable {
    const framing = this.announced >= 0 ? `the ${this.announced} bytes its Content-Length announced` : "the end of its body";
    return storeError("ERR_BAD_RESPONSE", `Cannot get ${this.what} from ${this.url} as the server sent bytes past ${framing}: its answer cannot be trusted${cause ? ` (${describe(cause)})` : ""}`, false, { cause });
  }
}

/**
 * Whether a connection failed on bytes that are no HTTP response: undici's "bad response"
 * (bytes when no request is waiting) or a parser error (they were read as the next answer).
 */
function notAResponse(e: unknown): boolean {
  const err = e as { name?: unknown; code?: unknown; message?: unknown } | null | undefined;
  return err?.name === "HTTPParserError" || (err?.code === "UND_ERR_SOCKET" && err.message === "bad response");
}

/** Chunks joined into one buffer of `length` bytes. */
function joined(chunks: Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) out.set(c, at), (at += c.length);
  return out;
}

/**
 * Where an object store is and how each of its requests is made. An http(s):// address makes
 * one (openHttpSource); S3 makes another, with a signature per request and its errors named
 * from their XML (s3.ts): the same pool, limits and answers serve both.
 */
export interface HttpTarget {
  /** Where connections go, e.g. "http://127.0.0.1:7070". */
  origin: string;
  /** The path before each object's name: "" or "/a/b", as sent (already URI-encoded). */
  prefix: string;
  /** The store as messages name it, without credentials or options; objects are `shown/NAME`. */
  shown: string;
  /** Headers for one request, made as it is sent: each retry and hedge signs afresh (a page signs asynchronously). */
  headers?: (method: "GET", path: string) => Record<string, string> | Promise<Record<string, string>>;
  /** A query string for one request, made as it is sent (a presigned request's signature; without the "?"). */
  query?: (method: "GET", path: string) => string | Promise<string>;
  /** A named error for an error answer the store explains (S3's XML body), or undefined for the usual reading. */
  explain?: (answer: ErrorAnswer) => (CassetteError & Retryable) | undefined;
  /** TLS server name, when the certificate names another host than the origin (S3's virtual-hosted style). */
  servername?: string;
}

/** An answer that is not 2xx, as `HttpTarget.explain` sees it. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  /** The first 4 KiB of its body. */
  body: Uint8Array;
  /** The object asked for, as messages show it. */
  url: string;
}


/** How the connections are made, from the options (a transport keeps what it can use of them). */
export interface TransportOptions {
  connections: number;
  pipelining: number;
  timeoutMs: number;
  /** CA certificates (PEM), when given. */
  ca?: string[];
}

/**
 * What carries a source's GETs: each `send` answers through `get`'s handler methods
 * (onRequestStart, onResponseStart, onResponseData, onResponseEnd, onResponseError), as
 * undici's dispatch API calls them, and hands `get` a Controller whose `abort` drops the
 * request (a body over the limit). `close` waits for nothing in flight; `destroy` aborts it.
 */
export interface Transport {
  send(path: string, headers: Record<string, string> | undefined, get: Get): void;
  readonly closed: boolean;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

/** Makes the transport to `target`'s origin. */
export type MakeTransport = (target: HttpTarget, o: TransportOptions) => Transport;

/** Opens the store at `url`: checks the address and its options, fetches labels.json once. */
export async function openHttpSourceVia(transport: MakeTransport, url: string, o: HttpSourceOptions = {}): Promise<HttpSource> {
  const { origin, prefix, auth, params, caFile, shown } = parseHttpUrl(url);
  const opts: HttpSourceOptions = { ...params, ...o };
  if (auth && origin.startsWith("http:") && !opts.allowInsecureAuth) {
    throw new CassetteError(
      "ERR_INSECURE_AUTH",
      `Cannot open ${shown} with the credentials in its URL as plain http:// would send the password readable to anyone on the path: use https://, or allow it with insecureauth=1 in the address (or the option allowInsecureAuth: true)`,
    );
  }
  const basic = auth ? { authorization: `Basic ${auth}` } : undefined;
  return openHttpTargetVia(transport, { origin, prefix, shown, ...(basic ? { headers: () => basic } : {}) }, opts, caFile);
}

/** Opens an object store at `target` with `opts` (its CA from `caFile` when no `ca` is given); fetches labels.json once. */
export async function openHttpTargetVia(transport: MakeTransport, target: HttpTarget, opts: HttpSourceOptions, caFile?: string): Promise<HttpSource> {
  const { shown } = target;
  const connections = positive(opts.connections ?? 8, "connections", shown);
  const pipelining = positive(opts.pipelining ?? 4, "pipelining", shown);
  const maxInFlight = positive(opts.maxInFlight ?? connections * pipelining * 4, "maxInFlight", shown);
  const timeout = positive(opts.timeoutMs ?? 30_000, "timeoutMs", shown);
  const limits = {
    sample: positive(opts.maxSampleBytes ?? 64 * MiB, "maxSampleBytes", shown),
    labels: positive(opts.maxLabelsBytes ?? 64 * MiB, "maxLabelsBytes", shown),
    redirects: opts.maxRedirects ?? 3,
  };
  if (!Number.isInteger(limits.redirects) || limits.redirects < 0) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot open ${shown} as 'maxRedirects' must be an integer ≥ 0: current value is ${limits.redirects}`);
  }
  const cas = await readCa(opts.ca, caFile, shown);
  const pool = transport(target, { connections, pipelining, timeoutMs: timeout, ...(cas ? { ca: cas } : {}) });
  const source = new HttpSource(pool, target, maxInFlight, limits);
  try {
    await source.loadLabels(opts.dataset);
  } catch (e) {
    await pool.destroy().catch(() => {});
    throw e;
  }
  return source;
}

/** CA certificates as PEM strings (every runtime's tls.connect takes them), from `ca` or the file `caFile`. */
export async function readCa(ca: HttpSourceOptions["ca"], caFile: string | undefined, shown: string): Promise<string[] | undefined> {
  if (ca === undefined && caFile !== undefined) {
    try {
      ca = await runtime.readFile(caFile);
    } catch (e) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot open ${shown} as its CA file '${caFile}' (ca=) cannot be read: ${describe(e)}`, { cause: e });
    }
  }
  return ca === undefined ? undefined : (Array.isArray(ca) ? ca : [ca]).map((c) => (typeof c === "string" ? c : new TextDecoder().decode(c)));
}

interface Limits {
  sample: number;
  labels: number;
  redirects: number;
}

export class HttpSource implements Source {
  /** e.g. "http://127.0.0.1:8080/data (fashion-mnist)". */
  name: string;
  dataset = "";
  readonly #pool: Transport;
  readonly #url: string;
  readonly #origin: string;
  readonly #prefix: string;
  readonly #target: HttpTarget;
  readonly #cap: Capacity;
  readonly #limits: Limits;
  #labels: ReadonlyMap<string, number> = new Map();
  /**
   * Samples found over maxSampleBytes, with why: answered from here, not asked again. With
   * the hedge's one extra request, a sample over the limit is asked for at most twice.
   */
  readonly #tooLarge = new Map<string, string>();
  /**
   * Sample requests in flight, by id: the same id asked twice at once (a hedge) and found over
   * the limit is cancelled with the first, or undici would send it again on a new connection
   * when it was pipelined behind the one dropped.
   */
  readonly #asked = new Map<string, Array<{ get?: Get }>>();

  constructor(pool: Transport, target: HttpTarget, maxInFlight: number, limits: Limits) {
    this.#pool = pool;
    this.#url = target.shown;
    this.#origin = target.origin;
    this.#prefix = target.prefix;
    this.#target = target;
    this.#cap = new Capacity(maxInFlight);
    this.#limits = limits;
    this.name = target.shown;
  }

  /** @internal Fetches PREFIX/labels.json; checks it names `dataset` when given. */
  async loadLabels(dataset?: string): Promise<void> {
    const where = `${this.#url}/${LABELS_FILE}`;
    const get = await new Promise<Get>((resolve, reject) => {
      this.#get(LABELS_FILE, LABELS_FILE, this.#limits.labels, "maxLabelsBytes", (err, get) => (err ? reject(err) : resolve(get)));
    }).catch((e) => {
      if (e instanceof CassetteError) throw e; // ours: a limit, a redirect, a lying server
      if (untrusted(e)) throw untrustedError(`Cannot open ${this.#url}`, e);
      throw new CassetteError("ERR_STORE_UNREACHABLE", `Cannot open ${this.#url} as ${where} cannot be fetched: ${describe(e)}`, { cause: e });
    });
    const { status, statusText, body } = get;
    const named = status >= 300 ? this.#explain(get) : undefined;
    if (named) throw named;
    if (status === 404 || status === 410) {
      throw new CassetteError("ERR_STORE", `Cannot open ${this.#url} as ${get.url} answered HTTP ${status}: serve a folder written by cassette export (an interrupted export has no labels.json yet)`);
    }
    if (status < 200 || status >= 300) {
      throw new CassetteError(status >= 500 ? "ERR_STORE_UNREACHABLE" : "ERR_STORE", `Cannot open ${this.#url} as ${get.url} answered HTTP ${status} ${statusText}`.trimEnd());
    }
    const parsed = parseLabels(new TextDecoder().decode(body), where);
    checkDataset(parsed.dataset, dataset, this.#url);
    this.dataset = parsed.dataset;
    this.#labels = parsed.labels;
    this.name = `${this.#url} (${parsed.dataset})`;
  }

  /** The sample ids labels.json lists. */
  ids(): string[] {
    return [...this.#labels.keys()];
  }

  fetch(id: string, done: FetchCallback): boolean {
    const more = this.#cap.take();
    const label = this.#labels.get(id);
    const known = this.#tooLarge.get(id);
    if (label === undefined || known !== undefined) {
      // Not exported: no request can find it (and ids outside the table are not object names).
      // Over the limit: it was, and asking again would download it again.
      queueMicrotask(() => {
        this.#cap.release();
        if (known !== undefined) return done(storeError("ERR_TOO_LARGE", `${known} (found before: not asked again)`, false));
        done(storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.dataset}' at ${this.#url}: it is not in ${LABELS_FILE}`, false));
      });
      return more;
    }
    const asked = { get: undefined as Get | undefined };
    const twins = this.#asked.get(id);
    if (twins) twins.push(asked);
    else this.#asked.set(id, [asked]);
    this.#get(id, `sample ${id}`, this.#limits.sample, "maxSampleBytes", (err, get) => {
      this.#cap.release();
      const all = this.#asked.get(id)!;
      all.splice(all.indexOf(asked), 1);
      if (all.length === 0) this.#asked.delete(id);
      const url = get.url;
      if (err) {
        if (err instanceof CassetteError) {
          // Ours, named and flagged: a limit, a redirect, a lying server.
          if (err.code === "ERR_TOO_LARGE") {
            this.#tooLarge.set(id, err.message);
            for (const twin of all.slice()) twin.get?.cancel(err);
          }
          return done(err);
        }
        if (untrusted(err)) return done(untrustedError(`Cannot get ${url}`, err));
        return done(storeError("ERR_STORE_UNREACHABLE", `Cannot get ${url}: ${describeFailure(err, get)}`, true, { cause: err }));
      }
      const { status, statusText, body } = get;
      if (status >= 200 && status < 300) {
        const s: Fetched = { id, label, data: body };
        if (get.conn) s.conn = get.conn;
        return done(null, s);
      }
      const named = this.#explain(get);
      if (named) return done(named);
      const answer = `HTTP ${status}${statusText ? ` ${statusText}` : ""}`;
      if (status === 404 || status === 410) {
        return done(storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.dataset}': ${url} answered ${answer}`, false));
      }
      const again = retryableStatus(status);
      const e = storeError(again ? "ERR_STORE_UNREACHABLE" : "ERR_STORE", `Cannot get ${url}: it answered ${answer}`, again);
      if (again && get.retryAfterMs !== undefined) e.retryAfterMs = get.retryAfterMs;
      done(e);
    }, asked);
    return more;
  }

  /**
   * GETs PREFIX/`name`, following redirects within the origin, at most `limits.redirects` of
   * them; answers with the last request (its status, body, connection and URL). `asked.get`
   * is the request in flight.
   */
  #get(name: string, what: string, limit: number, limitName: string, cb: (err: Error | null, get: Get) => void, asked?: { get?: Get }): void {
    const first = `${this.#url}/${name}`;
    const go = (path: string, url: string, hops: number): void => {
      const next = new Get(what, url, limit, limitName, (err, get) => {
        if (err || !REDIRECTS.has(get.status) || get.location === undefined) return cb(err, get);
        const from = `Cannot get ${what} from ${first} as ${url === first ? "it" : url}`;
        let to: URL;
        try {
          to = new URL(get.location, this.#origin + path);
        } catch {
          return cb(storeError("ERR_REDIRECT", `${from} redirects (HTTP ${get.status}) to '${shownUrl(get.location)}', which is not a URL`, false), get);
        }
        if (to.origin !== this.#origin) {
          return cb(storeError("ERR_REDIRECT", `${from} redirects (HTTP ${get.status}) to ${shownUrl(to)}, another origin: only redirects within ${this.#origin} are followed`, false), get);
        }
        if (hops >= this.#limits.redirects) {
          return cb(storeError("ERR_REDIRECT", `${from} redirects (HTTP ${get.status}) to ${shownUrl(to)}, one more than the ${this.#limits.redirects} followed (maxRedirects)`, false), get);
        }
        go(to.pathname + to.search, shownUrl(to), hops + 1);
      });
      if (asked) asked.get = next;
      this.#send(next, path);
    };
    go(`${this.#prefix}/${name}`, first, 0);
  }

  #explain(get: Get): (CassetteError & Retryable) | undefined {
    return this.#target.explain?.({ status: get.status, headers: get.errorHeaders, body: get.errorBody, url: get.url });
  }

  #send(get: Get, path: string): void {
    const headers = this.#target.headers?.("GET", path);
    const query = this.#target.query?.("GET", path);
    if (headers instanceof Promise || query instanceof Promise) {
      // Signed asynchronously (WebCrypto's SigV4 in a page, a presigned URL asked for): sent once signed.
      Promise.all([headers, query]).then(([h, q]) => this.#dispatch(get, q ? `${path}?${q}` : path, h), (e) => get.onResponseError(null, e as Error));
    } else this.#dispatch(get, query ? `${path}?${query}` : path, headers);
  }

  #dispatch(get: Get, path: string, headers: Record<string, string> | undefined): void {
    get.dispatching = true;
    try {
      this.#pool.send(path, headers, get);
    } catch (e) {
      get.onResponseError(null, e as Error);
    } finally {
      get.dispatching = false;
    }
  }

  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }
  inFlight(): number {
    return this.#cap.inFlight;
  }
  /** Closes the connections; requests still in flight are aborted (their callbacks get errors). */
  async close(): Promise<void> {
    if (this.#pool.closed) return;
    if (this.#cap.inFlight > 0) await this.#pool.destroy();
    else await this.#pool.close();
  }
}

/** Address options: query name → option, and how its value reads. */
const PARAMS = {
  connections: ["connections", "count"],
  pipelining: ["pipelining", "count"],
  inflight: ["maxInFlight", "count"],
  maxsample: ["maxSampleBytes", "bytes"],
  maxlabels: ["maxLabelsBytes", "bytes"],
  redirects: ["maxRedirects", "count0"],
  insecureauth: ["allowInsecureAuth", "flag"],
  ca: ["ca", "path"],
} as const;

/**
 * `http(s)://[user:pass@]HOST[:PORT]/PREFIX[?OPTION=VALUE&…]` → origin, path prefix (no
 * trailing slash), Basic credentials, options, the CA file named, and the URL to show (no
 * credentials, no options). Options: connections, pipelining, inflight (positive integers);
 * maxsample, maxlabels (bytes, or with a KiB, MiB or GiB suffix); redirects (≥ 0);
 * insecureauth=1; ca=PATH (a PEM file).
 */
export function parseHttpUrl(url: string): { origin: string; prefix: string; auth?: string; params: HttpSourceOptions; caFile?: string; shown: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${url.replace(/\/\/[^/@]*@/, "//***@")}' as it is not a valid URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${u.protocol}//${u.host}${u.pathname}' as its scheme is not http: or https:`);
  }
  const prefix = u.pathname.replace(/\/+$/, "");
  const shown = `${u.protocol}//${u.host}${prefix}`;
  const auth = u.username || u.password
    ? btoa(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`)
    : undefined;
  const { params, caFile } = parseHttpParams(u.searchParams, shown);
  if (u.hash) throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${shown}' as it has a #fragment`);
  return { origin: u.origin, prefix, auth, params, ...(caFile !== undefined ? { caFile } : {}), shown };
}

/**
 * An address's query options (PARAMS) as HttpSourceOptions, and the CA file named; `others`
 * are the options another scheme reads itself (S3's), listed when an unknown one is named.
 */
export function parseHttpParams(query: URLSearchParams, shown: string, others: string[] = []): { params: HttpSourceOptions; caFile?: string } {
  const params: Record<string, number | boolean> = {};
  let caFile: string | undefined;
  for (const [k, v] of query) {
    const bad = (why: string): never => {
      throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${shown}' as '${k}' ${why}: current value is ${v}`);
    };
    const p = PARAMS[k as keyof typeof PARAMS];
    if (!p) throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${shown}' as '${k}' is not an option (${[...others, ...Object.keys(PARAMS)].join(", ")})`);
    const [key, kind] = p;
    if (kind === "path") {
      if (!v) bad("must name a file");
      caFile = v;
    } else if (kind === "flag") {
      if (v !== "0" && v !== "1") bad("must be 1 or 0");
      params[key] = v === "1";
    } else if (kind === "bytes") {
      const m = /^(\d+)(KiB|MiB|GiB)?$/.exec(v);
      const n = m ? Number(m[1]) * ({ KiB: 1 << 10, MiB: 1 << 20, GiB: 1 << 30 }[m[2] ?? ""] ?? 1) : 0;
      if (!(n >= 1 && Number.isSafeInteger(n))) bad("must be a positive number of bytes (e.g. 1048576 or 1MiB)");
      params[key] = n;
    } else {
      if (!/^\d+$/.test(v) || (kind === "count" && Number(v) < 1)) bad(kind === "count" ? "must be a positive integer" : "must be an integer ≥ 0");
      params[key] = Number(v);
    }
  }
  return { params: params as HttpSourceOptions, ...(caFile !== undefined ? { caFile } : {}) };
}

/** A URL for messages: no credentials, and a query only as "?…" (it may carry a token). */
function shownUrl(url: URL | string): string {
  let u: URL;
  try {
    u = typeof url === "string" ? new URL(url) : url;
  } catch {
    return String(url).replace(/\/\/[^/@]*@/, "//***@").replace(/\?.*$/, "?…");
  }
  return `${u.protocol}//${u.host}${u.pathname}${u.search ? "?…" : ""}`;
}

/** `n` bytes, with MiB beside it when that reads better. */
function bytes(n: number): string {
  return n >= MiB ? `${n}-byte (${+(n / MiB).toFixed(2)} MiB)` : `${n}-byte`;
}

export function positive(v: number, name: string, url: string): number {
  if (!Number.isInteger(v) || v < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot open ${url} as '${name}' must be a positive integer: current value is ${v}`);
  }
  return v;
}

/** A network failure, with how much of the body had arrived when the server cut it short. */
function describeFailure(err: unknown, get: Get): string {
  if (get.status < 200 || get.status >= 300) return describe(err);
  const of = get.announced >= 0 ? ` of the ${get.announced} its Content-Length announced` : "";
  return `the connection failed after ${get.received} bytes${of}: ${describe(err)}`;
}

export function untrusted(e: unknown): boolean {
  for (let err = e as { code?: unknown; message?: unknown; cause?: unknown } | undefined, i = 0; err && i < 4; err = err.cause as typeof err, i++) {
    if (typeof err.code === "string" && UNTRUSTED_CERT_CODES.has(err.code)) return true;
    if (typeof err.message === "string" && /certificate/i.test(err.message)) return true;
  }
  return false;
}

/** Not retried: the same certificate will be presented again. */
export function untrustedError(doing: string, e: unknown): CassetteError & Retryable {
  // An expired certificate, or one for another host, is not fixed by giving a CA.
  const code = (e as { code?: unknown })?.code;
  const hint = !caWouldHelp(code)
    ? ""
    : "; give the CA that signed it with ca=PATH in the address or the 'ca' option";
  return storeError("ERR_TLS_UNTRUSTED", `${doing} as the server's TLS certificate is not trusted: ${describe(e)}${hint}`, false, { cause: e });
}

/** An undici error's message with its code, e.g. "connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED)". */
export function describe(e: unknown): string {
  const err = e as { message?: string; code?: string; cause?: { code?: string } };
  const code = err?.code ?? err?.cause?.code;
  const msg = err?.message || String(e);
  return code && !msg.includes(code) ? `${msg} (${code})` : msg;
}

/** Retry-After as ms from now: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined if absent or unreadable. */
export function retryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}