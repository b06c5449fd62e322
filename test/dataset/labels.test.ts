/**
 * Labels beyond one integer (src/dataset/label.ts), end to end on real stores: a JSONL manifest
 * of JPEGs (cjpeg) with multi-label lists, float vectors, or PNG masks (deflated by zlib) is
 * ingested into SQLite and, where the suite has one, a Cassandra node; the Loader hands each
 * sample once per epoch with its label as given (multi-hot over the classes, the floats, the
 * mask's pixels); on the GPU a mask is cropped and flipped with its image. Bad labels are named
 * errors, and the paths that carry one integer a sample (read workers, exports) refuse the rest.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { testDevice } from "../_support/gpu.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { buildPng } from "../_support/png_build.ts";
import { expectError } from "../_support/expect.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { maskNearestRef, neighbourhood } from "../reference/mask_nearest.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { validateSpec } from "../../src/dataset/spec.ts";
import { openStore } from "../../src/source/open.ts";
import { CassandraStore } from "../../src/source/cassandra/cassandra.ts";
import { exportDataset, exportShards } from "../../src/source/export/export.ts";
import { folderSink } from "../../src/dataset/object_sink.ts";
import { Loader } from "../../src/loader.ts";
import type { Sample } from "../../src/read/sample.ts";
import { planImage } from "../../src/gpu/pack.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import { loaderBatches } from "../../src/train/loader_batches.ts";
import type { DecodedImage } from "../../src/gpu/pack.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-labels-"));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const address = testCassandra(`labels_${seed}`);
  if (!address) return;
  const store = await CassandraStore.open(address, {}, false).catch(() => undefined);
  await store?.client.execute(`DROP KEYSPACE IF EXISTS ${store.keyspace}`);
  await store?.close();
});
const seed = freshSeed();
const next = rng(seed);
const N = 24;

/** N random JPEGs of random sizes, each with a grey PNG mask of its size (values 0..4) and labels of every kind. */
const samples = Array.from({ length: N }, (_, i) => {
  const w = randomInt(next, 8, 40), h = randomInt(next, 8, 40);
  const jpeg = cjpeg(randomBytes(next, w * h * 3), w, h, 3);
  const mask = new Uint8Array(w * h).map(() => randomInt(next, 0, 4));
  const raw = new Uint8Array(h * (w + 1));
  for (let y = 0; y < h; y++) raw.set(mask.subarray(y * w, (y + 1) * w), y * (w + 1) + 1); // filter 0 per row
  const png = buildPng({ width: w, height: h, bitDepth: 8, colorType: 0, raw });
  const names = ["cat", "dog", "car", "tree"].filter(() => next() < 0.5);
  const floats = [next() * 10 - 5, next(), 0.25 + i];
  return { key: `img${i}.jpg`, w, h, jpeg, mask, png, names, floats };
});
for (const s of samples) {
  writeFileSync(join(dir, s.key), s.jpeg);
  writeFileSync(join(dir, s.key.replace(".jpg", ".mask.png")), s.png);
}
const manifest = (name: string, label: (s: (typeof samples)[number]) => Record<string, unknown>) => {
  const file = join(dir, `${name}.jsonl`);
  writeFileSync(file, samples.map((s) => JSON.stringify({ path: s.key, ...label(s) })).join("\n") + "\n");
  return file;
};
const MULTI = manifest("multi", (s) => ({ label: s.names }));
const FLOATS = manifest("floats", (s) => ({ label: s.floats }));
const MASKS = manifest("masks", (s) => ({ mask: s.key.replace(".jpg", ".mask.png") }));
const CLASSES = ["car", "cat", "dog", "tree"]; // names in sorted order

async function readAll(address: string, dataset: string, o: { decode?: boolean } = {}): Promise<Map<string, Sample>[]> {
  const store = await openStore(address);
  const ids: string[] = [];
  for await (const page of store.scanNat(dataset)) ids.push(...page.map((r) => r.id));
  await store.close();
  const loader = new Loader({ store: address, dataset, ids, batchSize: 5, seed: 1, decode: o.decode, decodeWorkers: o.decode ? 1 : undefined });
  const epochs: Map<string, Sample>[] = [];
  try {
    for (let e = 0; e < 2; e++) {
      const got = new Map<string, Sample>();
      for await (const b of loader.epoch(e)) {
        b.items.forEach((s, i) => {
          assert.not.ok(got.has(s.id), `${s.id} twice in epoch ${e}`);
          if (b.targets) {
            assert.equal(Array.from(b.targets.subarray(i * b.targetWidth!, (i + 1) * b.targetWidth!)), Array.from(s.target as Float32Array), "the batch's targets row is the sample's");
          }
          if (b.masks) assert.is(b.masks[i], s.mask, "the batch's mask is the sample's");
          got.set(s.id, s);
        });
      }
      assert.is(got.size, N, `every sample in epoch ${e}`);
      epochs.push(got);
    }
  } finally {
    await loader.close();
  }
  return epochs;
}

