/**
 * The HTTP source against a real nginx serving an export: a small Fashion-MNIST dataset is
 * ingested into SQLite, exported with exportDataset(), served, and read back with the Loader
 * through openReadSource(): every id exactly once, the store's bytes and labels; a missing
 * object is a clear error that is not retried; a 503 and a server that dies mid-epoch are
 * retried to a complete epoch.
 */
import * as assert from "uvu/assert";
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_NGINX, startNginx } from "../_support/nginx.ts";
import { expectError, readEpochAsStored } from "../_support/expect.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { openReadSource } from "../../src/read/open.ts";
import { parseHttpUrl } from "../../src/source/http/http.ts";
import { exportDataset } from "../../src/source/export/export.ts";
import { Loader } from "../../src/loader.ts";
import type { FetchCallback, Source } from "../../src/source/source.ts";

const DATASET = "fm";
const tmp = mkdtempSync(join(tmpdir(), "cassette-http-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const { store, ids, want } = await fashionMnistStore(join(tmp, "fm.sqlite"), DATASET, 50);
const out = join(tmp, "export");
const exported = await exportDataset(store, DATASET, out);
await store.close();

// One id answers 503 while a flag file exists (nginx tests for it on every request).
const flaky = ids[7];
const flag = join(tmp, "fail-503");
const web = NO_NGINX ? undefined : await startNginx({
  root: out,
  extra: `    location = /data/${flaky} { if (-f ${flag}) { return 503; } alias ${out}/${flaky}; }`,
});
afterAll(() => web?.close());
const skip = NO_NGINX;

const readEpoch = (loader: Loader, onBatch?: (n: number) => Promise<void>) => readEpochAsStored(loader, want, onBatch);

/** Calls `onError(id, err)` for each failed attempt, before the retry wrapper sees it. */
function watchErrors(inner: Source, onError: (id: string, err: Error) => void): Source {
  return {
    name: inner.name,
    fetch: (id: string, done: FetchCallback) => inner.fetch(id, (e, s) => (e && onError(id, e), done(e, s))),
    onDrain: (l) => inner.onDrain(l),
    inFlight: () => inner.inFlight(),
    close: () => inner.close(),
  };
}

test("export, nginx, Loader: every id once, the store's bytes and labels, attributed to pooled connections", async () => {
  assert.is(exported.written, ids.length);
  assert.is(ids.length, 100);
  const source = await openReadSource(web!.url, DATASET, { http: { connections: 4, pipelining: 4 } });
  assert.match(source.name, /^http:\/\/127\.0\.0\.1:\d+\/data \(fm\)$/);
  const loader = new Loader({ store: source, ids, batchSize: 16, prefetch: 4, seed: 3 });
  try {
    for (let epoch = 0; epoch < 2; epoch++) {
      const seen = await readEpoch(loader);
      assert.is(seen.length, ids.length, "nothing lost");
      assert.is(new Set(seen).size, ids.length, "nothing twice");
    }
    const st = loader.stats();
    assert.is(st.errors, 0);
    assert.is(st.retries, 0);
    const conns = Object.keys(st.perConnection);
    assert.ok(conns.length >= 1 && conns.length <= 4, `at most the pool's 4 connections: ${conns}`);
    for (const c of conns) assert.match(c, /^127\.0\.0\.1:\d+#\d+$/);
    assert.is(Object.values(st.perConnection).reduce((a, b) => a + b, 0), st.bytes);
  } finally {
    await loader.close();
  }
}, { skip });

test("a missing object (HTTP 404) is ERR_STORE 'Cannot find sample <id>' with the URL, not retried; an id outside labels.json too", async () => {
  const gone = ids[3];
  renameSync(join(out, gone), join(tmp, "away"));
  try {
    const loader = new Loader({ store: await openReadSource(web!.url, DATASET), ids, batchSize: 10, retries: 3 });
    try {
      const e = await expectError(readEpoch(loader), "ERR_STORE", new RegExp(`Cannot find sample ${gone}.*${web!.url}/${gone} answered HTTP 404`));
      assert.not.match(e.message, /attempts/, "not retried");
      assert.is(loader.stats().retries, 0);
    } finally {
      await loader.close();
    }
  } finally {
    renameSync(join(tmp, "away"), join(out, gone));
  }
  const stranger = "00000000-0000-5000-8000-000000000000";
  const loader = new Loader({ store: await openReadSource(web!.url), ids: [ids[0], stranger], batchSize: 2 });
  try {
    await expectError(readEpoch(loader), "ERR_STORE", new RegExp(`Cannot find sample ${stranger} of dataset 'fm'.*not in labels\\.json`));
    assert.is(loader.stats().retries, 0);
  } finally {
    await loader.close();
  }
}, { skip });

test("HTTP 503 is retried: a transient one completes the epoch exactly once; a lasting one names the URL and status after the retries", async () => {
  writeFileSync(flag, "");
  let seen503 = 0;
  const source = watchErrors(await openReadSource(web!.url, DATASET, { http: { connections: 2 } }), (id, e) => {
    if (id === flaky && /answered HTTP 503/.test(e.message)) {
      seen503++;
      rmSync(flag, { force: true }); // the server recovers
    }
  });
  const loader = new Loader({ store: source, ids, batchSize: 16, prefetch: 2, retries: 3 });
  try {
    const seen = await readEpoch(loader);
    assert.is(seen.length, ids.length);
    assert.is(new Set(seen).size, ids.length);
    assert.is(seen503, 1);
    assert.ok(loader.stats().retries >= 1, "retried");
  } finally {
    await loader.close();
  }

  writeFileSync(flag, "");
  const lasting = new Loader({ store: await openReadSource(web!.url, DATASET), ids, batchSize: 16, retries: 2, onError: "skip" });
  try {
    const seen = await readEpoch(lasting);
    assert.is(seen.length, ids.length - 1, "every other sample");
    assert.not.ok(seen.includes(flaky));
    assert.is(lasting.stats().errors, 1);
    assert.is(lasting.stats().retries, 2);
  } finally {
    await lasting.close();
  }
  const strict = new Loader({ store: await openReadSource(web!.url, DATASET), ids: [flaky], batchSize: 1, retries: 1 });
  try {
    await expectError(readEpoch(strict), "ERR_STORE_UNREACHABLE", new RegExp(`${web!.url}/${flaky}: it answered HTTP 503.*after 2 attempts`));
  } finally {
    await strict.close();
    rmSync(flag, { force: true });
  }
}, { skip });

test("nginx stops mid-epoch and comes back within the retry budget: the epoch completes, exactly once", async () => {
  const loader = new Loader({ store: await openReadSource(web!.url, DATASET, { http: { connections: 2 } }), ids, batchSize: 10, prefetch: 2, retries: 10, seed: 5 });
  try {
    const seen = await readEpoch(loader, async (n) => {
      if (n !== 2) return;
      await web!.stop();
      await new Promise((r) => setTimeout(r, 300));
      await web!.start();
    });
    assert.is(seen.length, ids.length, "nothing lost");
    assert.is(new Set(seen).size, ids.length, "nothing twice");
    assert.ok(loader.stats().retries > 0, `the outage was felt: ${loader.stats().retries} retries`);
  } finally {
    await loader.close();
    if (!web!.running()) await web!.start();
  }
}, { skip });

test("opening: no labels.json, another dataset, a bad option, nothing listening: each a clear error", async () => {
  await expectError(openReadSource(`${web!.url}/nothing-here`), "ERR_STORE", /labels\.json answered HTTP 404.*cassette export/);
  await expectError(openReadSource(web!.url, "mnist"), "ERR_STORE", /Cannot read dataset 'mnist' from http:.* as it holds dataset 'fm'/);
  await expectError(openReadSource(`${web!.url}?connections=0`, DATASET), "ERR_STORE_ADDRESS", /'connections' must be a positive integer: current value is 0/);
  await expectError(openReadSource(`${web!.url}?frob=1`, DATASET), "ERR_STORE_ADDRESS", /'frob' is not an option/);
  await expectError(openReadSource("http://127.0.0.1:9/data", DATASET), "ERR_STORE_UNREACHABLE", /Cannot open http:\/\/127\.0\.0\.1:9\/data as .*labels\.json cannot be fetched: .*ECONNREFUSED/);
  assert.ok(existsSync(join(out, "labels.json")));
}, { skip });

test("parseHttpUrl: origin, prefix, Basic credentials and options; the URL shown carries neither", () => {
  const p = parseHttpUrl("https://me:p%40ss@example.org:8443/a/b/?connections=2&pipelining=8&inflight=64");
  assert.equal(p, {
    origin: "https://example.org:8443",
    prefix: "/a/b",
    auth: btoa("me:p@ss"),
    params: { connections: 2, pipelining: 8, maxInFlight: 64 },
    shown: "https://example.org:8443/a/b",
  });
  assert.is(parseHttpUrl("http://h/").prefix, "");
  assert.throws(() => parseHttpUrl("http://h/x#frag"), /#fragment/);
});

test("parseHttpUrl: the limits, redirects, insecureauth and ca options; each bad value named", () => {
  const p = parseHttpUrl(`https://h/d?maxsample=2MiB&maxlabels=1000&redirects=0&insecureauth=1&ca=${encodeURIComponent("/etc/my ca.pem")}`);
  assert.equal(p.params, { maxSampleBytes: 2 << 20, maxLabelsBytes: 1000, maxRedirects: 0, allowInsecureAuth: true });
  assert.is(p.caFile, "/etc/my ca.pem");
  assert.is(parseHttpUrl("http://h/d?maxsample=3KiB&insecureauth=0").params.maxSampleBytes, 3072);
  assert.is(parseHttpUrl("http://h/d?insecureauth=0").params.allowInsecureAuth, false);
  for (const [q, re] of [
    ["maxsample=0", /'maxsample' must be a positive number of bytes .*: current value is 0/],
    ["maxlabels=64MB", /'maxlabels' must be a positive number of bytes .*: current value is 64MB/],
    ["redirects=-1", /'redirects' must be an integer ≥ 0: current value is -1/],
    ["insecureauth=yes", /'insecureauth' must be 1 or 0: current value is yes/],
    ["ca=", /'ca' must name a file/],
  ] as const) {
    assert.throws(() => parseHttpUrl(`http://h/d?${q}`), (e: Error) => (e as { code?: string }).code === "ERR_STORE_ADDRESS" && re.test(e.message));
  }
});
