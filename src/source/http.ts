/**
 * An HTTP(S) object store as a Source: `http(s)://HOST/PREFIX` serves each sample at
 * PREFIX/<id> and the labels at PREFIX/labels.json (the layout in file.ts, written by
 * `cassette export`; any static web server can serve it). labels.json is fetched once at open;
 * each sample is then one GET, its label taken from that table.
 *
 * One undici Pool to the origin: `connections` keep-alive connections, each with up to
 * `pipelining` requests on the wire (sent non-blocking, so they really are pipelined).
 * Requests past what the pool can send wait in its queue; `fetch` answers false once
 * `maxInFlight` are in flight, so the pool's own busy signal is not needed. Each connection is
 * an undici Client made by the pool's `factory`; tagging them there tells which connection
 * served a sample (`conn`: "HOST:PORT#N") for one property write per request.
 *
 * Answers: 2xx is the sample; 404/410 is "Cannot find sample <id>" (ERR_STORE, not
 * retryable); 5xx, 408, 429 and network failures or timeouts are ERR_STORE_UNREACHABLE,
 * retryable; any other status (403, 401, 400, a 3xx undici does not follow) is ERR_STORE, not
 * retryable: asking again gets the same answer. Every error carries that `retryable` flag
 * (retryable.ts) and names the id's URL, and the status if any.
 *
 * URL options (query string, removed from the prefix): `connections`, `pipelining`,
 * `inflight`; credentials in the URL are sent as HTTP Basic authorization.
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
import { CassetteError } from "../errors.ts";
import { checkDataset, LABELS_FILE, parseLabels } from "./file.ts";
import { retryableStatus, storeError } from "./retryable.ts";
import { Capacity, type FetchCallback, type Fetched, type Source } from "./source.ts";

const { Client, Pool } = undici;
type UndiciClient = InstanceType<typeof Client>;
type UndiciPool = InstanceType<typeof Pool>;

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
}

/** Per request: the Client the pool chose sets `conn` here when it takes the request. */
const kRequest = Symbol("cassette.request");

interface Options {
  path: string;
  method: "GET";
  blocking: false;
  headers?: Record<string, string>;
  [kRequest]: Get;
}

/**
 * One GET, answered through `cb` with the status and the body (only a 2xx body is kept).
 * A handler in undici's dispatch API: no stream per response, and the body lands in one
 * buffer sized by content-length.
 */
class Get {
  /** Set by the connection that takes the request. */
  conn?: string;
  /** An error answer's Retry-After, in ms from now (RFC 9110 §10.2.3). */
  retryAfterMs?: number;
  /** True while undici's dispatch() runs: errors it reports synchronously are deferred. */
  dispatching = false;
  #status = 0;
  #statusText = "";
  #body: Uint8Array | null = null;
  #chunks: Uint8Array[] = [];
  #length = 0;
  readonly #cb: (err: Error | null, status: number, statusText: string, body: Uint8Array) => void;

  constructor(cb: (err: Error | null, status: number, statusText: string, body: Uint8Array) => void) {
    this.#cb = cb;
  }

