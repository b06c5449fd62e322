/**
 * An export read one object per sample from a web page (issue 39): over http(s):// from
 * examples/browser/serve.ts, and from an S3 bucket (versitygw, test/_support/s3_server.ts) with
 * each request signed in the page by WebCrypto, or presigned by the test as a server would —
 * in Debian's headless Chromium over the bundle in dist/browser/. 200 Fashion-MNIST samples:
 * every one once, its bytes and label as stored. Then what a hostile or unprepared server does
 * to a page: an endless body and an oversized one (ERR_TOO_LARGE, naming the URL and the
 * limit), a server and a bucket without CORS headers (named so).
 */
import * as assert from "uvu/assert";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { openPage, type Page } from "../_support/browser.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { flood, ok, startHostileServer } from "../_support/hostile_http.ts";
import { NO_S3, presignQuery, startS3Server } from "../_support/s3_server.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { serveStatic } from "../../examples/browser/serve.ts";
import { exportDataset, exportShards } from "../../src/source/export/export.ts";
import { s3Sink } from "../../src/source/http/s3.ts";

const ROOT = runtime.cwd();
const DATASET = "fm";
const tmp = mkdtempSync(join(tmpdir(), "cassette-browser-sources-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const { store, ids, want } = await fashionMnistStore(join(tmp, "fm.sqlite"), DATASET, 100);
await exportDataset(store, DATASET, join(tmp, "objects"));
const web = await serveStatic(ROOT, 0, { "/objects/": join(tmp, "objects") });
afterAll(() => web.close());
const PAGE_ORIGIN = web.url.slice(0, -1);
const s3 = NO_S3 ? undefined : await startS3Server({ corsAllowOrigin: PAGE_ORIGIN });
afterAll(() => s3?.close());
if (s3) {
  await exportDataset(store, DATASET, s3.url("cassette-page", "exports/fm"), { s3: { credentials: s3.credentials, createBucket: true } });
  // The same samples as WebDataset shards of 64 beside them, for wds:s3://.
  const sink = await s3Sink(s3.url("cassette-page", "shards"), { credentials: s3.credentials });
  await exportShards(store, DATASET, sink, { seed: 3, maxSamples: 64 });
  await sink.close();
}
await store.close();

/** FNV-1a of the bytes: the same function runs in the page. */
const FNV = `(b) => { let h = 0x811c9dc5; for (let i = 0; i < b.length; i++) { h ^= b[i]; h = Math.imul(h, 0x01000193) >>> 0; } return h; }`;
const fnv: (b: Uint8Array) => number = (0, eval)(FNV);

type Read = { ok: boolean; seen?: [string, number, number][]; code?: string; message?: string };

/**
 * In the page: `open(address, { mode: "read", …options })` (options as a JS expression, so a
 * function can be given), one epoch of the Loader over it in batches of 32; each sample's id,
 * label and bytes' hash, or the error's code and message.
 */
function readInPage(page: Page, address: string, options: string | "address", pageIds: string[] = ids): Promise<Read> {
  // "address": the Loader is given the address itself, and opens it in its read workers (module workers).
  const store = options === "address" ? JSON.stringify(address) : `await open(${JSON.stringify(address)}, { mode: "read", dataset: "fm", ...(${options}) })`;
  return page.evaluate<Read>(`import("/dist/browser/browser.js").then(async ({ open, Loader }) => {
    const fnv = ${FNV};
    let loader;
    try {
      const source = ${store};
      loader = new Loader({ store: source, dataset: "fm", ids: ${JSON.stringify(pageIds)}, batchSize: 32, seed: 5, retries: 0 });
      const seen = [];
      for await (const b of loader.epoch(0)) {
        for (let i = 0; i < b.ids.length; i++) seen.push([b.ids[i], b.labels[i], fnv(b.data.subarray(b.offsets[i], b.offsets[i + 1]))]);
      }
      return { ok: true, seen };
    } catch (e) {
      return { ok: false, code: e.code, message: e.message };
    } finally {
      await loader?.close().catch(() => {});
    }
  })`);
}

/** Every id once, each with its stored label and bytes. */
function assertAsStored(run: Read, page: Page): void {
  assert.ok(run.ok, `the page failed: ${run.code} ${run.message}\n${page.console.join("\n")}`);
  const seen = run.seen!;
  assert.is(seen.length, ids.length, "as many samples as the export holds");
  assert.equal(seen.map(([id]) => id).sort(), [...ids].sort(), "each id once");
  for (const [id, label, hash] of seen) {
    const s = want.get(id)!;
    assert.is(label, s.label, `the label of ${id}`);
    assert.is(hash, fnv(s.data), `the bytes of ${id}`);
  }
}

let opened: Page | undefined;
async function page(): Promise<Page> {
  assert.ok(existsSync(join(ROOT, "dist/browser/browser.js")), "dist/browser/ is not built: run `bun build.ts` first");
  if (!opened) {
    opened = await openPage(undefined, { timeoutMs: 30_000 });
    afterAll(() => opened?.close());
    // A page of the static server's origin, cross-origin isolated as the example's.
    await opened.goto(`${web.url}examples/browser/index.html?index=none`);
  }
  return opened;
}

test("a page reads an export over http:// one object per sample (fetch), through open() and in the Loader's read workers: every sample once, its bytes and label as stored", async () => {
  const p = await page();
  const before = web.requests.length;
  assertAsStored(await readInPage(p, `${web.url}objects`, "{}"), p);
  const asked = web.requests.slice(before).filter((r) => r.path.startsWith("/objects/"));
  assert.is(asked.filter((r) => r.path === "/objects/labels.json").length, 1, "labels.json once");
  assert.is(asked.length, ids.length + 1, "one GET per sample");
  // The address itself to the Loader: its read workers (module workers) open it, each over fetch.
  const w0 = web.requests.length;
  assertAsStored(await readInPage(p, `${web.url}objects`, "address"), p);
  assert.ok(web.requests.slice(w0).some((r) => r.path === "/dist/browser/read/read_worker.js"), "read workers started");
}, { timeoutMs: 60_000 });

test("a page reads an export from an S3 bucket (versitygw), each request signed with WebCrypto, or presigned by a server, and WebDataset shards from it (wds:s3://): every sample once, its bytes and label as stored", async () => {
  const p = await page();
  const url = s3!.url("cassette-page", "exports/fm");
  assertAsStored(await readInPage(p, url, `{ s3: { credentials: ${JSON.stringify(s3!.credentials)} } }`), p);
  // Presigned: the page holds no secret; a server (here the test, ahead of time) signs each GET's query.
  const endpoint = new URL(s3!.endpoint);
  const presigned: Record<string, string> = {};
  for (const key of [...ids, "labels.json"]) {
    const path = `/cassette-page/exports/fm/${key}`;
    presigned[path] = presignQuery(endpoint.host, path, s3!.credentials);
  }
  assertAsStored(await readInPage(p, url, `{ s3: { presign: (path) => (${JSON.stringify(presigned)})[path] } }`), p);
  // WebDataset shards in the bucket: the index and each shard signed in the page, a Range for each resume.
  assertAsStored(await readInPage(p, `wds:${s3!.url("cassette-page", "shards/fm.index.json")}`, `{ s3: { credentials: ${JSON.stringify(s3!.credentials)} } }`), p);
  // A wrong key: versitygw refuses it without CORS headers, so the page cannot read why; the error says to check the credentials.
  const bad = await readInPage(p, url, `{ s3: { credentials: { accessKeyId: ${JSON.stringify(s3!.credentials.accessKeyId)}, secretAccessKey: "not-the-secret" } } }`);
  assert.is(bad.code, "ERR_STORE_UNREACHABLE", bad.message);
  assert.match(bad.message!, /Cannot get s3:\/\/cassette-page\/exports\/fm\/labels\.json: .*left them off an error answer.*check the credentials/);
  // Without credentials a page has nowhere to find them (no environment, no ~/.aws).
  const none = await readInPage(p, url, "{}");
  assert.is(none.code, "ERR_STORE_AUTH", none.message);
  assert.match(none.message!, /in a browser as no credentials were given/);
}, { skip: NO_S3, timeoutMs: 90_000 });

test("a hostile server: an endless body and one announced over the limit are ERR_TOO_LARGE naming the URL and the limit, not a hang nor a tab out of memory; a server and a bucket without CORS headers are named so", async () => {
  const p = await page();
  const cors = { "Access-Control-Allow-Origin": "*" };
  const endless = flood({ headers: cors, cap: 2 ** 40 });
  const huge = flood({ announced: 2 ** 40, headers: cors });
  const labels = JSON.stringify({ format: "cassette-labels", version: 1, dataset: "fm", count: 2, labels: { endless: 1, huge: 2 } });
  const srv = await startHostileServer({ "/d/labels.json": ok(labels, cors), "/d/endless": endless, "/d/huge": huge });
  try {
    // The source stays open: the page must drop the endless response itself, not by closing.
    const one = await p.evaluate<{ code: string; message: string }>(`import("/dist/browser/browser.js").then(async ({ open }) => {
      globalThis.endlessSource = await open("${srv.origin}/d?maxsample=1MiB", { mode: "read", dataset: "fm" });
      const e = await new Promise((done) => globalThis.endlessSource.fetch("endless", (err) => done(err)));
      return { code: e?.code, message: e?.message };
    })`);
    assert.is(one.code, "ERR_TOO_LARGE", one.message);
    assert.match(one.message!, new RegExp(`Cannot get sample endless from ${srv.origin}/d/endless as it is over the 1048576-byte \\(1 MiB\\) limit \\(maxSampleBytes\\): more than 1048576 bytes arrived with no Content-Length`));
    await endless.ended(); // (a page that kept reading would send up to 1 TiB: the test's time limit fails it)
    assert.ok(endless.sent() < 64 << 20, `the page stopped the endless body (${endless.sent()} bytes sent)`);
    await p.evaluate(`globalThis.endlessSource.close()`);
    const two = await readInPage(p, `${srv.origin}/d`, "{}", ["huge"]);
    assert.is(two.code, "ERR_TOO_LARGE", two.message);
    assert.match(two.message!, new RegExp(`Cannot get sample huge from ${srv.origin}/d/huge as it is over the 67108864-byte \\(64 MiB\\) limit \\(maxSampleBytes\\): its Content-Length announces ${2 ** 40} bytes`));
  } finally {
    await srv.close();
  }
  // The same export from a server that sends no CORS headers: the browser withholds the answer.
  const bare = await serveStatic(ROOT, 0, { "/objects/": join(tmp, "objects") }, { cors: false });
  try {
    const blocked = await readInPage(p, `${bare.url}objects`, "{}");
    assert.is(blocked.code, "ERR_STORE_UNREACHABLE", blocked.message);
    assert.match(blocked.message!, new RegExp(`Cannot get ${bare.url}objects/labels\\.json: .*does not answer this page's origin \\(${PAGE_ORIGIN.replace(/\./g, "\\.")}\\) with CORS headers`));
    assert.ok(bare.requests.some((r) => r.path === "/objects/labels.json" && r.status === 200), "the server answered; the browser kept the answer from the page");
  } finally {
    await bare.close();
  }
  if (!s3) return;
  // A bucket without a CORS rule for the page: the preflight of a signed GET fails.
  const closed = await startS3Server();
  try {
    const blocked = await readInPage(p, closed.url("cassette-page", "exports/fm"), `{ s3: { credentials: ${JSON.stringify(closed.credentials)} } }`);
    assert.is(blocked.code, "ERR_STORE_UNREACHABLE", blocked.message);
    assert.match(blocked.message!, new RegExp(`Cannot get s3://cassette-page/exports/fm/labels\\.json: .*does not answer this page's origin .* with CORS headers`));
  } finally {
    await closed.close();
  }
}, { timeoutMs: 90_000 });
