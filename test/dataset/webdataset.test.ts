import * as assert from "uvu/assert";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { NO_PYTHON, NO_WEBDATASET, pythonGroup, pythonTarWrite, webdatasetGroup } from "../_support/tar_tools.ts";
import { folderSink, type ObjectSink, PART_PREFIX } from "../../src/dataset/object_sink.ts";
import { PART_PREFIX as FILE_PART_PREFIX } from "../../src/source/files/file.ts";
import { parseTar } from "../../src/dataset/tar.ts";
import {
  expandBraces, groupSamples, parseShardIndex, sampleImage, sampleLabel, type ShardSample, ShardWriter, splitKey, type WdsSample, widsIndex,
} from "../../src/dataset/webdataset.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-wds-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sha1 = (b: Uint8Array) => createHash("sha1").update(b).digest("hex");
const enc = (s: string) => new TextEncoder().encode(s);

/** Our grouping of whole shards, in the shape pythonGroup gives. */
async function ourGroup(paths: string[]): Promise<{ key: string; files: Record<string, string> }[]> {
  const out: { key: string; files: Record<string, string> }[] = [];
  for (const p of paths) {
    for await (const s of groupSamples(parseTar(new Uint8Array(readFileSync(p))))) {
      out.push({ key: s.key, files: Object.fromEntries([...s.files].map(([ext, e]) => [ext, sha1(e.data)])) });
    }
  }
  return out;
}

/** An ObjectSink in memory: what the shard writer put, by name. */
function memorySink(): ObjectSink & { objects: Map<string, Uint8Array> } {
  const objects = new Map<string, Uint8Array>();
  return {
    where: "memory",
    objects,
    list: () => Promise.resolve([...objects.keys()]),
    read: async function* (name) {
      yield objects.get(name)!;
    },
    put: (name, data) => (objects.set(name, data.slice()), Promise.resolve()),
  };
}

/** Fresh samples: JPEG- or PNG-signed random bytes of random sizes, keys with folders. */
function randomSamples(seed: number, n: number): ShardSample[] {
  const next = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const body = randomBytes(next, randomInt(next, 0, 3000));
    const sig = next() < 0.5 ? [0xff, 0xd8, 0xff] : [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
    const image = new Uint8Array(sig.length + body.length);
    image.set(sig);
    image.set(body, sig.length);
    const label = randomInt(next, 0, 9);
    return { key: `part${i % 3}/s${seed % 1000}_${i}`, image, label, className: `class-${label}`, meta: { n: i } };
  });
}

// --- the key rule --------------------------------------------------------------------------------

test("webdataset key rule: the path up to the first dot of the basename, directory kept", () => {
  assert.equal(splitKey("a/b.c.JPG"), { key: "a/b", ext: "c.JPG" });
  assert.equal(splitKey("x.y/z.json"), { key: "x.y/z", ext: "json" });
  assert.equal(splitKey("s000001.cls"), { key: "s000001", ext: "cls" });
  assert.is(splitKey("noext"), undefined);
  assert.is(splitKey("dir.d/noext"), undefined);
});

test("webdataset grouping equals webdataset's rule run by Python over the same tar (odd names, case, meta entries, a key met twice)", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const names = [
    "a/b.c.JPG", "a/b.cls", "a/b.Json", "x.y/z.json", "x.y/z.png", "noext", "__meta__.json", "__info__/about.json", "a/.hidden.jpg",
    "k1.jpg", "k1.cls", "k2.png", "k1.txt", "dir/k3.seg.png", "dir/k3.jpeg", "k4.CLS",
  ];
  const files = names.map((name, i) => {
    const file = join(dir, `in-${seed}-${i}`);
    writeFileSync(file, randomBytes(next, randomInt(next, 0, 700)));
    return { name, file };
  });
  writeFileSync(join(dir, `spec-${seed}.json`), JSON.stringify(files));
  const path = join(dir, `odd-${seed}.tar`);
  pythonTarWrite(path, join(dir, `spec-${seed}.json`), "pax");
  const ours = await ourGroup([path]);
  assert.equal(ours, pythonGroup([path]), `seed ${seed}`);
  assert.equal(ours.map((s) => s.key), ["a/b", "x.y/z", "__meta__", "a/", "k1", "k2", "k1", "dir/k3", "k4"], "no key for 'noext' or '__info__/'");
  assert.equal(Object.keys(ours[0].files), ["c.jpg", "cls", "json"], "extensions lower-cased");
}, { skip: NO_PYTHON });

