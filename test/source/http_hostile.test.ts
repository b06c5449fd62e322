/**
 * The HTTP source against servers that lie or overreach: a raw-TCP server
 * (_support/hostile_http.ts) that announces 8 TiB, streams without end, sends more or fewer
 * bytes than its Content-Length, redirects in loops and to other origins; a labels.json over
 * its limit; credentials over plain http://; a node:https server whose certificate a CA made
 * by openssl at test time signs. Each case is a named error, and no sample a server cut or
 * overran is handed on.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { expectError } from "../_support/expect.ts";
import { flood, liar, ok, startHostileServer, status } from "../_support/hostile_http.ts";
import { makeTestCerts, NO_OPENSSL } from "../_support/tls_certs.ts";
import { CassetteError } from "../../src/errors.ts";
import { openHttpSource } from "../../src/source/http/http.ts";
import { openReadSource } from "../../src/read/open.ts";
import { formatLabels } from "../../src/source/files/file.ts";
import { Loader } from "../../src/loader.ts";
import type { Fetched, Source } from "../../src/source/source.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-hostile-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);
const ids = ["a", "b", "c", "kib", "kib1", "huge", "stream", "more", "short", "moved", "loop", "away", "big", "big2"];
const labels = formatLabels("hostile", new Map(ids.map((id, i) => [id, i])));
const longLabels = formatLabels("hostile", new Map(Array.from({ length: 100 }, (_, i) => [`sample-${i}`, i])));
const huge = flood({ announced: 2 ** 43 });
const stream = flood();
const srv = await startHostileServer({
  "/data/labels.json": ok(labels),
  "/data/a": ok(bytes(100, 1)),
  "/data/b": ok(bytes(200, 2)),
  "/data/c": ok(bytes(300, 3)),
  "/data/kib": ok(bytes(1024, 4)),
  "/data/kib1": ok(bytes(1025, 5)),
  "/data/huge": huge,
  "/data/stream": stream,
  "/data/more": liar(5, "helloEXTRA BYTES THAT ARE NO RESPONSE"),
  "/data/short": liar(100, "0123456789", { close: true }),
  "/data/moved": status(302, "Found", "/data/real?v=2"),
  "/data/real": ok("the real bytes"),
  "/data/loop": status(307, "Temporary Redirect", "/data/loop"),
  "/data/big": flood({ announced: 4096, delayMs: 150 }),
  "/data/big2": flood({ announced: 4096, delayMs: 150 }),
  // labels.json elsewhere: over a small limit, over the default one, moved to another origin
  "/small/labels.json": ok(longLabels),
  "/endless/labels.json": flood({ announced: 2 ** 40 }),
});
srv.route("/data/away", status(302, "Found", `http://user:secret@localhost:${srv.port}/data/a?token=abc`));
srv.route("/evil/labels.json", status(301, "Moved Permanently", `http://localhost:${srv.port}/data/labels.json`));
afterAll(() => srv.close());
const url = `${srv.origin}/data`;

/** One fetch straight from the source: its error, or its sample. */
function fetchOne(source: Source, id: string): Promise<{ err: Error | null; s?: Fetched }> {
  return new Promise((resolve) => source.fetch(id, (err, s) => resolve({ err, s })));
}

/** Asserts a fetch failed with a CassetteError of `code`, message matching `re`, and nothing delivered. */
function assertFailed(r: { err: Error | null; s?: Fetched }, code: string, re: RegExp, retryable = false): CassetteError {
  assert.not.ok(r.s, "no sample handed on");
  assert.instance(r.err, CassetteError);
  const e = r.err as CassetteError & { retryable?: boolean };
  assert.is(e.code, code, e.message);
  assert.match(e.message, re);
  assert.is(e.retryable, retryable, `retryable: ${e.message}`);
  return e;
}

