/**
 * Retryability is the error's own flag, set by the source that made it: over real sockets
 * (a small node:http server on port 0 serving an export's layout, answering chosen codes for
 * chosen ids), 403 and 404 are not retried and name the id; 503, 429 and 408 once, then 200,
 * are retried and the sample is delivered exactly once. The server counts the requests.
 */
import * as assert from "uvu/assert";
import { createServer } from "node:http";
import { afterAll, test } from "../_support/harness.ts";
import { openReadSource } from "../../src/read/open.ts";
import { formatLabels } from "../../src/source/files/file.ts";
import { isRetryable, storeError } from "../../src/source/retryable.ts";
import { RetrySource } from "../../src/read/retry.ts";
import { Loader } from "../../src/loader.ts";
import { CassetteError } from "../../src/errors.ts";

const ids = Array.from({ length: 40 }, (_, i) => `s${String(i).padStart(3, "0")}`);
const body = (id: string) => new TextEncoder().encode(`bytes of ${id}`);
/** id → the statuses its first requests answer, before 200. */
const script = new Map<string, number[]>();
const requests = new Map<string, number>();
const askedAt = new Map<string, number[]>();
const retryAfterHeader = new Map<string, string>();
const labels = formatLabels("toy", new Map(ids.map((id, i) => [id, i % 3])));

const server = createServer((req, res) => {
  const name = decodeURIComponent((req.url ?? "").replace(/^\/data\//, ""));
  if (name === "labels.json") return res.end(labels);
  const n = requests.get(name) ?? 0;
  requests.set(name, n + 1);
  askedAt.set(name, [...(askedAt.get(name) ?? []), performance.now()]);
  const codes = script.get(name) ?? [];
  if (n < codes.length) {
    res.statusCode = codes[n];
    if (retryAfterHeader.has(name)) res.setHeader("retry-after", retryAfterHeader.get(name)!);
    return res.end("no");
  }
  const b = body(name);
  res.setHeader("content-length", b.length);
  res.end(b);
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/data`;
afterAll(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));

async function readAll(loader: Loader): Promise<string[]> {
  const seen: string[] = [];
  for await (const b of loader.epoch(0)) {
    b.ids.forEach((id, i) => assert.equal([...b.data.subarray(b.offsets[i], b.offsets[i + 1])], [...body(id)], `bytes of ${id}`));
    seen.push(...b.ids);
  }
  return seen;
}

test("HTTP 403 and 404 are not retried: one request each, an error that names the id", async () => {
  for (const [status, code, re] of [[403, "ERR_STORE", /Cannot get .*\/data\/s005: it answered HTTP 403/], [404, "ERR_STORE", /Cannot find sample s005 .*answered HTTP 404/]] as const) {
    script.clear();
    requests.clear();
    script.set("s005", [status, status, status]);
    const loader = new Loader({ store: await openReadSource(url), ids, batchSize: 8, retries: 3 });
    try {
      await readAll(loader);
      assert.unreachable(`HTTP ${status} should end the epoch`);
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.is((e as CassetteError).code, code);
      assert.match((e as Error).message, /Cannot read sample s005 of epoch 0/);
      assert.match((e as Error).message, re);
      assert.not.match((e as Error).message, /attempts/);
    } finally {
      await loader.close();
    }
    assert.is(requests.get("s005"), 1, `HTTP ${status}: asked once`);
    assert.is(loader.stats().retries, 0);
  }
});

test("HTTP 503, 429 and 408 once, then 200: retried, and each sample delivered exactly once", async () => {
  script.clear();
  requests.clear();
  script.set("s001", [503]);
  script.set("s002", [429]);
  script.set("s003", [408, 503]);
  const loader = new Loader({ store: await openReadSource(url, "toy"), ids, batchSize: 8, retries: 3, seed: 4 });
  try {
    const seen = await readAll(loader);
    assert.is(seen.length, ids.length);
    assert.is(new Set(seen).size, ids.length);
    assert.equal([requests.get("s001"), requests.get("s002"), requests.get("s003"), requests.get("s004")], [2, 2, 3, 1]);
    assert.is(loader.stats().retries, 4);
    assert.is(loader.stats().errors, 0);
  } finally {
    await loader.close();
  }
});

test("a lasting 503 gives up after the retries, still retryable, naming the id's URL", async () => {
  script.clear();
  requests.clear();
  script.set("s009", [503, 503, 503]);
  const src = new RetrySource(await openReadSource(url, "toy"), { retries: 2, baseDelayMs: 1 });
  const err = await new Promise<Error | null>((r) => src.fetch("s009", (e) => r(e)));
  await src.close();
  assert.match(err!.message, /\/data\/s009: it answered HTTP 503 .*\(after 3 attempts\)/);
  assert.is(isRetryable(err), true);
  assert.is(src.retries, 2);
  assert.is(requests.get("s009"), 3);
});

test("isRetryable: the flag first; unflagged errors by kind", () => {
  assert.is(isRetryable(storeError("ERR_STORE_UNREACHABLE", "x", false)), false, "the flag wins over the code");
  assert.is(isRetryable(storeError("ERR_STORE", "x", true)), true);
  assert.is(isRetryable(new CassetteError("ERR_STORE", "Cannot find sample x")), false);
  assert.is(isRetryable(new CassetteError("ERR_MALFORMED_INPUT", "x")), false);
  assert.is(isRetryable(new CassetteError("ERR_STORE_UNREACHABLE", "x")), true);
  assert.is(isRetryable(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" })), true);
  assert.is(isRetryable(Object.assign(new Error("Invalid query"), { code: 0x2200 })), false, "cassandra-driver: invalid query");
  assert.is(isRetryable(Object.assign(new Error("Overloaded"), { code: 0x1001 })), true, "cassandra-driver: overloaded");
});

test("Retry-After is honoured: the next attempt waits what the server asked (up to maxRetryAfterMs)", async () => {
  script.clear();
  requests.clear();
  askedAt.clear();
  script.set("s004", [503]);
  retryAfterHeader.set("s004", "1"); // seconds; the backoff alone would wait 25–50 ms
  try {
    const loader = new Loader({ store: await openReadSource(url), ids, batchSize: 8, retries: 2 });
    const seen = await readAll(loader);
    await loader.close();
    assert.is(new Set(seen).size, ids.length);
    const [first, second] = askedAt.get("s004")!;
    assert.ok(second - first >= 950, `asked again after ${(second - first).toFixed(0)} ms`);
  } finally {
    retryAfterHeader.clear();
  }
  const { retryAfter } = await import("../../src/source/http/http.ts");
  const now = Date.parse("2026-11-23T04:00:00Z");
  assert.is(retryAfter("120", now), 120_000);
  assert.is(retryAfter("Mon, 23 Nov 2026 04:00:30 GMT", now), 30_000);
  assert.is(retryAfter("Mon, 23 Nov 2026 03:00:00 GMT", now), 0, "a date in the past: at once");
  assert.is(retryAfter("soon", now), undefined);
  assert.is(retryAfter(undefined, now), undefined);
});
