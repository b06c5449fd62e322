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
 * kept. A page has no node:crypto: sigv4_web.ts signs the same canonical request
 * (sigv4_request.ts) with WebCrypto, asynchronously, to the same bytes. test/source/sigv4.test.ts checks AWS's own worked example.
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
import { canonicalRequest, type SignInput, signedHeaders, stringToSign } from "./sigv4_request.ts";

// The request's canonical form is sigv4_request.ts's (shared with sigv4_web.ts, WebCrypto's signer).
export type { AwsCredentials, SignInput } from "./sigv4_request.ts";
export { EMPTY_SHA256, uriEncode } from "./sigv4_request.ts";

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
  const c = canonicalRequest(r);
  const signature = createHmac("sha256", signingKey(r.credentials.secretAccessKey, c.day, c.region, c.service)).update(stringToSign(c, sha256Hex(c.canonical))).digest("hex");
  return signedHeaders(c, r.credentials.accessKeyId, signature);
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