// --- labels and images ---------------------------------------------------------------------------

function sample(files: Record<string, string | Uint8Array>): WdsSample {
  const m = new Map(Object.entries(files).map(([ext, v]) => {
    const data = typeof v === "string" ? enc(v) : v;
    return [ext, { name: `k.${ext}`, size: data.length, offset: 0, dataOffset: 512, data }];
  }));
  return { key: "k", files: m, offset: 0, problems: [] };
}

test("webdataset labels: .cls first, then .cls2, the .json's label or cls, an integer .txt; .json class names it; bad ones say why", () => {
  assert.equal(sampleLabel(sample({ cls: " 7\n", json: '{"label": 3, "class": "cat"}' })), { label: 7, className: "cat" });
  assert.equal(sampleLabel(sample({ cls2: "4" })), { label: 4, className: undefined });
  assert.equal(sampleLabel(sample({ json: '{"label": 3}' })), { label: 3, className: undefined });
  assert.equal(sampleLabel(sample({ json: '{"cls": "5", "class": "dog"}' })), { label: 5, className: "dog" });
  assert.equal(sampleLabel(sample({ txt: "12" })), { label: 12, className: undefined });
  assert.match((sampleLabel(sample({ txt: "a caption" })) as { reason: string }).reason, /no label/);
  assert.match((sampleLabel(sample({ cls: "-1" })) as { reason: string }).reason, /\.cls is not a non-negative integer: "-1"/);
  assert.match((sampleLabel(sample({ json: "{oops" })) as { reason: string }).reason, /\.json is not JSON/);
  assert.match((sampleLabel(sample({ json: '{"label": 1.5}' })) as { reason: string }).reason, /"label" is not a non-negative integer: 1\.5/);
  assert.match((sampleImage(sample({ cls: "1" })) as { reason: string }).reason, /no image \(\.jpg, \.jpeg or \.png\): it has \.cls/);
  assert.match((sampleImage(sample({ jpg: "x", png: "y" })) as { reason: string }).reason, /2 images \(\.jpg, \.png\)/);
  assert.is((sampleImage(sample({ jpeg: "x", cls: "1" })) as { ext: string }).ext, "jpeg");
});

test("expandBraces: numeric ranges keep their zero padding; lists; several braces in order", () => {
  assert.equal(expandBraces("s-{000000..000003}.tar"), ["s-000000.tar", "s-000001.tar", "s-000002.tar", "s-000003.tar"]);
  assert.equal(expandBraces("s-{8..11}.tar"), ["s-8.tar", "s-9.tar", "s-10.tar", "s-11.tar"]);
  assert.equal(expandBraces("{a,b}/{0..1}.tar"), ["a/0.tar", "a/1.tar", "b/0.tar", "b/1.tar"]);
  assert.equal(expandBraces("plain.tar"), ["plain.tar"]);
});

// --- writing shards ----------------------------------------------------------------------------

