/**
 * What AWS Signature Version 4 signs (sigv4.ts has the algorithm's outline and source): the
 * request's canonical form and the string to sign, without hashing, so that the signer with
 * node:crypto (sigv4.ts, synchronous: a request is signed as undici sends it) and the one with
 * WebCrypto (sigv4_web.ts, asynchronous: a page's) sign the same bytes.
 */

/** An AWS access key: what signs S3 requests. */
export interface AwsCredentials {
  /** The access key's id. */
  accessKeyId: string;
  /** The secret that signs requests. */
  secretAccessKey: string;
  /** Temporary credentials (STS) carry a token, sent as x-amz-security-token. */
  sessionToken?: string;
}

export interface SignInput {
  method: string;
  /** The Host header as sent (host, and :port when not the scheme's default). */
  host: string;
  /** The path as sent on the wire, already URI-encoded (s3Path does it). */
  path: string;
  /** Query parameters, not encoded (they are encoded and sorted here). */
  query?: Record<string, string>;
  /** Other headers to sign, lower-case names. */
  headers?: Record<string, string>;
  /** hex SHA-256 of the body; default: of the empty body. */
  payloadHash?: string;
  region: string;
  service?: string;
  credentials: AwsCredentials;
  /** ms since the epoch; default Date.now(). */
  now?: number;
}

export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** A request's canonical form: the headers to send, and what its signature is made from. */
export interface CanonicalRequest {
  /** The headers to send (authorization is added once signed). */
  out: Record<string, string>;
  /** METHOD \n URI \n QUERY \n HEADERS \n SIGNED-HEADERS \n PAYLOAD-HASH */
  canonical: string;
  amzDate: string;
  day: string;
  region: string;
  service: string;
  /** DAY/REGION/SERVICE/aws4_request */
  scope: string;
  signedHeaders: string;
}

/** The canonical form of `r` (every header given is signed; `host` is signed but not sent). */
export function canonicalRequest(r: SignInput): CanonicalRequest {
  const service = r.service ?? "s3";
  const amzDate = new Date(r.now ?? Date.now()).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const payload = r.payloadHash ?? EMPTY_SHA256;
  const out: Record<string, string> = { ...r.headers, "x-amz-date": amzDate, "x-amz-content-sha256": payload };
  if (r.credentials.sessionToken) out["x-amz-security-token"] = r.credentials.sessionToken;
  const all: Record<string, string> = { ...out, host: r.host };
  const names = Object.keys(all).map((n) => n.toLowerCase()).sort();
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(all)) lower[k.toLowerCase()] = v.trim().replace(/\s+/g, " ");
  const canonicalHeaders = names.map((n) => `${n}:${lower[n]}\n`).join("");
  const signedHeaders = names.join(";");
  const query = Object.entries(r.query ?? {})
    .map(([k, v]) => [uriEncode(k), uriEncode(v)])
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
  const canonical = [r.method, r.path, query, canonicalHeaders, signedHeaders, payload].join("\n");
  return { out, canonical, amzDate, day, region: r.region, service, scope: `${day}/${r.region}/${service}/aws4_request`, signedHeaders };
}

/** "AWS4-HMAC-SHA256" \n AMZ-DATE \n SCOPE \n hex(sha256(canonical request)) */
export function stringToSign(c: CanonicalRequest, canonicalHashHex: string): string {
  return `AWS4-HMAC-SHA256\n${c.amzDate}\n${c.scope}\n${canonicalHashHex}`;
}

/** The headers to send, with the authorization header of `signature` (hex). */
export function signedHeaders(c: CanonicalRequest, accessKeyId: string, signature: string): Record<string, string> {
  return { ...c.out, authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${c.scope}, SignedHeaders=${c.signedHeaders}, Signature=${signature}` };
}

/** RFC 3986 percent-encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ (and '/' when `slash`). */
export function uriEncode(s: string, slash = false): string {
  let out = "";
  for (const b of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~]/.test(c) || (slash && c === "/") ? c : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
