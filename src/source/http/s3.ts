/**
 * S3 and S3-compatible stores (MinIO, versitygw, Ceph, R2…): `s3://BUCKET/PREFIX` holds the
 * layout `cassette export` writes (file.ts: PREFIX/<id> and PREFIX/labels.json), read through
 * the HTTP source's pool, limits and answers (http.ts), each request signed with AWS Signature
 * V4 as it is sent (sigv4.ts); `S3Client` writes it (export) and lists, gets, puts and deletes
 * objects. No AWS SDK.
 *
 * Where requests go: `endpoint=` (or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, or endpoint_url
 * in the profile's config) for an S3-compatible server, else AWS's https://s3.REGION.amazonaws.com.
 * How the bucket is named: `style=path` (/BUCKET/KEY; the default with an endpoint, as most
 * S3-compatible servers want) or `style=virtual` (Host: BUCKET.HOST, /KEY; the default for
 * AWS). Either way the connection goes to the endpoint's address: with virtual hosting the
 * Host header (and TLS server name) carries the bucket, as a wildcard DNS name would.
 *
 * Credentials, the first found: the address's `profile=` from the shared files; the
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); the profile
 * AWS_PROFILE names, or "default", in AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials.
 * `anonymous=1` sends no signature (public buckets). Region: `region=`, AWS_REGION,
 * AWS_DEFAULT_REGION, the profile's `region` in AWS_CONFIG_FILE or ~/.aws/config, us-east-1.
 *
 * Errors S3 names in its XML body become cassette's, none retried: a refused signature or
 * key (SignatureDoesNotMatch, InvalidAccessKeyId, ExpiredToken, AccessDenied…) is
 * ERR_STORE_AUTH; RequestTimeTooSkewed is ERR_CLOCK_SKEW, with how far this clock is from the
 * server's; NoSuchBucket and a bucket in another region are ERR_STORE_ADDRESS. NoSuchKey is
 * the source's usual "Cannot find sample ID". 5xx, SlowDown and network failures stay
 * retryable (ERR_STORE_UNREACHABLE).
 *
 * @example
 * ```ts
 * import { parseS3Url } from "./s3.ts";
 * const a = parseS3Url("s3://my-bucket/datasets/fm?endpoint=http://127.0.0.1:7070&region=eu-west-1");
 * console.log(a.bucket, a.prefix, a.params.endpoint); // my-bucket datasets/fm http://127.0.0.1:7070
 * ```
 */
// Bun answers a bare "undici" with its own stub (see http.ts): the file path reaches the package.
import undici from "undici/index.js";
import { homedir } from "node:os";
import { join } from "node:path";
import { runtime } from "../../../runtime-adapters/index.ts";
import { CassetteError } from "../../errors.ts";
import { type HttpSource, type HttpTarget, openHttpTarget, readCa, retryAfter } from "./http.ts";
import { type Retryable, retryableStatus, storeError } from "../retryable.ts";
import type { ObjectSink } from "../../dataset/object_sink.ts";
import { readBoundedBody } from "../../util/bounded_body.ts";
import { type AwsCredentials, EMPTY_SHA256, sha256Hex, signV4, uriEncode } from "./sigv4.ts";
import { bucketOf, explainS3, hostHeader, parseS3Url, type S3Bucket, type S3Options, s3TargetOf, signInput, xmlText } from "./s3_target.ts";

export { explainS3, parseS3Url } from "./s3_target.ts";
export type { S3Bucket, S3Options } from "./s3_target.ts";

const { Pool } = undici;

