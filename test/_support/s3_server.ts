/**
 * A real S3-compatible server for tests: versitygw (built by tools/setup.sh through
 * tools/s3/versitygw.sh) over a temp folder, on a free 127.0.0.1 port, with fresh keys, as a
 * child process. Virtual-hosted requests name the bucket in the Host header under 127.0.0.1
 * (`--virtual-domain`), so both address styles reach it without DNS.
 *
 *   const s3 = await startS3Server();
 *   const url = s3.url("bucket", "prefix");       // s3://bucket/prefix?endpoint=http://127.0.0.1:PORT
 *   await openS3Source(url, { credentials: s3.credentials });
 *   afterAll(() => s3.close());
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../tools/proxy/process.ts";
import type { AwsCredentials } from "../../src/source/http/sigv4.ts";
import { uriEncode } from "../../src/source/http/sigv4_request.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The built server's path (tools/s3/versitygw.sh path). */
export const VERSITYGW = execFileSync("bash", [join(ROOT, "tools/s3/versitygw.sh"), "path"], { encoding: "utf8" }).trim();
/** A skip reason when it is not built. */
export const NO_S3: string | false = existsSync(VERSITYGW) ? false : `versitygw is not built (${VERSITYGW}): run bash tools/setup.sh or bash tools/s3/versitygw.sh build`;

export interface S3Server {
  /** http://127.0.0.1:PORT */
  readonly endpoint: string;
  readonly port: number;
  readonly credentials: AwsCredentials;
  /** The folder it serves: one sub-folder per bucket. */
  readonly root: string;
  /** `s3://BUCKET/PREFIX?endpoint=…` (and `extra` options). */
  url(bucket: string, prefix?: string, extra?: string): string;
  /** SIGKILL, then start again on the same port over the same folder. */
  kill(): void;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** `corsAllowOrigin`: the Access-Control-Allow-Origin it answers (versitygw's --cors-allow-origin; none by default), for pages. */
export async function startS3Server(o: { corsAllowOrigin?: string } = {}): Promise<S3Server> {
  const root = mkdtempSync(join(tmpdir(), "cassette-s3-"));
  const credentials = { accessKeyId: `k${randomBytes(6).toString("hex")}`, secretAccessKey: randomBytes(18).toString("base64url") };
  let child: ChildProcess | undefined;
  let port = 0;
  const launch = async () => {
    const proc = spawn(VERSITYGW, ["--access", credentials.accessKeyId, "--secret", credentials.secretAccessKey, "--port", `127.0.0.1:${port}`,
      "--keep-alive", "--quiet", "--virtual-domain", "127.0.0.1", ...(o.corsAllowOrigin ? ["--cors-allow-origin", o.corsAllowOrigin] : []), "posix", root], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    proc.stderr!.on("data", (d) => (stderr += d));
    proc.once("error", () => {});
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    child = proc;
    for (let i = 0; i < 200; i++) {
      const state = await Promise.race([exited.then(() => "exited" as const), accepts(port).then((ok) => (ok ? "up" as const : "down" as const))]);
      if (state === "up") return;
      if (state === "exited") throw Object.assign(new Error(`versitygw exited at start: ${stderr.trim()}`), { inUse: /address already in use/i.test(stderr) });
      await new Promise((r) => setTimeout(r, 25));
    }
    proc.kill("SIGKILL");
    throw new Error(`versitygw did not accept connections on 127.0.0.1:${port} within 5 s`);
  };
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (e) {
      if (!(e as { inUse?: boolean }).inUse || attempt >= 4) {
        rmSync(root, { recursive: true, force: true });
        throw e;
      }
    }
  }
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async (signal: NodeJS.Signals) => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    proc.kill(signal);
    await exited;
  };
  return {
    endpoint, port, credentials, root,
    url: (bucket, prefix = "", extra = "") => `s3://${bucket}${prefix ? `/${prefix}` : ""}?endpoint=${endpoint}${extra ? `&${extra}` : ""}`,
    kill: () => void child?.kill("SIGKILL"),
    start: launch,
    close: async () => {
      await stop("SIGTERM");
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/**
 * A presigned GET's query string, as a server that holds the secret would make it (SigV4 in the
 * query: https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html).
 */
export function presignQuery(host: string, path: string, credentials: { accessKeyId: string; secretAccessKey: string }): string {
  const date = new Date().toISOString().replace(/[-:]|\.\d{3}/g, "");
  const scope = `${date.slice(0, 8)}/us-east-1/s3/aws4_request`;
  const query: Record<string, string> = {
    "X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": `${credentials.accessKeyId}/${scope}`, "X-Amz-Date": date, "X-Amz-Expires": "600", "X-Amz-SignedHeaders": "host",
  };
  const canonicalQuery = Object.keys(query).sort().map((k) => `${uriEncode(k)}=${uriEncode(query[k])}`).join("&");
  const canonical = ["GET", path, canonicalQuery, `host:${host}\n`, "host", "UNSIGNED-PAYLOAD"].join("\n");
  const toSign = `AWS4-HMAC-SHA256\n${date}\n${scope}\n${createHash("sha256").update(canonical).digest("hex")}`;
  let key: Buffer = Buffer.from(`AWS4${credentials.secretAccessKey}`);
  for (const part of scope.split("/")) key = createHmac("sha256", key).update(part).digest();
  return `${canonicalQuery}&X-Amz-Signature=${createHmac("sha256", key).update(toSign).digest("hex")}`;
}
