/**
 * What an `s3://` address means, wherever it is read (s3.ts under Bun, Deno and Node; s3_web.ts
 * in a page): its parts and options, the bucket's origin and addressing style, the HTTP
 * source's target over it (each request signed as it is sent, by the signer the caller gives:
 * node:crypto's or WebCrypto's), and S3's errors named from their XML.
 *
 * @example
 * ```ts
 * import { parseS3Url } from "./s3_target.ts";
 * const a = parseS3Url("s3://my-bucket/datasets/fm?endpoint=http://127.0.0.1:7070&region=eu-west-1");
 * console.log(a.bucket, a.prefix, a.params.endpoint); // my-bucket datasets/fm http://127.0.0.1:7070
 * ```
 */
import { CassetteError } from "../../errors.ts";
import { type Retryable, storeError } from "../retryable.ts";
import { type HttpSourceOptions, type HttpTarget, parseHttpParams, retryAfter } from "./http_source.ts";
import { type AwsCredentials, EMPTY_SHA256, type SignInput, uriEncode } from "./sigv4_request.ts";

/** How an `s3://` source or sink reaches its bucket: endpoint, region, addressing style, credentials, and the HTTP options. */
export interface S3Options extends HttpSourceOptions {
  /** The server to send requests to (default AWS's, for the region). */
  endpoint?: string;
  /** The bucket's region, used in signatures (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1). */
  region?: string;
  /** "path" (/BUCKET/KEY) or "virtual" (Host: BUCKET.HOST); default path with an endpoint, virtual for AWS. */
  style?: "path" | "virtual";
  /** A profile of the shared credentials and config files. */
  profile?: string;
  /** Credentials to use, or "anonymous" (unsigned requests); default: found as the file's comment says. */
  credentials?: AwsCredentials | "anonymous";
  /** Added to this machine's clock when signing, for one known to be off (ms; default 0). */
  clockOffsetMs?: number;
  /**
   * In place of credentials: the query string (no "?") of a presigned GET of `path` (as sent:
   * /BUCKET/KEY, or /KEY with virtual hosting), e.g. made by a server the caller trusts, so
   * that a web page holds no secret key. Called for each request (each retry asks again).
   */
  presign?: (path: string) => string | Promise<string>;
}

