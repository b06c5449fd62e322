/**
 * AWS Signature Version 4 for S3 requests, written here so that reading a bucket needs no AWS
 * SDK. The algorithm is AWS's published one ("Authenticating Requests: Using the Authorization
 * Header", AWS Signature Version 4 in the S3 API reference):
 *
 *   canonical request = METHOD \n URI \n QUERY \n HEADERS \n SIGNED-HEADERS \n PAYLOAD-HASH
 *   string to sign    = "AWS4-HMAC-SHA256" \n AMZ-DATE \n SCOPE \n hex(sha256(canonical request))
 *   signing key       = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, DATE), REGION), "s3"), "aws4_request")
 *   signature         = hex(HMAC(signing key, string to sign))
 *
 * Signing is synchronous (node:crypto, in every runtime), so a request is signed as it is sent:
 * each retry and each hedge carries a fresh date. The signing key changes once a day and is
 * kept. test/source/sigv4.test.ts checks AWS's own worked example.
 *
 * @example
 * ```ts
 * import { signV4 } from "./sigv4.ts";
 * const h = signV4({
 *   method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt", headers: { range: "bytes=0-9" },
 *   region: "us-east-1", credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
 *   now: Date.UTC(2013, 4, 24),
 * });
 * console.log(h.authorization.endsWith("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")); // true
 * ```
 */
import { createHash, createHmac } from "node:crypto";

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

/** hex SHA-256 of `data`. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/**
 * The headers a request needs: the given ones plus x-amz-date, x-amz-content-sha256,
 * x-amz-security-token (temporary credentials) and authorization. Every header given is
 * signed; `host` is signed but not returned (the HTTP client sends it).
 */
export function signV4(r: SignInput): Record<string, string> {
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
  const scope = `${day}/${r.region}/${service}/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256Hex(canonical)}`;
  const signature = createHmac("sha256", signingKey(r.credentials.secretAccessKey, day, r.region, service)).update(toSign).digest("hex");
  out.authorization = `AWS4-HMAC-SHA256 Credential=${r.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return out;
}

/** One key per (secret, day, region, service): the four HMACs are done once a day, not per request. */
const keys = new Map<string, Uint8Array>();

function signingKey(secret: string, day: string, region: string, service: string): Uint8Array {
  // The secret is in the key as it is in the credentials that hold it: no hash per request.
  const id = `${day}/${region}/${service}/${secret}`;
  let k = keys.get(id);
  if (!k) {
    if (keys.size > 16) keys.clear();
    const hmac = (key: string | Uint8Array, s: string) => new Uint8Array(createHmac("sha256", key).update(s).digest());
    k = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), service), "aws4_request");
    keys.set(id, k);
  }
  return k;
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
