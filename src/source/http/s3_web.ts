/**
 * s3:// in a web page: the bucket's objects through the HTTP source over `fetch` (http_web.ts),
 * each request signed with WebCrypto (sigv4_web.ts) by credentials the page gives. A page has no
 * environment and no ~/.aws files: the credentials come in the `credentials` option (or
 * `anonymous=1` for a public bucket, or presigned requests: `presign`), the endpoint and
 * region in the address or options (region us-east-1 by default). A virtual-hosted bucket is
 * asked at https://BUCKET.HOST, as a page cannot set the Host header. The bucket must answer
 * the page's origin with CORS headers (S3's PutBucketCors; versitygw's --cors-allow-origin),
 * allowing the Authorization, X-Amz-Date and X-Amz-Content-Sha256 request headers.
 */
import { CassetteError } from "../../errors.ts";
import type { HttpSource, HttpTarget } from "./http_source.ts";
import { openHttpTarget } from "./http_web.ts";
import { bucketOf, parseS3Url, type S3Options, s3TargetOf, signInput } from "./s3_target.ts";
import { signV4Web } from "./sigv4_web.ts";

/** Opens `s3://BUCKET/PREFIX` in a page: labels.json read once, each sample one signed GET. */
export function openS3Source(url: string, o: S3Options = {}): Promise<HttpSource> {
  const { target, opts } = s3WebTarget(url, o);
  return openHttpTarget(target, opts);
}

/** `s3://BUCKET/PREFIX` as a page's HttpTarget: each GET signed with WebCrypto or presigned, S3's errors named (the source's, and a shard set's: objects.browser.ts). */
export function s3WebTarget(url: string, o: S3Options = {}): { target: HttpTarget; opts: S3Options } {
  const parsed = parseS3Url(url);
  const opts: S3Options = { ...parsed.params, ...o };
  if (opts.profile !== undefined) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot open ${parsed.shown} with profile '${opts.profile}' in a browser: a page has no ~/.aws files; give the 'credentials' option, or 'presign', or anonymous=1 for a public bucket`);
  }
  const creds = opts.credentials === "anonymous" ? undefined : opts.credentials;
  if (!creds && opts.credentials !== "anonymous" && !opts.presign) {
    throw new CassetteError("ERR_STORE_AUTH", `Cannot open ${parsed.shown} in a browser as no credentials were given: a page has no environment nor ~/.aws files; give the 'credentials' option ({ accessKeyId, secretAccessKey }), or 'presign', or read a public bucket with anonymous=1`);
  }
  const from = creds ? "the 'credentials' option" : opts.presign ? "the 'presign' option" : "anonymous (anonymous=1: requests unsigned)";
  const b = bucketOf(parsed, opts, { region: opts.region ?? "us-east-1", ...(opts.endpoint ? { endpoint: opts.endpoint } : {}), ...(creds ? { credentials: creds } : {}), from, bucketInOrigin: true });
  const presign = opts.presign;
  const target = s3TargetOf(b, presign ? undefined : (method, path) => {
    const input = signInput(b, method, path);
    return input ? signV4Web(input) : {};
  });
  // A presigned request carries its signature in the query string.
  if (presign) target.query = (_method, path) => presign(path);
  return { target, opts };
}
