/**
 * AWS Signature Version 4 with WebCrypto (`crypto.subtle`), for a page, which has no
 * node:crypto: the same canonical request and string to sign as sigv4.ts's (both build them
 * with sigv4_request.ts), so the same headers to the byte (test/source/sigv4.test.ts checks
 * it), but asynchronous, as WebCrypto is. The signing key (four HMACs) is kept per day, region,
 * service and secret, as sigv4.ts keeps it.
 *
 * @example
 * ```ts
 * import { signV4Web } from "./sigv4_web.ts";
 * const h = await signV4Web({
 *   method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt", headers: { range: "bytes=0-9" },
 *   region: "us-east-1", credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
 *   now: Date.UTC(2013, 4, 24),
 * });
 * console.log(h.authorization.endsWith("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")); // true
 * ```
 */
import { canonicalRequest, type SignInput, signedHeaders, stringToSign } from "./sigv4_request.ts";

const utf8 = new TextEncoder();

function hex(bytes: ArrayBuffer): string {
  let out = "";
  for (const b of new Uint8Array(bytes)) out += b.toString(16).padStart(2, "0");
  return out;
}

/** hex SHA-256 of `data`. */
export async function sha256HexWeb(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? utf8.encode(data) : data;
  return hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

async function hmac(key: Uint8Array | string, data: string): Promise<ArrayBuffer> {
  const raw = typeof key === "string" ? utf8.encode(key) : key;
  const k = await crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return crypto.subtle.sign("HMAC", k, utf8.encode(data));
}

/** One key per (secret, day, region, service), as sigv4.ts keeps it. */
const keys = new Map<string, Promise<Uint8Array>>();

function signingKey(secret: string, day: string, region: string, service: string): Promise<Uint8Array> {
  const id = `${day}/${region}/${service}/${secret}`;
  let k = keys.get(id);
  if (!k) {
    if (keys.size > 16) keys.clear();
    k = (async () => {
      let key = new Uint8Array(await hmac(`AWS4${secret}`, day));
      for (const part of [region, service, "aws4_request"]) key = new Uint8Array(await hmac(key, part));
      return key;
    })();
    keys.set(id, k);
    k.catch(() => keys.delete(id));
  }
  return k;
}

/** The headers a request needs, as sigv4.ts's `signV4` gives them: signed with WebCrypto. */
export async function signV4Web(r: SignInput): Promise<Record<string, string>> {
  const c = canonicalRequest(r);
  const key = await signingKey(r.credentials.secretAccessKey, c.day, c.region, c.service);
  const signature = hex(await hmac(key, stringToSign(c, await sha256HexWeb(c.canonical))));
  return signedHeaders(c, r.credentials.accessKeyId, signature);
}