test("Content-Length over maxSampleBytes: ERR_TOO_LARGE before any buffer is made (8 TiB announced), naming id, URL and the 64 MiB default; exactly the limit passes", async () => {
  const source = await openHttpSource(url);
  try {
    const r = await fetchOne(source, "huge");
    assertFailed(r, "ERR_TOO_LARGE", new RegExp(`sample huge from ${url}/huge as it is over the 67108864-byte \\(64 MiB\\) limit \\(maxSampleBytes\\): its Content-Length announces ${2 ** 43} bytes`));
    assert.ok(huge.sent() < 8 << 20, `the connection was dropped, not read: ${huge.sent()} bytes sent`);
    assert.equal((await fetchOne(source, "a")).s?.data, bytes(100, 1), "the source reads on");
  } finally {
    await source.close();
  }
  const small = await openHttpSource(`${url}?maxsample=1KiB`);
  try {
    assert.equal((await fetchOne(small, "kib")).s?.data, bytes(1024, 4), "1024 bytes under a 1 KiB limit");
    assertFailed(await fetchOne(small, "kib1"), "ERR_TOO_LARGE", /sample kib1 .* over the 1024-byte limit \(maxSampleBytes\): its Content-Length announces 1025 bytes/);
  } finally {
    await small.close();
  }
});

test("a body with no Content-Length is cut at maxSampleBytes as it streams: ERR_TOO_LARGE, the server stopped, nothing handed on", async () => {
  const source = await openHttpSource(url, { maxSampleBytes: 1 << 20 });
  try {
    assertFailed(await fetchOne(source, "stream"), "ERR_TOO_LARGE", /sample stream .* over the 1048576-byte \(1 MiB\) limit \(maxSampleBytes\): more than 1048576 bytes arrived with no Content-Length/);
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(stream.sent() < 16 << 20, `the client hung up near the limit: ${stream.sent()} bytes sent`);
  } finally {
    await source.close();
  }
});

test("a Content-Length that lies: more bytes than announced is ERR_BAD_RESPONSE, not the first 5 handed on; fewer then a close is an error naming 10 of 100", async () => {
  const source = await openHttpSource(url, { connections: 1 });
  try {
    assertFailed(await fetchOne(source, "more"), "ERR_BAD_RESPONSE", new RegExp(`sample more from ${url}/more as the server sent bytes past the 5 bytes its Content-Length announced`));
    assertFailed(await fetchOne(source, "short"), "ERR_STORE_UNREACHABLE", /Cannot get .*\/data\/short: the connection failed after 10 bytes of the 100 its Content-Length announced/, true);
    // Pipelined on one connection: the answer before the liar's is handed on whole; the one
    // after it was read from the extra bytes, so it fails as a broken connection does (retried).
    const [a, more, b] = await Promise.all(["a", "more", "b"].map((id) => fetchOne(source, id)));
    assert.equal(a.s?.data, bytes(100, 1), `a: ${a.err?.message}`);
    assertFailed(more, "ERR_BAD_RESPONSE", /bytes past the 5 bytes/);
    if (b.err) assertFailed(b, "ERR_STORE_UNREACHABLE", /Cannot get .*\/data\/b: .*HTTP\/1\.1 protocol/, true);
    else assert.equal(b.s?.data, bytes(200, 2));
  } finally {
    await source.close();
  }
  // Through the Loader: the liar is given up on once (not retried), the rest read exactly once.
  const loader = new Loader({ store: await openReadSource(`${url}?connections=1`), ids: ["a", "more", "b", "c"], batchSize: 2, retries: 3, onError: "skip" });
  try {
    const seen: string[] = [];
    for await (const batch of loader.epoch(0)) seen.push(...batch.ids);
    assert.equal(seen.sort(), ["a", "b", "c"]);
    assert.is(loader.skipped(0), 1);
  } finally {
    await loader.close();
  }
});