const stores: [string, () => string | undefined][] = [
  ["sqlite", () => `sqlite:${join(dir, "labels.sqlite")}`],
  // A keyspace of this seed's own: the samples' ids are their keys', so a node kept from an
  // earlier run would answer that run's labels for them (ingest leaves stored ids as they are).
  ["cassandra", () => testCassandra(`labels_${seed}`)],
];
for (const [kind, addressOf] of stores) {
  const skip = kind === "cassandra" ? NO_CASSANDRA : false;

  test(`${kind}: multi-label lists of names → ints; the Loader hands a multi-hot row and the smallest class`, async () => {
    const address = addressOf()!;
    const store = await openStore(address, { create: true });
    try {
      const sum = await ingest(store, MULTI, { dataset: "multi" });
      assert.is(sum.written + sum.existing, N, `stored (${JSON.stringify(sum.errors)})`);
      const spec = await store.getDataset("multi");
      assert.equal(spec.label, { kind: "ints", classes: CLASSES });
    } finally {
      await store.close();
    }
    for (const got of await readAll(address, "multi")) {
      for (const s of samples) {
        const g = got.get(sampleId("multi", s.key))!;
        const want = CLASSES.map((c) => (s.names.includes(c) ? 1 : 0));
        assert.equal(Array.from(g.target as Float32Array), want, `${s.key} (seed ${seed})`);
        assert.is(g.label, want.indexOf(1), `${s.key}'s class is its smallest, -1 for none`);
        assert.equal(g.data, s.jpeg);
      }
    }
  }, { skip });

  test(`${kind}: float vectors → floats; as given, to float32`, async () => {
    const address = addressOf()!;
    const store = await openStore(address, { create: true });
    try {
      await ingest(store, FLOATS, { dataset: "floats" });
      assert.equal((await store.getDataset("floats")).label, { kind: "floats", length: 3 });
    } finally {
      await store.close();
    }
    for (const got of await readAll(address, "floats")) {
      for (const s of samples) {
        const g = got.get(sampleId("floats", s.key))!;
        assert.equal(Array.from(g.target as Float32Array), Array.from(Float32Array.from(s.floats)), `${s.key} (seed ${seed})`);
        assert.is(g.label, -1);
      }
    }
  }, { skip });

  test(`${kind}: PNG masks → blob; decoded beside the image into Sample.mask`, async () => {
    const address = addressOf()!;
    const store = await openStore(address, { create: true });
    try {
      const sum = await ingest(store, MASKS, { dataset: "masks" });
      assert.is(sum.errors.length, 0, JSON.stringify(sum.errors));
      assert.equal((await store.getDataset("masks")).label, { kind: "blob" });
    } finally {
      await store.close();
    }
    for (const got of await readAll(address, "masks", { decode: true })) {
      for (const s of samples) {
        const g = got.get(sampleId("masks", s.key))!;
        assert.equal(g.target, s.png, "the stored bytes");
        assert.ok(g.mask && g.image, "decoded: image and mask");
        assert.equal([g.mask!.width, g.mask!.height, g.mask!.channels], [s.w, s.h, 1]);
        assert.equal([g.image!.width, g.image!.height], [s.w, s.h]);
        assert.ok(Buffer.from(g.mask!.data).equals(Buffer.from(s.mask)), `${s.key}: the mask's pixels (seed ${seed})`);
      }
    }
  }, { skip });
}