/** Resolves endpoint, style, region and credentials for an `s3://` address (options override the address). */
export async function resolveS3(url: string, o: S3Options = {}): Promise<{ bucket: S3Bucket; opts: S3Options; caFile?: string }> {
  const parsed = parseS3Url(url);
  const opts: S3Options = { ...parsed.params, ...o };
  const env = (n: string) => runtime.env(n) || undefined;
  const profileName = opts.profile ?? env("AWS_PROFILE") ?? "default";
  const config = await readIni(env("AWS_CONFIG_FILE") ?? join(homedir(), ".aws", "config"));
  const profileConfig = config[profileName === "default" ? "default" : `profile ${profileName}`] ?? config[profileName] ?? {};
  const region = opts.region ?? env("AWS_REGION") ?? env("AWS_DEFAULT_REGION") ?? profileConfig.region ?? "us-east-1";
  const endpoint = opts.endpoint ?? env("AWS_ENDPOINT_URL_S3") ?? env("AWS_ENDPOINT_URL") ?? profileConfig.endpoint_url;
  let credentials: AwsCredentials | undefined;
  let from = "";
  if (opts.presign) from = "the 'presign' option";
  else if (opts.credentials === "anonymous") from = "anonymous (anonymous=1: requests unsigned)";
  else if (opts.credentials) credentials = opts.credentials, from = "the 'credentials' option";
  else {
    const id = env("AWS_ACCESS_KEY_ID"), secret = env("AWS_SECRET_ACCESS_KEY");
    if (!opts.profile && id && secret) {
      credentials = { accessKeyId: id, secretAccessKey: secret, ...(env("AWS_SESSION_TOKEN") ? { sessionToken: env("AWS_SESSION_TOKEN") } : {}) };
      from = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";
    } else {
      const file = env("AWS_SHARED_CREDENTIALS_FILE") ?? join(homedir(), ".aws", "credentials");
      const p = (await readIni(file))[profileName] ?? {};
      const pid = p.aws_access_key_id ?? profileConfig.aws_access_key_id, psecret = p.aws_secret_access_key ?? profileConfig.aws_secret_access_key;
      if (pid && psecret) {
        credentials = { accessKeyId: pid, secretAccessKey: psecret };
        const token = p.aws_session_token ?? profileConfig.aws_session_token;
        if (token) credentials.sessionToken = token;
        from = `profile '${profileName}' of ${file}`;
      } else {
        throw new CassetteError(
          "ERR_STORE_AUTH",
          `Cannot open ${parsed.shown} as no credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile '${profileName}' aws_access_key_id and aws_secret_access_key in ${file}, or read a public bucket with anonymous=1`,
        );
      }
    }
  }
  return {
    bucket: bucketOf(parsed, opts, { region, ...(endpoint ? { endpoint } : {}), ...(credentials ? { credentials } : {}), from }),
    opts,
    ...(parsed.caFile !== undefined ? { caFile: parsed.caFile } : {}),
  };
}

/** Opens `s3://BUCKET/PREFIX` as a Source: labels.json read once, each sample one signed GET. */
export async function openS3Source(url: string, o: S3Options = {}): Promise<HttpSource> {
  const { target, opts, caFile } = await s3Target(url, o);
  return openHttpTarget(target, opts, caFile);
}

/** `s3://BUCKET/PREFIX` as an HttpTarget: its requests signed, S3's errors named (the HTTP source's, and a shard set's streams). */
export async function s3Target(url: string, o: S3Options = {}): Promise<{ target: HttpTarget; opts: S3Options; caFile?: string }> {
  const { bucket: b, opts, caFile } = await resolveS3(url, o);
  const presign = opts.presign;
  const target = s3TargetOf(b, presign ? () => hostHeader(b) : (method, path) => signedHeaders(b, method, path));
  // A presigned request carries its signature in the query string.
  if (presign) target.query = (_method, path) => presign(path);
  return { target, opts, ...(caFile !== undefined ? { caFile } : {}) };
}

/** The headers of one request to `b` (host included when it is not the origin's). */
function signedHeaders(b: S3Bucket, method: string, path: string, extra: Record<string, string> = {}, payloadHash = EMPTY_SHA256): Record<string, string> {
  const input = signInput(b, method, path, extra, payloadHash);
  return { ...(input ? signV4(input) : extra), ...hostHeader(b) };
}

/** INI sections of an AWS shared file ({} when it is absent). */
async function readIni(path: string): Promise<Record<string, Record<string, string>>> {
  let text: string;
  try {
    text = new TextDecoder().decode(await runtime.readFile(path));
  } catch {
    return {};
  }
  const out: Record<string, Record<string, string>> = {};
  let section: Record<string, string> | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const head = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (head) {
      section = out[head[1]] ??= {};
      continue;
    }
    const eq = line.indexOf("=");
    if (section && eq > 0) section[line.slice(0, eq).trim().toLowerCase()] = line.slice(eq + 1).trim();
  }
  return out;
}