test("redirects: followed within the origin up to maxRedirects (default 3); a loop or another origin is ERR_REDIRECT naming both URLs, credentials and query hidden", async () => {
  const source = await openHttpSource(url);
  try {
    assert.equal((await fetchOne(source, "moved")).s?.data, new TextEncoder().encode("the real bytes"));
    const before = srv.count("/data/loop");
    assertFailed(await fetchOne(source, "loop"), "ERR_REDIRECT", new RegExp(`sample loop from ${url}/loop as it redirects \\(HTTP 307\\) to ${url}/loop, one more than the 3 followed \\(maxRedirects\\)`));
    assert.is(srv.count("/data/loop") - before, 4, "asked once and followed 3 times");
    const asked = srv.received.length;
    const e = assertFailed(await fetchOne(source, "away"), "ERR_REDIRECT", new RegExp(`sample away from ${url}/away as it redirects \\(HTTP 302\\) to http://localhost:${srv.port}/data/a\\?…, another origin: only redirects within ${srv.origin} are followed`));
    assert.not.match(e.message, /secret|token|abc/);
    assert.is(srv.received.length, asked + 1, "the other origin was not asked");
  } finally {
    await source.close();
  }
  const none = await openHttpSource(`${url}?redirects=0`);
  try {
    assertFailed(await fetchOne(none, "moved"), "ERR_REDIRECT", /redirects \(HTTP 302\) to .*\/data\/real\?…, one more than the 0 followed/);
  } finally {
    await none.close();
  }
  await expectError(openHttpSource(`${srv.origin}/evil`), "ERR_REDIRECT", new RegExp(`labels\\.json from ${srv.origin}/evil/labels\\.json as it redirects \\(HTTP 301\\) to http://localhost:${srv.port}/data/labels\\.json, another origin`));
});

test("labels.json is bounded: over maxlabels=1KiB, or a Content-Length over the 64 MiB default, is ERR_TOO_LARGE at open", async () => {
  assert.ok(longLabels.length > 1024);
  await expectError(openHttpSource(`${srv.origin}/small?maxlabels=1KiB`), "ERR_TOO_LARGE", new RegExp(`labels\\.json from ${srv.origin}/small/labels\\.json as it is over the 1024-byte limit \\(maxLabelsBytes\\): its Content-Length announces ${longLabels.length} bytes`));
  await expectError(openHttpSource(`${srv.origin}/endless`), "ERR_TOO_LARGE", /over the 67108864-byte \(64 MiB\) limit \(maxLabelsBytes\): its Content-Length announces 1099511627776 bytes/);
  await (await openHttpSource(`${srv.origin}/small?maxlabels=${longLabels.length}`)).close();
});

test("a sample over the limit is asked for at most twice in all: hedged, tail re-asks on, 3 retries, 2 epochs; its hedge on another connection or pipelined behind it", async () => {
  // pipelining=1: the hedge goes out on a second connection. connections=1: it waits behind
  // the first on the wire, and must not be sent again when that connection is dropped.
  for (const [options, big] of [["pipelining=1", "big"], ["connections=1", "big2"]]) {
    const errors: string[] = [];
    const inner = await openHttpSource(`${url}?maxsample=1KiB&${options}`);
    const watched: Source = {
      name: inner.name,
      fetch: (id, done) => inner.fetch(id, (e, s) => (e && errors.push(e.message), done(e, s))),
      onDrain: (l) => inner.onDrain(l),
      inFlight: () => inner.inFlight(),
      close: () => inner.close(),
    };
    const loader = new Loader({ store: watched, ids: ["a", "b", "c", big], batchSize: 2, retries: 3, onError: "skip", hedge: { delayMs: 20, budget: 1 }, reaskTail: true });
    try {
      for (const epoch of [0, 1]) {
        const seen: string[] = [];
        for await (const batch of loader.epoch(epoch)) seen.push(...batch.ids);
        assert.equal(seen.sort(), ["a", "b", "c"], `${options}, epoch ${epoch}`);
        assert.is(loader.skipped(epoch), 1);
      }
      assert.ok(loader.stats().hedged >= 1, "the hedge asked again");
      assert.is(srv.count(`/data/${big}`), 2, `${options}: asked twice, the request and its hedge`);
      assert.ok(errors.every((m) => new RegExp(`sample ${big} .* over the 1024-byte limit`).test(m)), errors.join("\n"));
      assert.match(errors.at(-1)!, /found before: not asked again/);
    } finally {
      await loader.close();
    }
  }
});