test("ShardWriter: every shard within its byte and sample bounds, every sample once in order, byte-reproducible", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const samples = randomSamples(seed, 60);
  const maxShardBytes = randomInt(next, 6000, 40_000), maxSamples = randomInt(next, 2, 12);
  const write = async () => {
    const sink = memorySink();
    const w = new ShardWriter(sink, { prefix: "train", maxShardBytes, maxSamples });
    for (const s of samples) await w.add(s);
    await w.flush();
    return { sink, written: w.written };
  };
  const { sink, written } = await write();
  const names = [...sink.objects.keys()];
  assert.equal(names, written.map((s) => s.name));
  assert.equal(names, names.map((_, i) => `train-${String(i).padStart(6, "0")}.tar`), "PREFIX-NNNNNN.tar in order");
  const seen: string[] = [];
  const indexed = parseShardIndex(widsIndex("train", written), "train.index.json").shards;
  for (const [name, bytes] of sink.objects) {
    const got: WdsSample[] = [];
    for await (const s of groupSamples(parseTar(bytes, { shard: name }))) got.push(s);
    const listed = indexed.find((s) => s.url === name)!;
    assert.equal(listed.offsets, got.map((s) => s.offset), `${name}: the index lists where each sample begins (seed ${seed})`);
    assert.ok(got.length <= maxSamples, `${name}: ${got.length} samples > ${maxSamples} (seed ${seed})`);
    assert.ok(bytes.length <= maxShardBytes || got.length === 1, `${name}: ${bytes.length} bytes > ${maxShardBytes} with ${got.length} samples (seed ${seed})`);
    for (const s of got) {
      const want = samples[seen.length];
      assert.is(s.key, want.key);
      const img = sampleImage(s) as { ext: string; entry: { data: Uint8Array } };
      assert.is(img.ext, want.image[0] === 0xff ? "jpg" : "png", "extension by signature");
      assert.is(sha1(img.entry.data), sha1(want.image), `bytes of ${s.key}`);
      assert.equal(sampleLabel(s), { label: want.label, className: `class-${want.label}` });
      seen.push(s.key);
    }
  }
  assert.is(seen.length, samples.length, `every sample once (seed ${seed})`);
  // The next shard starts when a sample would not fit: no shard could have taken its successor's first sample.
  const again = await write();
  for (const [name, bytes] of sink.objects) assert.is(sha1(again.sink.objects.get(name)!), sha1(bytes), `${name} byte-reproducible`);
});

test("parseShardIndex: offsets are optional (an index written before them reads as before), and must be increasing, one a sample", () => {
  const index = (offsets?: unknown) => JSON.stringify({ shardlist: [{ url: "a.tar", nsamples: 2, keys: ["x", "y"], ...(offsets === undefined ? {} : { offsets }) }] });
  assert.equal(parseShardIndex(index(), "i").shards, [{ url: "a.tar", nsamples: 2, keys: ["x", "y"] }]);
  assert.equal(parseShardIndex(index([0, 2048]), "i").shards[0].offsets, [0, 2048]);
  for (const bad of [[0], [0, 0], [2048, 0], [0, -1], "0,1", [0, 1.5]]) {
    assert.throws(() => parseShardIndex(index(bad), "i"), (e: Error & { code?: string }) => e.code === "ERR_MALFORMED_INPUT" && /shard 0.*offsets/.test(e.message), JSON.stringify(bad));
  }
});

test("ShardWriter: shards we write group alike under webdataset's rule in Python and in the webdataset package", async () => {
  const seed = freshSeed();
  const out = join(dir, `shards-${seed}`);
  const sink = await folderSink(out);
  assert.is(PART_PREFIX, FILE_PART_PREFIX, "the sink's temporary names are those cassette export skips");
  const w = new ShardWriter(sink, { prefix: "wds", maxSamples: 7 });
  for (const s of randomSamples(seed, 20)) await w.add(s);
  await w.flush();
  const paths = w.written.map((s) => join(out, s.name));
  const ours = await ourGroup(paths);
  assert.is(ours.length, 20);
  if (!NO_PYTHON) assert.equal(pythonGroup(paths), ours, `python (seed ${seed})`);
  assert.not.ok(NO_WEBDATASET, `${NO_WEBDATASET}: the check against it must run`);
  assert.equal(webdatasetGroup(join(out, `wds-{000000..${String(w.written.length - 1).padStart(6, "0")}}.tar`)), ours, `webdataset (seed ${seed})`);
}, { skip: NO_PYTHON });

test("ShardWriter: refuses a key the rule would cut, bytes that are no image, and bad bounds", async () => {
  const sink = memorySink();
  const w = new ShardWriter(sink, { prefix: "p" });
  const jpg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0]);
  for (const [s, re] of [
    [{ key: "a/b.c", image: jpg, label: 0 }, /last path segment must be non-empty and hold no '\.'/],
    [{ key: "a", image: new Uint8Array([1, 2, 3]), label: 0 }, /neither a JPEG nor a PNG/],
  ] as const) {
    try {
      await w.add(s);
      assert.unreachable();
    } catch (e) {
      assert.match((e as Error).message, re);
    }
  }
  assert.throws(() => new ShardWriter(sink, { prefix: "p", maxShardBytes: 0 }), /'maxShardBytes' must be a positive integer/);
  assert.throws(() => new ShardWriter(sink, { prefix: "../p" }), /'prefix' must be a file name/);
});