test("GPU: a batch's masks are cropped and flipped with their images (loaderBatches), as the CPU reference", async () => {
  const address = `sqlite:${join(dir, "labels.sqlite")}`;
  const store = await openStore(address, { create: true });
  await ingest(store, MASKS, { dataset: "masks" });
  const ids: string[] = [];
  for await (const page of store.scanNat("masks")) ids.push(...page.map((r) => r.id));
  await store.close();
  const device = await testDevice();
  const W = 12, H = 10;
  const pre = await createPreprocessor(device, { width: W, height: H, channels: 3, crop: { kind: "random-resized", scale: [0.2, 1] }, flip: 0.5, seed: 5 });
  const byId = new Map(samples.map((s) => [sampleId("masks", s.key), s]));
  // Decoded here whole, and in read workers only the box each plan reads (decode: { plan }):
  // the masks are the whole frame's, their plans the image's on it either way.
  for (const how of ["whole", "planned"] as const) {
    const loader = how === "whole"
      ? new Loader<DecodedImage>({ store: address, dataset: "masks", ids, batchSize: 8, seed: 2, decode: true, decodeWorkers: 0, transform: (s) => s.image! })
      : new Loader<Sample>({ store: address, dataset: "masks", ids, batchSize: 8, seed: 2, workers: 2, readAhead: false, decode: { plan: pre.options } });
    let mirrored = 0, n = 0;
    try {
      for await (const b of loaderBatches(loader, pre, 0)) {
        assert.ok(b.masks, "masks out");
        const got = new Uint32Array(await readBuffer(device, b.masks!.buffer, b.masks!.bytes));
        b.ids.forEach((id, i) => {
          const s = byId.get(id)!;
          const m = { data: s.mask, width: s.w, height: s.h, channels: 1 };
          const p = b.masks!.plans[i];
          assert.equal(p, planImage(s.w, s.h, pre.options, 0, id), `${how}: ${s.key}'s mask plan is its image's (seed ${seed})`);
          mirrored += +p.mirror;
          n++;
          const ref = maskNearestRef(m, p, W, H);
          for (let k = 0; k < W * H; k++) {
            const g = got[i * W * H + k];
            if (g === ref.values[k]) continue;
            assert.ok(ref.alt[k] >= 0 && neighbourhood(m, p, W, H, k % W, Math.floor(k / W)).has(g), `${how}: ${s.key} pixel ${k}: ${g}, want ${ref.values[k]} (seed ${seed})`);
          }
        });
      }
    } finally {
      await loader.close();
    }
    assert.is(n, N);
    assert.ok(mirrored > 0 && mirrored < N, `some mirrored, some not: ${mirrored} of ${N}`);
  }
  pre.destroy();
});