/** An object as a listing names it: its key (relative to the prefix) and size. */
export interface S3Object {
  key: string;
  size: number;
}

/**
 * Objects of one bucket under its prefix, for writers (export) and tools: put, get, head, list,
 * delete. Keys are relative to the prefix. Retryable failures (5xx, SlowDown, network) are
 * retried up to `retries` times with backoff; the rest are named at once.
 */
export class S3Client {
  readonly bucket: S3Bucket;
  readonly #pool: InstanceType<typeof Pool>;
  readonly #retries: number;

  private constructor(bucket: S3Bucket, pool: InstanceType<typeof Pool>, retries: number) {
    this.bucket = bucket;
    this.#pool = pool;
    this.#retries = retries;
  }

  static async open(url: string, o: S3Options & { retries?: number } = {}): Promise<S3Client> {
    const { bucket, opts, caFile } = await resolveS3(url, o);
    const cas = await readCa(opts.ca, caFile, bucket.shown);
    const connect = { ...(cas ? { ca: cas } : {}), ...(bucket.servername ? { servername: bucket.servername } : {}) };
    const pool = new Pool(bucket.origin, { connections: opts.connections ?? 8, ...(Object.keys(connect).length ? { connect } : {}) });
    return new S3Client(bucket, pool, o.retries ?? 4);
  }

  /** s3://BUCKET/PREFIX/KEY, for messages. */
  where(key = ""): string {
    return `${this.bucket.shown}${key ? `/${key}` : ""}`;
  }

  /** Writes an object whole (S3's PUT replaces atomically: a reader sees the old or the new bytes). */
  async put(key: string, data: Uint8Array, contentType = "application/octet-stream"): Promise<void> {
    const r = await this.#request("PUT", key, { body: data, headers: { "content-type": contentType } });
    if (r.status !== 200) throw this.#error(r, `Cannot put ${this.where(key)}`);
  }

  /** An object's bytes, or undefined where there is none; one over `maxBytes` is ERR_TOO_LARGE (its body not read). */
  async get(key: string, maxBytes = Infinity): Promise<Uint8Array | undefined> {
    const r = await this.#request("GET", key, { maxBytes });
    if (r.status === 404 && (r.code === undefined || r.code === "NoSuchKey")) return undefined;
    if (r.status !== 200) throw this.#error(r, `Cannot get ${this.where(key)}`);
    return r.body;
  }

  async delete(key: string): Promise<void> {
    const r = await this.#request("DELETE", key);
    if (r.status !== 204 && r.status !== 200 && r.status !== 404) throw this.#error(r, `Cannot delete ${this.where(key)}`);
  }