  // Called again when undici re-sends a request that was behind a failed pipeline head.
  onRequestStart(): void {
    this.#status = 0;
    this.#body = null;
    this.#chunks = [];
    this.#length = 0;
  }
  onResponseStart(_c: unknown, status: number, headers: Record<string, string | string[]>, statusText?: string): void {
    if (status < 200) return; // 1xx informational: the real answer follows
    this.#status = status;
    this.#statusText = statusText ?? "";
    if (status >= 300) this.retryAfterMs = retryAfter(headers["retry-after"]);
    const len = Number(headers["content-length"]);
    if (status < 300 && Number.isSafeInteger(len) && len >= 0) this.#body = new Uint8Array(len);
  }
  onResponseData(_c: unknown, chunk: Uint8Array): void {
    if (this.#status >= 300) return; // an error page: not kept
    // Copy: undici's chunks are views of the socket's read buffer, shared with the next
    // pipelined responses, and consumers may transfer (detach) a sample's buffer.
    if (this.#body && this.#length + chunk.length <= this.#body.length) this.#body.set(chunk, this.#length);
    else this.#chunks.push(chunk.slice());
    this.#length += chunk.length;
  }
  onResponseEnd(): void {
    let body = this.#body ?? new Uint8Array(0);
    if (this.#chunks.length || (this.#body && this.#length !== this.#body.length)) body = this.#joined();
    this.#cb(null, this.#status, this.#statusText, body);
  }
  onResponseError(_c: unknown, err: Error): void {
    if (this.dispatching) queueMicrotask(() => this.#cb(err, 0, "", new Uint8Array(0)));
    else this.#cb(err, 0, "", new Uint8Array(0));
  }

  /** The body when content-length was absent or wrong: whatever arrived, in order. */
  #joined(): Uint8Array {
    const out = new Uint8Array(this.#length);
    let at = 0;
    if (this.#body) {
      const pre = Math.min(this.#body.length, this.#length);
      out.set(this.#body.subarray(0, pre));
      at = pre;
    }
    for (const c of this.#chunks) out.set(c, at), (at += c.length);
    return out;
  }
}

/** Opens the store at `url`: checks the address, fetches labels.json once. */
export async function openHttpSource(url: string, o: HttpSourceOptions = {}): Promise<HttpSource> {
  const { origin, prefix, auth, params, shown } = parseHttpUrl(url);
  const opts: HttpSourceOptions = { ...params, ...o };
  const connections = positive(opts.connections ?? 8, "connections", shown);
  const pipelining = positive(opts.pipelining ?? 4, "pipelining", shown);
  const maxInFlight = positive(opts.maxInFlight ?? connections * pipelining * 4, "maxInFlight", shown);
  const timeout = positive(opts.timeoutMs ?? 30_000, "timeoutMs", shown);
  const host = new URL(origin).host;
  let made = 0;
  const pool = new Pool(origin, {
    connections,
    pipelining,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    factory: (o: string | URL, opts: object) => new TaggedClient(o, opts as never, `${host}#${++made}`),
  });
  const source = new HttpSource(pool, shown, prefix, auth, maxInFlight);
  try {
    await source.loadLabels(o.dataset);
  } catch (e) {
    await pool.destroy().catch(() => {});
    throw e;
  }
  return source;
}

/** A pool connection that writes its name into each request it takes. */
class TaggedClient extends Client {
  readonly #tag: string;
  constructor(origin: string | URL, opts: ConstructorParameters<typeof Client>[1], tag: string) {
    super(origin, opts);
    this.#tag = tag;
  }
  override dispatch(opts: Parameters<UndiciClient["dispatch"]>[0], handler: Parameters<UndiciClient["dispatch"]>[1]): boolean {
    const r = (opts as unknown as Partial<Options>)[kRequest];
    if (r) r.conn = this.#tag;
    return super.dispatch(opts, handler);
  }
}

export class HttpSource implements Source {
  /** e.g. "http://127.0.0.1:8080/data (fashion-mnist)". */
  name: string;
  dataset = "";
  readonly #pool: UndiciPool;
  readonly #url: string;
  readonly #prefix: string;
  readonly #headers?: Record<string, string>;
  readonly #cap: Capacity;
  #labels: ReadonlyMap<string, number> = new Map();

  constructor(pool: UndiciPool, url: string, prefix: string, auth: string | undefined, maxInFlight: number) {
    this.#pool = pool;
    this.#url = url;
    this.#prefix = prefix;
    if (auth) this.#headers = { authorization: `Basic ${auth}` };
    this.#cap = new Capacity(maxInFlight);
    this.name = url;
  }

  /** @internal Fetches PREFIX/labels.json; checks it names `dataset` when given. */
  async loadLabels(dataset?: string): Promise<void> {
    const where = `${this.#url}/${LABELS_FILE}`;
    const { status, statusText, body } = await new Promise<{ status: number; statusText: string; body: Uint8Array }>((resolve, reject) => {
      this.#get(LABELS_FILE, (err, status, statusText, body) => (err ? reject(err) : resolve({ status, statusText, body })));
    }).catch((e) => {
      throw new CassetteError("ERR_STORE_UNREACHABLE", `Cannot open ${this.#url} as ${where} cannot be fetched: ${describe(e)}`, { cause: e });
    });
    if (status === 404 || status === 410) {
      throw new CassetteError("ERR_STORE", `Cannot open ${this.#url} as ${where} answered HTTP ${status}: serve a folder written by cassette export (an interrupted export has no labels.json yet)`);
    }
    if (status < 200 || status >= 300) {
      throw new CassetteError(status >= 500 ? "ERR_STORE_UNREACHABLE" : "ERR_STORE", `Cannot open ${this.#url} as ${where} answered HTTP ${status} ${statusText}`.trimEnd());
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
    if (label === undefined) {
      // Not exported: no request can find it (and ids outside the table are not object names).
      queueMicrotask(() => {
        this.#cap.release();
        done(storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.dataset}' at ${this.#url}: it is not in ${LABELS_FILE}`, false));
      });
      return more;
    }
    const get = this.#get(id, (err, status, statusText, body) => {
      this.#cap.release();
      const url = `${this.#url}/${id}`;
      if (err) return done(storeError("ERR_STORE_UNREACHABLE", `Cannot get ${url}: ${describe(err)}`, true, { cause: err }));
      if (status >= 200 && status < 300) {
        const s: Fetched = { id, label, data: body };
        if (get.conn) s.conn = get.conn;
        return done(null, s);
      }
      const answer = `HTTP ${status}${statusText ? ` ${statusText}` : ""}`;
      if (status === 404 || status === 410) {
        return done(storeError("ERR_STORE", `Cannot find sample ${id} of dataset '${this.dataset}': ${url} answered ${answer}`, false));
      }
      const again = retryableStatus(status);
      const e = storeError(again ? "ERR_STORE_UNREACHABLE" : "ERR_STORE", `Cannot get ${url}: it answered ${answer}`, again);
      if (again && get.retryAfterMs !== undefined) e.retryAfterMs = get.retryAfterMs;
      done(e);
    });
    return more;
  }

  #get(name: string, cb: ConstructorParameters<typeof Get>[0]): Get {
    const get = new Get(cb);
    // blocking: false, or undici sends the next request on a connection only once this one's
    // headers are back (its default for GET), and pipelining buys nothing over a long RTT.
    const opts: Options = { path: `${this.#prefix}/${name}`, method: "GET", blocking: false, [kRequest]: get };
    if (this.#headers) opts.headers = this.#headers;
    get.dispatching = true;
    try {
      this.#pool.dispatch(opts, get as never);
    } catch (e) {
      get.onResponseError(null, e as Error);
    } finally {
      get.dispatching = false;
    }
    return get;
  }

  onDrain(listener: () => void): void {
    this.#cap.onDrain(listener);
  }
  inFlight(): number {
    return this.#cap.inFlight;
  }
  /** Closes the connections; requests still in flight are aborted (their callbacks get errors). */
  async close(): Promise<void> {
    if (this.#pool.closed || this.#pool.destroyed) return;
    if (this.#cap.inFlight > 0) await this.#pool.destroy();
    else await this.#pool.close();
  }
}

/**
 * `http(s)://[user:pass@]HOST[:PORT]/PREFIX[?connections=N&pipelining=N&inflight=N]` →
 * origin, path prefix (no trailing slash), Basic credentials, options, and the URL to show
 * (no credentials, no options).
 */
export function parseHttpUrl(url: string): { origin: string; prefix: string; auth?: string; params: HttpSourceOptions; shown: string } {
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
  const params: HttpSourceOptions = {};
  const names = { connections: "connections", pipelining: "pipelining", inflight: "maxInFlight" } as const;
  for (const [k, v] of u.searchParams) {
    const key = names[k as keyof typeof names];
    if (!key) throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${shown}' as '${k}' is not an option (${Object.keys(names).join(", ")})`);
    if (!/^\d+$/.test(v) || Number(v) < 1) throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${shown}' as '${k}' must be a positive integer: current value is ${v}`);
    params[key] = Number(v);
  }
  if (u.hash) throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${shown}' as it has a #fragment`);
  return { origin: u.origin, prefix, auth, params, shown };
}

function positive(v: number, name: string, url: string): number {
  if (!Number.isInteger(v) || v < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot open ${url} as '${name}' must be a positive integer: current value is ${v}`);
  }
  return v;
}

/** An undici error's message with its code, e.g. "connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED)". */
function describe(e: unknown): string {
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