test("Basic credentials over plain http:// are refused at open, before any request; insecureauth=1 or allowInsecureAuth sends them", async () => {
  const asked = srv.received.length;
  const e = await expectError(openHttpSource(`http://me:pa55word@127.0.0.1:${srv.port}/data`), "ERR_INSECURE_AUTH", new RegExp(`Cannot open ${url} with the credentials in its URL as plain http:// .*insecureauth=1.*allowInsecureAuth`));
  assert.not.match(e.message, /pa55word/);
  assert.is(srv.received.length, asked, "nothing was sent");
  for (const open of [
    () => openHttpSource(`http://me:pa55word@127.0.0.1:${srv.port}/data?insecureauth=1`),
    () => openReadSource(`http://me:pa55word@127.0.0.1:${srv.port}/data`, undefined, { http: { allowInsecureAuth: true } }),
  ]) {
    await (await open()).close();
    assert.is(srv.received.at(-1)!.headers.authorization, `Basic ${btoa("me:pa55word")}`);
  }
});

test("https:// with a CA made by openssl: untrusted without it (ERR_TLS_UNTRUSTED, not retried), read with ca=PATH or the ca option; credentials go without insecureauth", async () => {
  const certs = makeTestCerts(mkdtempSync(join(tmp, "certs-")));
  const auths: (string | undefined)[] = [];
  const server = createHttpsServer({ key: certs.key, cert: certs.cert }, (req, res) => {
    auths.push(req.headers.authorization);
    if (req.url === "/data/labels.json") return res.end(labels);
    if (req.url === "/data/a") return res.end(bytes(100, 1));
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  try {
    const base = `https://127.0.0.1:${(server.address() as { port: number }).port}/data`;
    await expectError(openHttpSource(base), "ERR_TLS_UNTRUSTED", new RegExp(`Cannot open ${base} as the server's TLS certificate is not trusted: .*ca=PATH`));
    assert.is(auths.length, 0, "no request got through");
    for (const open of [
      () => openHttpSource(`https://me:pa55word@${base.slice("https://".length)}?ca=${encodeURIComponent(certs.caFile)}`),
      () => openReadSource(base, undefined, { http: { ca: certs.ca } }),
      () => openHttpSource(base, { ca: [new TextEncoder().encode(certs.ca)] }),
    ]) {
      const source = await open();
      try {
        assert.equal((await fetchOne(source, "a")).s?.data, bytes(100, 1));
      } finally {
        await source.close();
      }
    }
    assert.is(auths[0], `Basic ${btoa("me:pa55word")}`);
    await expectError(openHttpSource(`${base}?ca=${join(tmp, "no-such.pem")}`), "ERR_INVALID_OPTION", /its CA file '.*no-such\.pem' \(ca=\) cannot be read/);
  } finally {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
}, { skip: NO_OPENSSL });

test("the options are checked at open: each bad value named", async () => {
  await expectError(openHttpSource(url, { maxSampleBytes: 0 }), "ERR_INVALID_OPTION", new RegExp(`Cannot open ${url} as 'maxSampleBytes' must be a positive integer: current value is 0`));
  await expectError(openHttpSource(url, { maxLabelsBytes: 1.5 }), "ERR_INVALID_OPTION", /'maxLabelsBytes' must be a positive integer: current value is 1\.5/);
  await expectError(openHttpSource(url, { maxRedirects: -1 }), "ERR_INVALID_OPTION", /'maxRedirects' must be an integer ≥ 0: current value is -1/);
});
