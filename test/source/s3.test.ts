/**
 * The S3 source and client against a real S3-compatible server (versitygw, built from source
 * by tools/setup.sh) on loopback: a dataset exported to a bucket is read back by the Loader in
 * both address styles, every id once with the bytes as stored; refused credentials, a skewed
 * clock, a missing object and a missing bucket are each a named error that is not retried; a
 * server killed mid-epoch and started again is retried to a complete epoch; credentials come
 * from the environment or a profile file.
 */
import * as assert from "uvu/assert";
import process from "node:process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_S3, presignQuery, startS3Server } from "../_support/s3_server.ts";
import { expectError, readEpochAsStored } from "../_support/expect.ts";
import { fashionMnistStore } from "../_support/fashion_mnist.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { exportDataset } from "../../src/source/export/export.ts";
import { openReadSource } from "../../src/read/open.ts";
import { Loader } from "../../src/loader.ts";
import { parseS3Url, resolveS3, S3Client } from "../../src/source/http/s3.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const DATASET = "fm";
const tmp = mkdtempSync(join(tmpdir(), "cassette-s3-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const skip = NO_S3;

const { store, ids, want } = await fashionMnistStore(join(tmp, "fm.sqlite"), DATASET, 50);
const s3 = NO_S3 ? undefined! : await startS3Server();
afterAll(() => s3?.close());
const url = NO_S3 ? "" : s3.url("cassette-test", "exports/fm");
let again: Awaited<ReturnType<typeof exportDataset>> | undefined;
if (!NO_S3) {
  const first = await exportDataset(store, DATASET, url, { s3: { credentials: s3.credentials, createBucket: true } });
  if (first.written !== ids.length) throw new Error(`exported ${first.written} of ${ids.length}`);
  // Again: a re-run finds every object there and writes none.
  again = await exportDataset(store, DATASET, url, { s3: { credentials: s3.credentials } });
}
await store.close();

const readEpoch = (loader: Loader, onBatch?: (n: number) => Promise<void>) => readEpochAsStored(loader, want, onBatch);

test("export to a bucket, then the Loader reads it, path-style and virtual-hosted: every id once, the bytes and labels as stored", async () => {
  assert.is(ids.length, 100);
  assert.equal([again!.written, again!.existing, again!.labels], [0, ids.length, ids.length], "a re-run writes nothing");
  for (const style of ["path", "virtual"]) {
    const source = await openReadSource(`${url}&style=${style}`, DATASET, { s3: { credentials: s3.credentials, connections: 4 } });
    assert.is(source.name, "s3://cassette-test/exports/fm (fm)");
    const loader = new Loader({ store: source, ids, batchSize: 16, prefetch: 4, seed: 2 });
    try {
      const seen = await readEpoch(loader);
      assert.is(seen.length, ids.length, `${style}: nothing lost`);
      assert.is(new Set(seen).size, ids.length, `${style}: nothing twice`);
      assert.is(loader.stats().errors, 0);
    } finally {
      await loader.close();
    }
  }
  // The bucket holds exactly the export: one object per sample and labels.json.
  const client = await S3Client.open(url, { credentials: s3.credentials });
  const keys: string[] = [];
  for await (const o of client.list()) keys.push(o.key);
  await client.close();
  assert.equal(keys.sort(), [...ids, "labels.json"].sort());
}, { skip });

test("presigned: the source holds no key, each GET's query string is asked of presign (as a server that holds the secret would make it): every id once, as stored", async () => {
  const host = new URL(s3.endpoint).host;
  const asked: string[] = [];
  const presign = (path: string) => (asked.push(path), presignQuery(host, path, s3.credentials));
  const source = await openReadSource(url, DATASET, { s3: { presign } });
  const loader = new Loader({ store: source, ids, batchSize: 16, seed: 3 });
  try {
    const seen = await readEpoch(loader);
    assert.is(new Set(seen).size, ids.length);
  } finally {
    await loader.close();
  }
  assert.ok(asked.includes("/cassette-test/exports/fm/labels.json") && asked.length >= ids.length + 1, `asked for ${asked.length}`);
  // A presign that signs for another secret: refused by name, as a wrong key is.
  await expectError(openReadSource(url, DATASET, { s3: { presign: (p) => presignQuery(host, p, { ...s3.credentials, secretAccessKey: "not-the-secret" }) } }), "ERR_STORE_AUTH", /refused the credentials \(SignatureDoesNotMatch.*; the 'presign' option\)/);
}, { skip });

test("refused credentials are ERR_STORE_AUTH, not retried: a wrong secret, an unknown key, none at all", async () => {
  const wrong = await expectError(openReadSource(url, DATASET, { s3: { credentials: { ...s3.credentials, secretAccessKey: "not-the-secret" } } }), "ERR_STORE_AUTH",
    /Cannot get s3:\/\/cassette-test\/exports\/fm\/labels\.json as the server refused the credentials \(SignatureDoesNotMatch.*the secret key does not match/);
  assert.is((wrong as { retryable?: boolean }).retryable, false);
  assert.not.match(wrong.message, new RegExp(s3.credentials.secretAccessKey), "the secret is never shown");
  await expectError(openReadSource(url, DATASET, { s3: { credentials: { accessKeyId: "AKIANOBODY", secretAccessKey: "x" } } }), "ERR_STORE_AUTH", /no such access key/);
  // Anonymous requests to a private bucket.
  await expectError(openReadSource(`${url}&anonymous=1`, DATASET), "ERR_STORE_AUTH", /refused the credentials \(AccessDenied.*anonymous/);
  // A sample read with a wrong secret fails once, named, with no retry spent on it.
  const client = await S3Client.open(url, { credentials: { ...s3.credentials, secretAccessKey: "nope" }, retries: 3 });
  try {
    await expectError(client.get(ids[0]), "ERR_STORE_AUTH", /SignatureDoesNotMatch/);
  } finally {
    await client.close();
  }
}, { skip });

test("a clock 20 minutes off is ERR_CLOCK_SKEW, naming by how much; within the allowance it reads", async () => {
  const e = await expectError(openReadSource(url, DATASET, { s3: { credentials: s3.credentials, clockOffsetMs: -20 * 60_000 } }), "ERR_CLOCK_SKEW",
    /refused the request's time \(RequestTimeTooSkewed.*this machine's clock \(with clockOffsetMs -1200000\) is 1[12]\d\d s behind the server's/);
  assert.is((e as { retryable?: boolean }).retryable, false);
  const ok = await openReadSource(url, DATASET, { s3: { credentials: s3.credentials, clockOffsetMs: 5 * 60_000 } });
  assert.is((await ok.ids!()).length, ids.length);
  await ok.close();
}, { skip });

test("a missing object names the id and is not retried; a missing bucket (reading or exporting) and a missing export are named at once", async () => {
  const client = await S3Client.open(url, { credentials: s3.credentials });
  const gone = ids[5];
  const bytes = (await client.get(gone))!;
  await client.delete(gone);
  try {
    const loader = new Loader({ store: await openReadSource(url, DATASET, { s3: { credentials: s3.credentials } }), ids, batchSize: 10, retries: 3 });
    try {
      await expectError(readEpoch(loader), "ERR_STORE", new RegExp(`Cannot find sample ${gone} of dataset 'fm': s3://cassette-test/exports/fm/${gone} answered HTTP 404`));
      assert.is(loader.stats().retries, 0);
    } finally {
      await loader.close();
    }
  } finally {
    await client.put(gone, bytes);
    await client.close();
  }
  await expectError(openReadSource(s3.url("no-such-bucket", "x"), DATASET, { s3: { credentials: s3.credentials } }), "ERR_STORE_ADDRESS", /bucket 'no-such-bucket' does not exist at http:\/\/127\.0\.0\.1:\d+/);
  const storeAgain = (await fashionMnistStore(join(tmp, "fm.sqlite"), DATASET, 50)).store;
  try {
    await expectError(exportDataset(storeAgain, DATASET, s3.url("no-such-bucket", "x"), { s3: { credentials: s3.credentials } }), "ERR_STORE_ADDRESS", /bucket 'no-such-bucket' does not exist/);
  } finally {
    await storeAgain.close();
  }
  await expectError(openReadSource(s3.url("cassette-test", "nothing"), DATASET, { s3: { credentials: s3.credentials } }), "ERR_STORE", /labels\.json answered HTTP 404/);
}, { skip });

test("the server is killed (SIGKILL) mid-epoch and started again: retried to a complete epoch, exactly once", async () => {
  const loader = new Loader({ store: await openReadSource(url, DATASET, { s3: { credentials: s3.credentials, connections: 2 } }), ids, batchSize: 10, prefetch: 2, retries: 10, seed: 7 });
  try {
    const seen = await readEpoch(loader, async (n) => {
      if (n !== 2) return;
      s3.kill();
      await new Promise((r) => setTimeout(r, 300));
      await s3.start();
    });
    assert.is(seen.length, ids.length, "nothing lost");
    assert.is(new Set(seen).size, ids.length, "nothing twice");
    assert.ok(loader.stats().retries > 0, `the outage was felt: ${loader.stats().retries} retries`);
  } finally {
    await loader.close();
  }
}, { skip });

test("S3Client: keys with spaces, '+', '%', unicode and slashes round-trip through put, list and get (signed paths and queries)", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const client = await S3Client.open(s3.url("cassette-test", "odd keys"), { credentials: s3.credentials });
  const alphabet = ["a", "Z", "0", " ", "+", "%", "é", "=", "&", "~", "_", "-", "."];
  const made = new Map<string, Uint8Array>();
  for (let i = 0; i < 12; i++) {
    // Each name starts with a letter: a posix-backed gateway (versitygw) keeps keys as paths, where "." and ".." are folders.
    let k = `d${i % 3}/k`;
    for (let j = 0; j < 1 + Math.floor(r() * 10); j++) k += alphabet[Math.floor(r() * alphabet.length)];
    const data = new Uint8Array(Math.floor(r() * 3000)).map(() => Math.floor(r() * 256));
    made.set(k, data);
    await client.put(k, data);
  }
  const listed = new Map<string, number>();
  for await (const o of client.list()) listed.set(o.key, o.size);
  assert.equal([...listed.keys()].sort(), [...made.keys()].sort(), `seed ${seed}`);
  for (const [k, data] of made) {
    assert.is(listed.get(k), data.length);
    assert.equal(await client.get(k), data, `${k} (seed ${seed})`);
  }
  assert.is(await client.get("d0/absent"), undefined);
  const under: string[] = [];
  for await (const o of client.list("d1/")) under.push(o.key);
  assert.equal(under.sort(), [...made.keys()].filter((k) => k.startsWith("d1/")).sort());
  await client.close();
}, { skip });

test("credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or from a profile of the shared file; region and endpoint from its config; a wrong region named", async () => {
  const saved = { ...process.env };
  const restore = () => {
    for (const k of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"]) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  };
  try {
    restore();
    for (const k of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"]) delete process.env[k];
    const creds = join(tmp, "credentials"), config = join(tmp, "config");
    writeFileSync(creds, `# a comment\n[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[train]\naws_access_key_id = ${s3.credentials.accessKeyId}\naws_secret_access_key = ${s3.credentials.secretAccessKey}\n`);
    writeFileSync(config, `[profile train]\nregion = eu-north-1\nendpoint_url = ${s3.endpoint}\n`);
    process.env.AWS_SHARED_CREDENTIALS_FILE = creds;
    process.env.AWS_CONFIG_FILE = config;
    assert.is(runtime.env("AWS_CONFIG_FILE"), config, "the runtime sees the environment the test sets");
    // The profile named in the address: its keys, its region, its endpoint (path style).
    const { bucket } = await resolveS3("s3://cassette-test/exports/fm?profile=train");
    assert.is(bucket.region, "eu-north-1");
    assert.is(bucket.origin, s3.endpoint);
    assert.is(bucket.base, "/cassette-test");
    assert.match(bucket.from, /profile 'train' of .*credentials/);
    // The server's region is us-east-1: a request signed for another is named, with the fix.
    await expectError(openReadSource("s3://cassette-test/exports/fm?profile=train", DATASET), "ERR_STORE_ADDRESS",
      /bucket 'cassette-test' is in region us-east-1, not eu-north-1 .*add region=us-east-1 to the address/);
    const viaProfile = await openReadSource("s3://cassette-test/exports/fm?profile=train&region=us-east-1", DATASET);
    assert.is((await viaProfile.ids!()).length, ids.length);
    await viaProfile.close();
    // The default profile's keys are wrong: named as coming from there.
    await expectError(openReadSource(url, DATASET), "ERR_STORE_AUTH", /profile 'default' of .*credentials/);
    // The environment's keys come before the default profile.
    process.env.AWS_ACCESS_KEY_ID = s3.credentials.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = s3.credentials.secretAccessKey;
    const viaEnv = await openReadSource(url, DATASET);
    assert.is((await viaEnv.ids!()).length, ids.length);
    await viaEnv.close();
    // None anywhere.
    delete process.env.AWS_ACCESS_KEY_ID;
    process.env.AWS_SHARED_CREDENTIALS_FILE = join(tmp, "absent");
    process.env.AWS_CONFIG_FILE = join(tmp, "absent");
    await expectError(resolveS3(url), "ERR_STORE_AUTH", /no credentials were found: set AWS_ACCESS_KEY_ID.*absent.*anonymous=1/);
  } finally {
    restore();
  }
}, { skip });

test("parseS3Url: bucket, prefix and options; each bad value named", () => {
  const p = parseS3Url("s3://my-bucket/a/b/?endpoint=http://127.0.0.1:7070/&region=eu-west-1&style=virtual&profile=p&connections=2&maxsample=1MiB");
  assert.equal(p, {
    bucket: "my-bucket", prefix: "a/b", shown: "s3://my-bucket/a/b",
    params: { connections: 2, maxSampleBytes: 1 << 20, endpoint: "http://127.0.0.1:7070", region: "eu-west-1", style: "virtual", profile: "p" },
  });
  assert.is(parseS3Url("s3://bkt").prefix, "");
  assert.equal(parseS3Url("s3://bkt/x?anonymous=1").params, { credentials: "anonymous" });
  for (const [u, re] of [
    ["s3://B/x", /bucket 'B' is not a valid bucket name/],
    ["s3://bkt/x?style=dns", /'style' must be path or virtual: current value is dns/],
    ["s3://bkt/x?region=EU WEST", /'region' must be a region name/],
    ["s3://bkt/x?endpoint=ftp://h", /'endpoint' must be http\(s\):\/\/HOST\[:PORT\]/],
    ["s3://bkt/x?endpoint=http://h/path", /'endpoint' must be http\(s\):\/\/HOST\[:PORT\]/],
    ["s3://bkt/x?frob=1", /'frob' is not an option \(endpoint, region, style, profile, anonymous, connections/],
    ["s3://bkt/x?connections=0", /'connections' must be a positive integer/],
    ["s3://bkt/x#f", /#fragment/],
  ] as const) {
    assert.throws(() => parseS3Url(u), (e: Error) => (e as { code?: string }).code === "ERR_STORE_ADDRESS" && re.test(e.message), u);
  }
});
