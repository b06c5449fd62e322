import * as assert from "uvu/assert";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { deflateSync } from "node:zlib";
import { afterAll, test } from "../_support/harness.ts";
import { cassette, startCassette } from "../_support/cli.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { NO_GNU_TAR, NO_PYTHON, pythonTarWrite, sh } from "../_support/tar_tools.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { parseTar } from "../../src/dataset/tar.ts";
import { groupSamples } from "../../src/dataset/webdataset.ts";
import { shardOrder } from "../../src/source/export/export.ts";
import { openStore } from "../../src/source/open.ts";
import { S3Client } from "../../src/source/http/s3.ts";
import { NO_S3, startS3Server } from "../_support/s3_server.ts";
import process from "node:process";

const dir = mkdtempSync(join(tmpdir(), "cassette-wds-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sha1 = (b: Uint8Array) => createHash("sha1").update(b).digest("hex");
const CLASSES = ["ant", "bee", "cat", "dog"];

/** A tiny RGB PNG (filter 0 rows, one IDAT) with zlib from the runtime: a real, decodable file. */
function png(w: number, h: number, rgb: Uint8Array): Uint8Array {
  const raw = new Uint8Array(h * (1 + 3 * w));
  for (let y = 0; y < h; y++) raw.set(rgb.subarray(y * 3 * w, (y + 1) * 3 * w), y * (1 + 3 * w) + 1);
  const chunk = (type: string, data: Uint8Array) => {
    const out = new Uint8Array(12 + data.length);
    const v = new DataView(out.buffer);
    v.setUint32(0, data.length);
    out.set(new TextEncoder().encode(type), 4);
    out.set(data, 8);
    v.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
    return out;
  };
  const ihdr = new Uint8Array(13);
  new DataView(ihdr.buffer).setUint32(0, w);
  new DataView(ihdr.buffer).setUint32(4, h);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const parts = [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", new Uint8Array(deflateSync(raw))), chunk("IEND", new Uint8Array(0))];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.length;
  return out;
}

function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

interface Made {
  key: string;
  label: number;
  image: Uint8Array;
  ext: string;
}

/**
 * Source shards: src-000000.tar by Python's tarfile (pax), src-000001.tar by GNU tar, with real
 * JPEGs (cjpeg) and PNGs, labels in .cls or only in the .json, and two bad samples (no label; a
 * truncated JPEG).
 */
function sourceShards(seed: number): { folder: string; samples: Made[] } {
  const next = rng(seed);
  const folder = join(dir, `src-${seed}`), files = join(folder, "files");
  const samples: Made[] = [];
  const shards: { name: string; file: string }[][] = [[], []];
  const put = (shard: number, name: string, data: Uint8Array) => {
    const file = join(files, name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, data);
    shards[shard].push({ name, file });
  };
  for (let i = 0; i < 16; i++) {
    const shard = i < 8 ? 0 : 1;
    // Every class at least once: ingest records a label map only when labels 0…max are all named.
    const key = `img/s${i}`, label = i < CLASSES.length ? (i + seed) % CLASSES.length : randomInt(next, 0, 3);
    const w = randomInt(next, 4, 12), h = randomInt(next, 4, 12);
    const pixels = randomBytes(next, w * h * 3);
    const ext = i % 3 === 0 ? "png" : "jpg";
    const image = ext === "png" ? png(w, h, pixels) : cjpeg(pixels, w, h, 3);
    samples.push({ key, label, image, ext });
    put(shard, `${key}.${ext}`, image);
    if (i % 4 !== 1) put(shard, `${key}.cls`, new TextEncoder().encode(`${label}\n`));
    put(shard, `${key}.json`, new TextEncoder().encode(JSON.stringify(i % 4 === 1 ? { label, class: CLASSES[label] } : { class: CLASSES[label], w })));
  }
  const jpg = cjpeg(randomBytes(next, 8 * 8 * 3), 8, 8, 3);
  put(0, "img/nolabel.jpg", jpg);
  put(1, "img/cut.jpg", jpg.subarray(0, jpg.length - 30));
  put(1, "img/cut.cls", new TextEncoder().encode("1"));
  writeFileSync(join(folder, "spec0.json"), JSON.stringify(shards[0]));
  pythonTarWrite(join(folder, "src-000000.tar"), join(folder, "spec0.json"), "pax");
  sh("tar", ["--format=gnu", "-cf", join(folder, "src-000001.tar"), "-C", files, ...shards[1].map((e) => e.name)]);
  return { folder, samples };
}

/** Every sample of `dataset` in the store: its key's id → label and SHA-1 of its bytes. */
async function stored(path: string, dataset: string): Promise<Map<string, { label: number; sha: string }>> {
  const store = await openStore(`sqlite:${path}`, { create: false });
  try {
    const ids: string[] = [];
    for await (const page of store.scanNat(dataset)) ids.push(...page.map((r) => r.id));
    return new Map((await store.get(dataset, ids)).map((s) => [s.id, { label: s.label, sha: sha1(s.data) }]));
  } finally {
    await store.close();
  }
}

/** The keys in each shard of an export, in order. */
async function shardKeys(out: string, prefix: string): Promise<string[][]> {
  const names = readdirSync(out).filter((n) => n.startsWith(`${prefix}-`) && n.endsWith(".tar")).sort();
  const keys: string[][] = [];
  for (const n of names) {
    const k: string[] = [];
    for await (const s of groupSamples(parseTar(new Uint8Array(readFileSync(join(out, n)))))) k.push(s.key);
    keys.push(k);
  }
  return keys;
}

const json = (r: { code: number | null; out: string; err: string }, code: number) => {
  assert.is(r.code, code, r.err || r.out);
  return JSON.parse(r.out);
};

/** The source ingested once into `a` of a store, shared by the tests below. */
let made: Promise<{ seed: number; samples: Made[]; folder: string; db: string }> | undefined;
function ingested() {
  made ??= (async () => {
    const seed = freshSeed();
    const { folder, samples } = sourceShards(seed);
    const db = join(dir, `a-${seed}.sqlite`);
    const r = json(cassette("ingest", join(folder, "src-{000000..000001}.tar"), "--store", `sqlite:${db}`, "--dataset", "a", "--json"), 1);
    assert.is(r.written, 16, `seed ${seed}: ${JSON.stringify(r.errors)}`);
    const bad = Object.fromEntries(r.errors.map((e: { key: string; reason: string }) => [e.key, e.reason]));
    assert.match(bad["img/nolabel"], /no label/);
    assert.match(bad["img/cut"], /truncated|EOI/);
    return { seed, samples, folder, db };
  })();
  return made;
}

const skip = NO_PYTHON || NO_GNU_TAR;

test("shards from GNU tar and Python's tarfile → ingest → export --format webdataset → ingest: every sample's bytes and label exactly once", async () => {
  const { seed, samples, db } = await ingested();
  const a = await stored(db, "a");
  assert.is(a.size, samples.length);
  for (const s of samples) assert.equal(a.get(sampleId("a", s.key)), { label: s.label, sha: sha1(s.image) }, `${s.key} (seed ${seed})`);
  const info = json(cassette("info", "--store", `sqlite:${db}`, "--dataset", "a", "--json"), 0);
  assert.equal(info.datasets[0].spec.label.classes, CLASSES.slice(0, Math.max(...samples.map((s) => s.label)) + 1), "label map from the .json 'class'");

  const out = join(dir, `out-${seed}`);
  const e = json(cassette("export", "--format", "webdataset", "--store", `sqlite:${db}`, "--dataset", "a", "--out", out, "--shard-bytes", "6kB", "--json"), 0);
  assert.is(e.samples, 16);
  assert.is(e.seed, 0);
  assert.equal(e.shards.map((s: { name: string }) => s.name), readdirSync(out).filter((n) => n.endsWith(".tar")).sort(), "--json lists the shards");
  for (const s of e.shards) {
    const size = statSync(join(out, s.name)).size;
    assert.is(size, s.bytes);
    assert.ok(size <= 6000 || s.samples === 1, `${s.name}: ${size} bytes, ${s.samples} samples`);
  }
  const index = JSON.parse(readFileSync(join(out, "a.index.json"), "utf8"));
  assert.equal(index.shardlist.map((s: { url: string; nsamples: number }) => [s.url, s.nsamples]), e.shards.map((s: { name: string; samples: number }) => [s.name, s.samples]));

  const b = json(cassette("ingest", out, "--store", `sqlite:${db}`, "--dataset", "b", "--json"), 0);
  assert.is(b.written, 16);
  assert.equal(b.errors, []);
  const back = await stored(db, "b");
  assert.is(back.size, 16, "nothing lost, nothing twice");
  for (const [id, s] of a) assert.equal(back.get(sampleId("b", id)), s, `sample ${id}: bytes and label (seed ${seed})`);
  const infoB = json(cassette("info", "--store", `sqlite:${db}`, "--dataset", "b", "--json"), 0);
  assert.equal(infoB.datasets[0].spec.label.classes, info.datasets[0].spec.label.classes, "the label map travels in the .json");
}, { skip, timeoutMs: 120_000 });

test("export --format webdataset: the order is the seed's (same seed same bytes, another seed another order; a split's seed by default); an interrupted export resumes to the same bytes", async () => {
  const { db } = await ingested();
  const exp = (out: string, ...more: string[]) => json(cassette("export", "--format", "webdataset", "--store", `sqlite:${db}`, "--dataset", "a", "--out", out, "--shard-samples", "3", "--json", ...more), 0);
  const [d1, d2, d3] = ["s1", "s1b", "s2"].map((n) => join(dir, `${n}-${freshSeed()}`));
  const one = exp(d1, "--seed", "1");
  exp(d2, "--seed", "1");
  exp(d3, "--seed", "2");
  const ids = [...(await stored(db, "a")).keys()];
  const k1 = await shardKeys(d1, "a"), k3 = await shardKeys(d3, "a");
  assert.equal(k1.flat(), shardOrder(ids, 1), "seed 1's order");
  assert.ok(k1.every((k) => k.length <= 3), "--shard-samples 3");
  assert.not.equal(k3.flat(), k1.flat(), "seed 2 gives another order");
  assert.equal([...k3.flat()].sort(), [...k1.flat()].sort(), "of the same samples");
  for (const s of one.shards) assert.is(sha1(readFileSync(join(d2, s.name))), sha1(readFileSync(join(d1, s.name))), `${s.name}: same seed, same bytes`);

  // Interrupted: the last two shards and the index never written, a temporary part left behind.
  const resumed = join(dir, `resumed-${freshSeed()}`);
  cpSync(d1, resumed, { recursive: true });
  const last = one.shards.slice(-2).map((s: { name: string }) => s.name);
  for (const n of [...last, "a.index.json"]) rmSync(join(resumed, n));
  writeFileSync(join(resumed, `.cassette-part-${last[0]}-x1`), "partial");
  const again = exp(resumed, "--seed", "1");
  assert.is(again.existing + again.written, 16);
  assert.is(again.written, one.shards.slice(-2).reduce((n: number, s: { samples: number }) => n + s.samples, 0), "only the missing shards' samples");
  assert.equal(readdirSync(resumed).sort(), readdirSync(d1).sort(), "no part left");
  for (const n of readdirSync(d1)) assert.is(sha1(readFileSync(join(resumed, n))), sha1(readFileSync(join(d1, n))), `${n} as if never interrupted`);
  // Another seed into that folder does not mix two orders.
  const mixed = cassette("export", "--format", "webdataset", "--store", `sqlite:${db}`, "--dataset", "a", "--out", resumed, "--seed", "2");
  assert.is(mixed.code, 2);
  assert.match(mixed.err, /Cannot resume the export into .* as a-000000\.tar holds sample .* where this export \(dataset 'a', seed 2/);

  // A split: its samples only, its seed, its name in the prefix.
  const splits = join(dir, `splits-${freshSeed()}.json`);
  assert.is(cassette("splits", "--store", `sqlite:${db}`, "--dataset", "a", "--ratios", "1,1", "--seed", "7", "--out", splits).code, 0);
  const file = JSON.parse(readFileSync(splits, "utf8"));
  const ds = join(dir, `split-${freshSeed()}`);
  const sp = json(cassette("export", "--format", "webdataset", "--store", `sqlite:${db}`, "--dataset", "a", "--out", ds, "--split", `${splits}:test`, "--json"), 0);
  assert.is(sp.seed, 7);
  assert.is(sp.prefix, "a-test");
  assert.equal((await shardKeys(ds, "a-test")).flat(), shardOrder(file.splits[1].ids, 7));
}, { skip, timeoutMs: 120_000 });

test("ingest: a corrupt shard is listed with the byte offset where it breaks, the samples wholly before it kept; --strict stops there", async () => {
  const { db } = await ingested();
  const out = join(dir, `corrupt-${freshSeed()}`);
  json(cassette("export", "--format", "webdataset", "--store", `sqlite:${db}`, "--dataset", "a", "--out", out, "--shard-samples", "16", "--json"), 0);
  const path = join(out, "a-000000.tar");
  const bytes = new Uint8Array(readFileSync(path));
  const headers = parseTar(bytes).map((e) => e.offset);
  const at = headers[3 * 5]; // the first header of the sixth sample
  bytes[at + 5] ^= 0x01;
  writeFileSync(path, bytes);
  const r = json(cassette("ingest", path, "--store", `sqlite:${db}`, "--dataset", "c", "--json"), 1);
  // The fifth sample's entries all precede the break, but more of them could follow it: a
  // sample the break may cut is not kept.
  assert.is(r.written, 4, "the samples wholly before the corruption");
  assert.equal(r.errors.map((e: { path: string; offset: number }) => [e.path, e.offset]), [[path, at]]);
  assert.match(r.errors[0].reason, /bad checksum/);
  const text = cassette("ingest", path, "--store", `sqlite:${db}`, "--dataset", "c");
  assert.match(text.out, new RegExp(`skipped .*a-000000\\.tar: the header has a bad checksum: .* at offset ${at}: the samples wholly before it are kept`));
  const strict = cassette("ingest", path, "--store", `sqlite:${db}`, "--dataset", "c2", "--strict");
  assert.is(strict.code, 2);
  assert.match(strict.err, new RegExp(`bad checksum.*\\(offset ${at}\\) \\(stopped: --strict\\) \\[ERR_MALFORMED_INPUT\\]`));
}, { skip, timeoutMs: 120_000 });

test("ingest: an ImageFolder's PNGs are accepted and its label map recorded; manifests of http:// and s3:// URLs are fetched", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const root = join(dir, `folder-${seed}`);
  const files: { rel: string; data: Uint8Array }[] = [];
  for (const [cls, n] of [["cat", 3], ["dog", 2]] as const) {
    for (let i = 0; i < n; i++) {
      const data = i % 2 ? cjpeg(randomBytes(next, 6 * 6 * 3), 6, 6, 3) : png(5, 7, randomBytes(next, 5 * 7 * 3));
      files.push({ rel: `${cls}/${i}.${data[0] === 0xff ? "jpg" : "png"}`, data });
    }
  }
  for (const f of files) mkdirSync(join(root, dirname(f.rel)), { recursive: true }), writeFileSync(join(root, f.rel), f.data);
  const broken = png(4, 4, randomBytes(next, 48));
  broken[20] ^= 1; // IHDR's height: its CRC no longer matches
  writeFileSync(join(root, "dog", "broken.png"), broken);
  const db = join(dir, `folder-${seed}.sqlite`);
  const r = json(cassette("ingest", root, "--store", `sqlite:${db}`, "--dataset", "pets", "--json"), 1);
  assert.is(r.written, 5);
  assert.is(r.errors.length, 1);
  assert.match(r.errors[0].reason, /IHDR chunk's CRC/);
  const info = json(cassette("info", "--store", `sqlite:${db}`, "--dataset", "pets", "--json"), 0);
  assert.equal(info.datasets[0].spec.label.classes, ["cat", "dog"]);
  const pets = await stored(db, "pets");
  for (const f of files) assert.equal(pets.get(sampleId("pets", f.rel)), { label: f.rel.startsWith("cat") ? 0 : 1, sha: sha1(f.data) }, f.rel);

  // http:// URLs in a manifest, through a local server; one answers 404.
  const server = createServer((req, res) => {
    const f = files.find((x) => `/${x.rel}` === req.url);
    if (!f) return res.writeHead(404).end("no");
    res.writeHead(200, { "content-length": String(f.data.length) }).end(f.data);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const manifest = join(dir, `urls-${seed}.jsonl`);
    writeFileSync(manifest, [...files.map((f) => ({ path: `${base}/${f.rel}`, label: f.rel.split("/")[0] })), { path: `${base}/missing.jpg`, label: "cat" }].map((x) => JSON.stringify(x)).join("\n"));
    const child = startCassette("ingest", manifest, "--store", `sqlite:${db}`, "--dataset", "urls", "--json");
    let out = "", err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise<number | null>((ok) => child.on("close", ok));
    const u = json({ code, out, err }, 1);
    assert.is(u.written, 5);
    assert.equal(u.errors.map((e: { path: string }) => e.path), [`${base}/missing.jpg`]);
    assert.match(u.errors[0].reason, /answered 404/);
    const urls = await stored(db, "urls");
    for (const f of files) assert.is(urls.get(sampleId("urls", `${base}/${f.rel}`))?.sha, sha1(f.data), f.rel);
  } finally {
    await new Promise((ok) => server.close(ok));
  }

  // s3:// paths, from a real S3 server, with the credentials of the environment; one is missing.
  if (NO_S3) return console.log(`  (s3:// manifest rows not tried: ${NO_S3})`);
  const server3 = await startS3Server();
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  try {
    const bucket = await S3Client.open(server3.url("manifest"), { credentials: server3.credentials });
    await bucket.createBucket();
    for (const f of files) await bucket.put(`imgs/${f.rel}`, f.data);
    await bucket.close();
    const rows = [...files.map((f) => `s3://manifest/imgs/${f.rel}?endpoint=${server3.endpoint},${f.rel.split("/")[0]}`), `s3://manifest/imgs/missing.jpg?endpoint=${server3.endpoint},cat`];
    const s3 = join(dir, `s3-${seed}.csv`);
    writeFileSync(s3, `path,label\n${rows.join("\n")}\n`);
    process.env.AWS_ACCESS_KEY_ID = server3.credentials.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = server3.credentials.secretAccessKey;
    const r3 = json(cassette("ingest", s3, "--store", `sqlite:${db}`, "--dataset", "s3", "--json"), 1);
    assert.is(r3.written, 5);
    assert.equal(r3.errors.map((e: { path: string }) => e.path), [`s3://manifest/imgs/missing.jpg?endpoint=${server3.endpoint}`]);
    assert.match(r3.errors[0].reason, /no such object/);
    const fromS3 = await stored(db, "s3");
    for (const f of files) assert.is(fromS3.get(sampleId("s3", `s3://manifest/imgs/${f.rel}?endpoint=${server3.endpoint}`))?.sha, sha1(f.data), f.rel);
    // A wrong secret: every row is a bad file naming the refusal.
    process.env.AWS_SECRET_ACCESS_KEY = "wrong";
    const bad = json(cassette("ingest", s3, "--store", `sqlite:${db}`, "--dataset", "s3-bad", "--json"), 1);
    assert.is(bad.written, 0);
    assert.match(bad.errors[0].reason, /refused the credentials \(SignatureDoesNotMatch/);
  } finally {
    for (const [k, v] of [["AWS_ACCESS_KEY_ID", saved.id], ["AWS_SECRET_ACCESS_KEY", saved.secret]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await server3.close();
  }
}, { timeoutMs: 120_000 });

test("cassette ingest and export --help name the shard sources and the webdataset options; bad combinations exit 2", () => {
  const i = cassette("ingest", "--help");
  assert.match(i.out, /SHARD\.tar/);
  assert.match(i.out, /PREFIX-\{000000\.\.000009\}\.tar/);
  const x = cassette("export", "--help");
  for (const o of ["--format F", "--seed N", "--shard-bytes N", "--shard-samples N"]) assert.match(x.out, new RegExp(o));
  const bad = cassette("export", "--store", "sqlite:/nonexistent", "--dataset", "a", "--out", dir, "--seed", "3");
  assert.is(bad.code, 2);
  assert.match(bad.err, /--seed is for --format webdataset/);
  const two = cassette("ingest", "a-000000.tar", "a-000001.tar", "--store", "sqlite:/x", "--dataset", "a");
  assert.match(two.err, /quote a brace pattern/);
});