  /** Every object under the prefix (and `under` it), by key relative to the prefix; ListObjectsV2, page by page. */
  async *list(under = ""): AsyncGenerator<S3Object> {
    const root = this.bucket.prefix ? `${this.bucket.prefix}/` : "";
    let token: string | undefined;
    do {
      const query: Record<string, string> = { "list-type": "2", prefix: root + under, ...(token ? { "continuation-token": token } : {}) };
      const r = await this.#request("GET", "", { query, bucketRoot: true });
      if (r.status !== 200) throw this.#error(r, `Cannot list ${this.where(under)}`);
      const xml = new TextDecoder().decode(r.body);
      for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        const key = xmlText(m[1], "Key") ?? "";
        yield { key: key.slice(root.length), size: Number(xmlText(m[1], "Size") ?? 0) };
      }
      token = xmlText(xml, "IsTruncated") === "true" ? xmlText(xml, "NextContinuationToken") : undefined;
    } while (token);
  }

  /** Makes the bucket (the one it was opened for); one already there and owned is fine. */
  async createBucket(): Promise<void> {
    const r = await this.#request("PUT", "", { bucketRoot: true });
    if (r.status !== 200 && r.code !== "BucketAlreadyOwnedByYou") throw this.#error(r, `Cannot create bucket '${this.bucket.bucket}'`);
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  #error(r: Answer, doing: string): CassetteError & Retryable {
    const named = explainS3(r.status, r.headers, r.body, doing, this.bucket);
    if (named) return named;
    const again = retryableStatus(r.status);
    return storeError(again ? "ERR_STORE_UNREACHABLE" : "ERR_STORE", `${doing}: the server answered HTTP ${r.status}${r.code ? ` (${r.code})` : ""}`, again);
  }

  async #request(method: string, key: string, o: { body?: Uint8Array; headers?: Record<string, string>; query?: Record<string, string>; bucketRoot?: boolean; maxBytes?: number } = {}): Promise<Answer> {
    const b = this.bucket;
    const objectKey = o.bucketRoot ? "" : (b.prefix ? `${b.prefix}/` : "") + key;
    const path = `${b.base}/${uriEncode(objectKey, true)}`;
    const qs = Object.entries(o.query ?? {}).map(([k, v]) => `${uriEncode(k)}=${uriEncode(v)}`).join("&");
    for (let attempt = 0;; attempt++) {
      const headers = { ...o.headers, ...(o.body ? { "content-length": String(o.body.length) } : {}) };
      const signed = signedHeaders(b, method, qs ? `${path}?${qs}` : path, headers, o.body ? sha256Hex(o.body) : EMPTY_SHA256);
      let answer: Answer;
      try {
        const res = await this.#pool.request({ method: method as "GET", path: qs ? `${path}?${qs}` : path, headers: signed, ...(o.body ? { body: o.body } : {}) });
        const max = res.statusCode < 300 ? o.maxBytes ?? Infinity : 1 << 16;
        const body = await readBoundedBody(res.body, Number(res.headers["content-length"]), max, (why) =>
          storeError("ERR_TOO_LARGE", `Cannot get ${this.where(key)} as ${why}, over the ${max}-byte limit`, false));
        answer = { status: res.statusCode, headers: res.headers as Record<string, string | string[]>, body };
        if (res.statusCode >= 300) answer.code = xmlText(new TextDecoder().decode(body), "Code");
      } catch (e) {
        if (e instanceof CassetteError) throw e; // ours: a limit
        if (attempt < this.#retries) {
          await sleep(100 * 2 ** attempt);
          continue;
        }
        throw storeError("ERR_STORE_UNREACHABLE", `Cannot ${method} ${this.where(key)}: ${(e as Error).message}`, true, { cause: e });
      }
      const again = answer.status >= 500 || answer.code === "SlowDown";
      if (again && attempt < this.#retries) {
        await sleep(retryAfter(answer.headers["retry-after"]) ?? 100 * 2 ** attempt);
        continue;
      }
      return answer;
    }
  }
}

/**
 * `s3://BUCKET/PREFIX` as an export's destination (src/dataset/object_sink.ts): each object is
 * one PUT, which S3 makes visible whole or not at all, so no temporary names are needed. The
 * bucket must exist, unless `createBucket` (`cassette export --create-bucket`) makes it.
 */
export async function s3Sink(url: string, o: S3Options & { createBucket?: boolean } = {}): Promise<ObjectSink & { close(): Promise<void> }> {
  const client = await S3Client.open(url, o);
  if (o.createBucket) {
    try {
      await client.createBucket();
    } catch (e) {
      await client.close();
      throw e;
    }
  }
  // A missing bucket or refused credentials are named now, not at the first object.
  const probe = client.list()[Symbol.asyncIterator]();
  try {
    await probe.next();
  } catch (e) {
    await client.close();
    throw e;
  } finally {
    await probe.return?.(undefined);
  }
  return {
    where: client.where(),
    list: async () => {
      const names: string[] = [];
      for await (const obj of client.list()) if (!obj.key.includes("/")) names.push(obj.key);
      return names;
    },
    read: async function* (name: string) {
      const data = await client.get(name);
      if (data === undefined) throw new CassetteError("ERR_STORE", `Cannot read ${client.where(name)} as it does not exist`);
      yield data;
    },
    put: (name, data) => client.put(name, data),
    close: () => client.close(),
  };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Uint8Array;
  code?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