/** An `s3://` address: bucket, key prefix (no slashes at either end), the options it carries. */
export function parseS3Url(url: string): { bucket: string; prefix: string; params: S3Options; caFile?: string; shown: string } {
  const m = /^s3:\/\/([^/?#]*)\/?([^?#]*)(\?[^#]*)?(#.*)?$/.exec(url);
  const bad = (why: string): never => {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address '${url.replace(/\?.*$/, "")}' as ${why}`);
  };
  if (!m) return bad("it is not s3://BUCKET/PREFIX");
  const [, bucket, rawPrefix, query = "", hash] = m;
  // S3's bucket naming rules (lower case, digits, dots, hyphens; 3–63; starts and ends alphanumeric).
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) bad(`its bucket '${bucket}' is not a valid bucket name (3–63 lower-case letters, digits, '.', '-')`);
  if (hash) bad("it has a #fragment");
  const prefix = decodeURIComponent(rawPrefix).replace(/^\/+|\/+$/g, "");
  const shown = `s3://${bucket}${prefix ? `/${prefix}` : ""}`;
  const s3: Record<string, string> = {};
  const rest = new URLSearchParams();
  for (const [k, v] of new URLSearchParams(query)) {
    if (["endpoint", "region", "style", "profile", "anonymous"].includes(k)) s3[k] = v;
    else rest.append(k, v);
  }
  const { params, caFile } = parseHttpParams(rest, shown, ["endpoint", "region", "style", "profile", "anonymous"]);
  const out: S3Options = { ...params };
  if (s3.endpoint !== undefined) {
    let e: URL | undefined;
    try {
      e = new URL(s3.endpoint);
    } catch { /* named below */ }
    if (!e || !/^https?:$/.test(e.protocol) || (e.pathname !== "/" && e.pathname !== "")) bad(`'endpoint' must be http(s)://HOST[:PORT]: current value is ${s3.endpoint}`);
    out.endpoint = e!.origin;
  }
  if (s3.region !== undefined) {
    if (!/^[a-z0-9-]{1,32}$/.test(s3.region)) bad(`'region' must be a region name such as us-east-1: current value is ${s3.region}`);
    out.region = s3.region;
  }
  if (s3.style !== undefined) {
    if (s3.style !== "path" && s3.style !== "virtual") bad(`'style' must be path or virtual: current value is ${s3.style}`);
    out.style = s3.style as "path" | "virtual";
  }
  if (s3.profile !== undefined) {
    if (!s3.profile) bad("'profile' names no profile");
    out.profile = s3.profile;
  }
  if (s3.anonymous !== undefined) {
    if (s3.anonymous !== "0" && s3.anonymous !== "1") bad(`'anonymous' must be 1 or 0: current value is ${s3.anonymous}`);
    if (s3.anonymous === "1") out.credentials = "anonymous";
  }
  return { bucket, prefix, params: out, ...(caFile !== undefined ? { caFile } : {}), shown };
}

/** Where a bucket's requests go and how they are signed: resolved once per store. */
export interface S3Bucket {
  bucket: string;
  /** Key prefix, no slashes at either end ("" for the bucket's root). */
  prefix: string;
  /** s3://BUCKET/PREFIX, for messages. */
  shown: string;
  /** Where connections go. */
  origin: string;
  /** The Host header (and TLS name): the origin's host, or BUCKET.host for virtual hosting. */
  host: string;
  /** With virtual hosting, the name the connection's TLS and Host header carry (host without port); else undefined. */
  servername?: string;
  /** The path before a key: "/BUCKET" (path style) or "" (virtual). */
  base: string;
  region: string;
  credentials?: AwsCredentials;
  clockOffsetMs: number;
  /** Where the credentials came from, for messages (never the secret). */
  from: string;
}

/**
 * The bucket of `parsed` at `endpoint` (AWS's for `region` when none), named as `opts.style`
 * says. `bucketInOrigin`: a virtual-hosted bucket's name goes into the origin connected to (a
 * page, which cannot set Host); otherwise the connection goes to the endpoint's address and the
 * Host header (and TLS server name) carries the bucket, as a wildcard DNS name would.
 */
export function bucketOf(
  parsed: { bucket: string; prefix: string; shown: string },
  opts: S3Options,
  at: { region: string; endpoint?: string; credentials?: AwsCredentials; from: string; bucketInOrigin?: boolean },
): S3Bucket {
  const { region, endpoint, credentials, from } = at;
  let origin: URL;
  try {
    origin = new URL(endpoint ?? `https://s3.${region}.amazonaws.com`);
  } catch {
    throw new CassetteError("ERR_STORE_ADDRESS", `Cannot open ${parsed.shown} as its endpoint '${endpoint}' is not a URL`);
  }
  // Virtual hosting needs the bucket in a DNS name, and over TLS a dotted one breaks the certificate's wildcard.
  const style = opts.style ?? (endpoint || parsed.bucket.includes(".") ? "path" : "virtual");
  const host = style === "virtual" ? `${parsed.bucket}.${origin.host}` : origin.host;
  if (at.bucketInOrigin && host !== origin.host) origin = new URL(`${origin.protocol}//${host}`);
  const offset = opts.clockOffsetMs ?? 0;
  if (!Number.isFinite(offset)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot open ${parsed.shown} as 'clockOffsetMs' must be a number: current value is ${offset}`);
  return {
    bucket: parsed.bucket, prefix: parsed.prefix, shown: parsed.shown, origin: origin.origin, host,
    ...(host !== origin.host ? { servername: host.replace(/:\d+$/, "") } : {}),
    base: style === "path" ? `/${parsed.bucket}` : "", region, ...(credentials ? { credentials } : {}), clockOffsetMs: offset, from,
  };
}

/**
 * What signs one request to `b` (sigv4.ts's signV4, or sigv4_web.ts's signV4Web), or undefined
 * for an unsigned one (anonymous).
 */
export function signInput(b: S3Bucket, method: string, path: string, extra: Record<string, string> = {}, payloadHash = EMPTY_SHA256): SignInput | undefined {
  if (!b.credentials) return undefined;
  const [p, q = ""] = path.split("?", 2);
  const query: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(q)) query[k] = v;
  return { method, host: b.host, path: p, query, headers: extra, payloadHash, region: b.region, credentials: b.credentials, now: Date.now() + b.clockOffsetMs };
}

/** The Host header a request to `b` needs: the bucket's, when it is not the origin's. */
export function hostHeader(b: S3Bucket): Record<string, string> {
  return b.servername ? { host: b.host } : {};
}

/** `b` as the HTTP source's target: each GET's headers from `headers`, S3's errors named. */
export function s3TargetOf(b: S3Bucket, headers: HttpTarget["headers"]): HttpTarget {
  const target: HttpTarget = {
    origin: b.origin,
    prefix: `${b.base}/${uriEncode(b.prefix, true)}`.replace(/\/$/, ""),
    shown: b.shown,
    ...(headers ? { headers } : {}),
    explain: (a) => explainS3(a.status, a.headers, a.body, `Cannot get ${a.url}`, b),
  };
  if (b.servername) target.servername = b.servername;
  return target;
}

/** S3's error codes that mean "these credentials, not this request": refused at once, never retried. */
const AUTH_CODES = new Set(["SignatureDoesNotMatch", "InvalidAccessKeyId", "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "AccessDenied", "AllAccessDisabled", "InvalidSecurity", "MissingSecurityHeader", "AuthorizationHeaderMalformed", "AccountProblem",
  // versitygw answers an unknown access key so, with HTTP 404.
  "XAdminUserNotFound"]);

/**
 * A named error for an S3 error answer, or undefined when its status says enough (NoSuchKey
 * is "Cannot find sample", 5xx and SlowDown retryable). `doing`: "Cannot get s3://…/ID".
 */
export function explainS3(status: number, headers: Record<string, string | string[]>, body: Uint8Array, doing: string, b: S3Bucket): (CassetteError & Retryable) | undefined {
  const xml = new TextDecoder().decode(body);
  const code = xmlText(xml, "Code");
  const message = xmlText(xml, "Message");
  const said = `${code ?? `HTTP ${status}`}${message ? `: ${message}` : ""}`;
  const header = (n: string) => {
    const v = headers[n];
    return Array.isArray(v) ? v[0] : v;
  };
  if (code === "RequestTimeTooSkewed" || (status === 403 && /skew/i.test(message ?? ""))) {
    const server = Date.parse(xmlText(xml, "ServerTime") ?? header("date") ?? "");
    const ours = Date.now() + b.clockOffsetMs;
    const off = Number.isFinite(server) ? ` this machine's clock${b.clockOffsetMs ? ` (with clockOffsetMs ${b.clockOffsetMs})` : ""} is ${Math.abs(Math.round((ours - server) / 1000))} s ${ours > server ? "ahead of" : "behind"} the server's` : " this machine's clock is off from the server's";
    return storeError("ERR_CLOCK_SKEW", `${doing} as the server refused the request's time (${said}):${off}, more than a signature allows (15 min); set the clock (NTP), or give clockOffsetMs`, false);
  }
  if (code === "NoSuchBucket") {
    return storeError("ERR_STORE_ADDRESS", `${doing} as bucket '${b.bucket}' does not exist at ${b.origin} (${said})`, false);
  }
  const elsewhere = header("x-amz-bucket-region") ?? xmlText(xml, "Region");
  if (code === "PermanentRedirect" || code === "IncorrectEndpoint" || (code === "AuthorizationHeaderMalformed" && elsewhere && elsewhere !== b.region)) {
    return storeError("ERR_STORE_ADDRESS", `${doing} as bucket '${b.bucket}' is ${elsewhere ? `in region ${elsewhere}` : "elsewhere"}, not ${b.region} (${said}): add region=${elsewhere ?? "REGION"} to the address`, false);
  }
  if ((code !== undefined && AUTH_CODES.has(code)) || ((status === 403 || status === 401) && code === undefined)) {
    const who = b.credentials ? `access key ${b.credentials.accessKeyId.slice(0, 4)}… from ${b.from}` : b.from;
    const hint = code === "SignatureDoesNotMatch" ? ": the secret key does not match the access key"
      : code === "InvalidAccessKeyId" || code === "XAdminUserNotFound" ? ": the server knows no such access key"
      : code === "ExpiredToken" || code === "TokenRefreshRequired" ? ": the session token has expired; get new credentials"
      : code === "AccessDenied" ? ": the key lacks permission for this bucket or object (a missing object reads as AccessDenied without s3:ListBucket)"
      : "";
    return storeError("ERR_STORE_AUTH", `${doing} as the server refused the credentials (${said}; ${who})${hint}`, false);
  }
  if (code === "SlowDown" || (status >= 500 && code)) {
    const e = storeError("ERR_STORE_UNREACHABLE", `${doing}: the server answered HTTP ${status} (${said})`, true);
    const after = retryAfter(headers["retry-after"]);
    if (after !== undefined) e.retryAfterMs = after;
    return e;
  }
  return undefined;
}

/** The text of the first <tag>…</tag> in an XML document, entities decoded. */
export function xmlText(xml: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m ? unescapeXml(m[1]) : undefined;
}

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|amp|quot|apos|#(\d+)|#x([0-9a-fA-F]+));/g, (_, name, dec, hex) =>
    dec ? String.fromCodePoint(Number(dec)) : hex ? String.fromCodePoint(parseInt(hex, 16)) : ({ lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" } as Record<string, string>)[name]);
}

/**
 * A `wds:s3://BUCKET/PREFIX/NAME.index.json[?…]` index split: the bucket address its shards lie
 * under (the query kept) and the index object's name; an address that names no object is an
 * error naming it.
 */
export function s3IndexAddress(index: string): { bucket: string; name: string } {
  const [path, query = ""] = index.split("?", 2);
  const slash = path.lastIndexOf("/");
  if (slash <= "s3://".length) throw new CassetteError("ERR_STORE_ADDRESS", `Cannot use store address 'wds:${path}' as it names no index object (wds:s3://BUCKET/PREFIX/NAME.index.json)`);
  return { bucket: `${path.slice(0, slash)}${query ? `?${query}` : ""}`, name: path.slice(slash + 1) };
}

/**
 * Where an index (`name`) and its shards lie under a bucket's target: request paths, and how an
 * error shows them. A shard must be a key relative to the index (the export writes them so).
 */
export function s3IndexPaths(target: Pick<HttpTarget, "prefix" | "shown">, name: string): { index: string; shard: (url: string) => string; shown: (path: string) => string } {
  return {
    index: `${target.prefix}/${uriEncode(decodeURIComponent(name), true)}`,
    shard: (url) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith("/")) throw new CassetteError("ERR_UNSUPPORTED", `Cannot read shard ${url} of ${target.shown}/${name} as it is not a key relative to the index`);
      return `${target.prefix}/${uriEncode(url, true)}`;
    },
    shown: (p) => `${target.shown}${decodeURIComponent(p.slice(target.prefix.length))}`,
  };
}