test("bad labels are named: a class out of range, a vector of another length, empty bytes, a mixed manifest; a bad spec", async () => {
  const store = await openStore(`sqlite:${join(dir, "bad.sqlite")}`, { create: true });
  try {
    await store.createDataset(validateSpec({ version: 1, name: "m", columns: [], groupBy: [], label: { kind: "ints", classes: ["a", "b"] } }));
    await expectError(store.put("m", [{ key: "k", label: [0, 2], data: new Uint8Array([1]) }]), "ERR_INVALID_OPTION", /sample 'k' of 'm' as its label must list classes from 0 to 1 \(the dataset's 2\): current value is \[0,2\]/);
    await store.createDataset(validateSpec({ version: 1, name: "f", columns: [], groupBy: [], label: { kind: "floats", length: 2 } }));
    await expectError(store.put("f", [{ key: "k", label: [1, 2, 3], data: new Uint8Array([1]) }]), "ERR_INVALID_OPTION", /its label must hold 2 numbers: current value has 3/);
    await expectError(store.put("f", [{ key: "k", label: [1, NaN], data: new Uint8Array([1]) }]), "ERR_INVALID_OPTION", /finite 32-bit floats: value 1 is NaN/);
    await store.createDataset(validateSpec({ version: 1, name: "b", columns: [], groupBy: [], label: { kind: "blob" } }));
    await expectError(store.put("b", [{ key: "k", label: new Uint8Array(0), data: new Uint8Array([1]) }]), "ERR_INVALID_OPTION", /must be non-empty bytes \(kind 'blob'\)/);
    await expectError(store.put("b", [{ key: "k", label: 3, data: new Uint8Array([1]) }]), "ERR_INVALID_OPTION", /must be non-empty bytes \(kind 'blob'\): current value is 3/);
    assert.throws(() => validateSpec({ version: 1, name: "x", columns: [], groupBy: [], label: { kind: "strings" } as never }), /label kind must be 'int', 'ints', 'floats' or 'blob': current value is "strings"/);
    assert.throws(() => validateSpec({ version: 1, name: "x", columns: [], groupBy: [], label: { kind: "floats", length: 0 } }), /'length' must be an integer from 1 to 65536: current value is 0/);
    assert.throws(() => validateSpec({ version: 1, name: "x", columns: [], groupBy: [], label: { kind: "ints" } as never }), /'classes' must be a non-empty array/);
    const mixed = join(dir, "mixed.jsonl");
    writeFileSync(mixed, `${JSON.stringify({ path: "img0.jpg", label: [1, 2] })}\n${JSON.stringify({ path: "img1.jpg", label: 3 })}\n`);
    await expectError(ingest(store, mixed, { dataset: "mixed" }), "ERR_MALFORMED_INPUT", /row 2's label is a list where row 1's is not/);
    const uneven = join(dir, "uneven.jsonl");
    writeFileSync(uneven, `${JSON.stringify({ path: "img0.jpg", label: [0.5, 2] })}\n${JSON.stringify({ path: "img1.jpg", label: [0.5] })}\n`);
    await expectError(ingest(store, uneven, { dataset: "uneven" }), "ERR_MALFORMED_INPUT", /row 2's label holds 1 numbers where row 1's holds 2/);
    // Whole numbers read as classes unless the kind says floats.
    const whole = join(dir, "whole.jsonl");
    writeFileSync(whole, `${JSON.stringify({ path: "img0.jpg", label: [1, 2] })}\n${JSON.stringify({ path: "img1.jpg", label: [3, 0] })}\n`);
    await ingest(store, whole, { dataset: "whole-ints" });
    assert.equal((await store.getDataset("whole-ints")).label, { kind: "ints", classes: ["0", "1", "2", "3"] });
    await ingest(store, whole, { dataset: "whole-floats", labelKind: "floats" });
    assert.equal((await store.getDataset("whole-floats")).label, { kind: "floats", length: 2 });
  } finally {
    await store.close();
  }
});

test("what carries one integer a sample refuses the rest by name (exports); read workers carry them as read here, in packets and sample by sample", async () => {
  const address = `sqlite:${join(dir, "labels.sqlite")}`;
  const store = await openStore(address, { create: true });
  await ingest(store, FLOATS, { dataset: "floats" });
  const ids: string[] = [];
  for await (const page of store.scanNat("floats")) ids.push(...page.map((r) => r.id));
  try {
    await expectError(exportDataset(store, "floats", join(dir, "out-files")), "ERR_UNSUPPORTED", /labels are of kind 'floats' and an export's labels.json hold one integer a sample/);
    await expectError(exportShards(store, "floats", await folderSink(join(dir, "out-shards"))), "ERR_UNSUPPORTED", /labels are of kind 'floats' and WebDataset shards hold one integer/);
  } finally {
    await store.close();
  }
  // Batch-sized packets (NOTE [ Packets ], src/read/packet.ts) carry the vectors: the same
  // batches as reading here; and so do single fetches (a transform function on this thread takes
  // samples one by one), whose answers come in the same format.
  const o = { store: address, dataset: "floats", ids, batchSize: 3, order: "strict" as const, seed: 4 };
  const [here, there, single] = [new Loader({ ...o, workers: 0 }), new Loader({ ...o, workers: 2 }), new Loader({ ...o, workers: 1, transform: (s) => s })];
  try {
    const a = await Array.fromAsync(here.epoch(0));
    for (const [what, loader] of [["packets", there], ["sample by sample", single]] as const) {
      const b = await Array.fromAsync(loader.epoch(0));
      assert.is(b.every((x) => x.images), what === "packets", `${what}: the workers' packets`);
      assert.equal(b.map((x) => x.ids), a.map((x) => x.ids), what);
      assert.equal(b.map((x) => [x.targetWidth, Array.from(x.targets!)]), a.map((x) => [x.targetWidth, Array.from(x.targets!)]), `${what}: the vectors as read here`);
      assert.equal(b.flatMap((x) => x.items.map((s) => Array.from(s.target as Float32Array))), a.flatMap((x) => x.items.map((s) => Array.from(s.target as Float32Array))), `${what}: each sample's`);
    }
  } finally {
    await here.close();
    await there.close();
    await single.close();
  }
});
