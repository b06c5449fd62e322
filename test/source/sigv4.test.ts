/**
 * SigV4 against AWS's own worked examples (the S3 API reference, "Examples of signature
 * calculations": GET Object with a Range, PUT Object, GET Bucket Lifecycle, GET Bucket list),
 * and the URI encoding it rests on. A real server checks the rest (s3.test.ts).
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { type SignInput, sha256Hex, signV4, uriEncode } from "../../src/source/http/sigv4.ts";
import { sha256HexWeb, signV4Web } from "../../src/source/http/sigv4_web.ts";

const credentials = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };
const base = { host: "examplebucket.s3.amazonaws.com", region: "us-east-1", credentials, now: Date.UTC(2013, 4, 24) };
const signature = (h: Record<string, string>) => /Signature=([0-9a-f]{64})$/.exec(h.authorization)![1];

test("AWS's examples: GET Object with Range, PUT Object, GET ?lifecycle, GET ?max-keys&prefix", () => {
  const get = signV4({ ...base, method: "GET", path: "/test.txt", headers: { range: "bytes=0-9" } });
  assert.is(signature(get), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  assert.is(get["x-amz-date"], "20130524T000000Z");
  assert.is(get["x-amz-content-sha256"], sha256Hex(""));
  assert.match(get.authorization, /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/20130524\/us-east-1\/s3\/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, /);
  const put = signV4({
    ...base, method: "PUT", path: "/test%24file.text", payloadHash: sha256Hex("Welcome to Amazon S3."),
    headers: { date: "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY" },
  });
  assert.is(signature(put), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  assert.is(signature(signV4({ ...base, method: "GET", path: "/", query: { lifecycle: "" } })), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
  assert.is(signature(signV4({ ...base, method: "GET", path: "/", query: { prefix: "J", "max-keys": "2" } })), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
});

test("a session token is sent and signed; another day, region or secret signs differently", () => {
  const a = signV4({ ...base, method: "GET", path: "/k", credentials: { ...credentials, sessionToken: "tok en" } });
  assert.is(a["x-amz-security-token"], "tok en");
  assert.match(a.authorization, /SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/);
  const s = (o: Partial<typeof base>) => signature(signV4({ ...base, ...o, method: "GET", path: "/k" }));
  const ref = s({});
  assert.is.not(s({ now: base.now + 86_400_000 }), ref);
  assert.is.not(s({ region: "eu-west-1" }), ref);
  assert.is.not(s({ credentials: { ...credentials, secretAccessKey: "x" } }), ref);
  assert.is(s({}), ref, "the cached signing key gives the same signature");
});

test("uriEncode: unreserved characters stay, the rest is %XX of UTF-8 bytes; '/' only when asked", () => {
  assert.is(uriEncode("AZaz09-_.~"), "AZaz09-_.~");
  assert.is(uriEncode("a b+c/d"), "a%20b%2Bc%2Fd");
  assert.is(uriEncode("a b/c", true), "a%20b/c");
  assert.is(uriEncode("é*"), "%C3%A9%2A");
});

test("WebCrypto's signer (sigv4_web.ts, a page's) gives node:crypto's headers to the byte: AWS's examples, then random requests", async () => {
  const cases: SignInput[] = [
    { ...base, method: "GET", path: "/test.txt", headers: { range: "bytes=0-9" } },
    { ...base, method: "PUT", path: "/test%24file.text", payloadHash: sha256Hex("Welcome to Amazon S3."), headers: { date: "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY" } },
    { ...base, method: "GET", path: "/", query: { prefix: "J", "max-keys": "2" } },
  ];
  // Random requests: unicode keys and values, several headers, a token, other days and regions.
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
  const word = () => Array.from({ length: 1 + rnd(12) }, () => "aZ09 -_.~/é+*%ü字"[rnd(16)]).join("");
  for (let i = 0; i < 40; i++) {
    const headers: Record<string, string> = {};
    for (let h = rnd(4); h > 0; h--) headers[`x-amz-meta-${word().replace(/[^a-z0-9]/gi, "") || "k"}`] = word();
    cases.push({
      method: ["GET", "PUT", "HEAD"][rnd(3)], host: `${word().replace(/[^a-z0-9]/gi, "") || "h"}.example:9000`, path: `/${uriEncode(word(), true)}`,
      query: rnd(2) ? { [word()]: word(), [word()]: word() } : undefined, headers, region: ["us-east-1", "eu-west-3"][rnd(2)],
      credentials: { accessKeyId: word(), secretAccessKey: word(), ...(rnd(2) ? { sessionToken: word() } : {}) }, now: Date.UTC(2020, rnd(12), 1 + rnd(28), rnd(24)),
      ...(rnd(2) ? { payloadHash: sha256Hex(word()) } : {}),
    });
  }
  for (const c of cases) assert.equal(await signV4Web(c), signV4(c), JSON.stringify(c));
  assert.is(await sha256HexWeb("Welcome to Amazon S3."), sha256Hex("Welcome to Amazon S3."));
  assert.is(signature(await signV4Web(cases[0])), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
});
