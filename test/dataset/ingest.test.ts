import * as assert from "uvu/assert";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import jpeg from "jpeg-js";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { freshSeed, randomBytes, rng } from "../_support/random.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { readIdxDataset } from "../../src/dataset/idx.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { labelClasses } from "../../src/dataset/label.ts";
import { openStore } from "../../src/source/open.ts";
import type { Store } from "../../src/dataset/store.ts";
import { CassetteError } from "../../src/errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-ingest-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const FASHION = "/usr/share/datasets/fashion-mnist/";
const run = `${runtime.name}-${(runtime.now() * 1000).toFixed(0).slice(-9)}`;

/** An ImageFolder of real cjpeg JPEGs from Fashion-MNIST pixels, plus four it must skip. */
async function imageFolder(): Promise<string> {
  const root = join(dir, `folder-${Math.random().toString(36).slice(2)}`);
  const [train] = await readIdxDataset(FASHION);
  for (let i = 0; i < 30; i++) {
    const cls = join(root, `class_${train.labels[i]}`);
    mkdirSync(cls, { recursive: true });
    writeFileSync(join(cls, `img${i}.jpg`), cjpeg(train.images.subarray(i * 784, (i + 1) * 784), 28, 28, 1));
  }
  const good = cjpeg(train.images.subarray(0, 784), 28, 28, 1);
  writeFileSync(join(root, "class_0", "truncated.jpg"), good.subarray(0, good.length - 40));
  writeFileSync(join(root, "class_0", "picture.jpg"), new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
  // Valid JPEGs the decoder cannot read: arithmetic coding (cjpeg -arithmetic), and 12-bit
  // samples (the same file with its frame's precision byte set to 12).
  writeFileSync(join(root, "class_0", "arith.jpg"), cjpeg(train.images.subarray(0, 784), 28, 28, 1, ["-arithmetic"]));
  const twelve = good.slice();
  const sof = twelve.findIndex((v, k) => v === 0xff && twelve[k + 1] === 0xc0);
  twelve[sof + 4] = 12;
  writeFileSync(join(root, "class_0", "twelve.jpg"), twelve);
  return root;
}

test("ImageFolder: real JPEGs stored, bad files reported by path and skipped; a re-run stores nothing twice", async () => {
  const root = await imageFolder();
  const store = await openStore(`sqlite:${join(dir, "folder.sqlite")}`);
  try {
    const first = await ingest(store, root, { dataset: "folder" });
    assert.is(first.written, 30);
    assert.is(first.errors.length, 4);
    const byPath = Object.fromEntries(first.errors.map((e) => [e.path!.split("/").pop(), e.reason]));
    assert.match(byPath["truncated.jpg"], /truncated/);
    assert.match(byPath["picture.jpg"], /not a JPEG.*PNG/);
    assert.match(byPath["arith.jpg"], /SOF9\) uses arithmetic coding, which cassette's decoder does not read \(jpegtran/);
    assert.match(byPath["twelve.jpg"], /SOF0\) uses 12-bit samples, which cassette's decoder does not read/);
    const spec = await store.getDataset("folder");
    assert.ok(labelClasses(spec.label)!.every((c) => c.startsWith("class_")));
    const again = await ingest(store, root, { dataset: "folder" });
    assert.is(again.written, 0);
    assert.is(again.existing, 30);
    assert.is((await store.info("folder")).count, 30);
    try {
      await ingest(store, root, { dataset: "folder-strict", strict: true });
      assert.unreachable("strict stops at a bad file");
    } catch (e) {
      assert.is((e as CassetteError).code, "ERR_MALFORMED_INPUT");
      assert.match((e as Error).message, /(truncated|picture|arith|twelve)\.jpg/);
    }
  } finally {
    await store.close();
  }
});

async function idxRoundTrip(store: Store, dataset: string) {
  const seed = freshSeed();
  const summary = await ingest(store, `idx:${FASHION}`, { dataset, limit: 40 });
  assert.is(summary.written + summary.existing, 80);
  const splits = await readIdxDataset(FASHION);
  const r = rng(seed);
  const rows = new Map<string, { meta: Record<string, unknown> }>();
  for await (const page of store.scanNat(dataset)) for (const row of page) rows.set(row.id, row);
  for (let n = 0; n < 12; n++) {
    const s = splits[n % 2];
    const i = Math.floor(r() * 40);
    const id = sampleId(dataset, `${s.name}/${i}`);
    const original = s.images.subarray(i * 784, (i + 1) * 784);
    const [got] = await store.get(dataset, [id]);
    assert.is(got.label, s.labels[i], `label of ${s.name}/${i}`);
    // The stored checksum proves which pixels were encoded...
    assert.is(rows.get(id)!.meta.pixels_sha1, createHash("sha1").update(original).digest("hex"));
    // ...and the JPEG decodes back to them within lossy-coding error (PSNR).
    const img = jpeg.decode(got.data, { useTArray: true, formatAsRGBA: false });
    let se = 0;
    for (let p = 0; p < 784; p++) se += (img.data[3 * p] - original[p]) ** 2;
    const psnr = 10 * Math.log10((255 * 255) / Math.max(se / 784, 1e-9));
    assert.ok(psnr > 28, `${s.name}/${i}: PSNR ${psnr.toFixed(1)} dB (seed ${seed})`);
  }
}

test("idx: Fashion-MNIST round trip into SQLite (labels, pixel checksums, PSNR of the JPEGs)", async () => {
  const store = await openStore(`sqlite:${join(dir, "idx.sqlite")}`);
  try {
    await idxRoundTrip(store, "fm");
  } finally {
    await store.close();
  }
});

test("idx: Fashion-MNIST round trip into Cassandra", async () => {
  const store = await openStore(testCassandra("cassette_ingest")!);
  try {
    await idxRoundTrip(store, `fm-${run}`);
  } finally {
    await store.close();
  }
}, { skip: NO_CASSANDRA, timeoutMs: 120_000 });

test("manifest CSV: columns and types inferred, class names become labels, group columns required", async () => {
  const root = join(dir, "manifest");
  mkdirSync(join(root, "patches"), { recursive: true });
  const next = rng(freshSeed());
  const lines = ["path,label,patient_id,slide,x,note"];
  for (let i = 0; i < 12; i++) {
    writeFileSync(join(root, "patches", `p${i}.jpg`), cjpeg(randomBytes(next, 16 * 16 * 3), 16, 16, 3));
    lines.push(`patches/p${i}.jpg,${i % 3 ? "normal" : "tumor"},P${i % 4},${i % 2},${i * 0.5},"a, ""quoted"" note"`);
  }
  writeFileSync(join(root, "m.csv"), lines.join("\n") + "\n");
  const store = await openStore(`sqlite:${join(dir, "manifest.sqlite")}`);
  try {
    const s = await ingest(store, join(root, "m.csv"), { dataset: "patches", groupBy: ["patient_id"] });
    assert.is(s.written, 12);
    const spec = await store.getDataset("patches");
    assert.equal(spec.columns, [
      { name: "patient_id", type: "text" }, { name: "slide", type: "int" }, { name: "x", type: "float" }, { name: "note", type: "text" },
    ]);
    assert.equal(labelClasses(spec.label), ["normal", "tumor"]);
    const rows = [];
    for await (const page of store.scanNat("patches")) rows.push(...page);
    const first = rows.find((r) => r.id === sampleId("patches", "patches/p0.jpg"))!;
    assert.equal(first.meta, { patient_id: "P0", slide: 0, x: 0, note: 'a, "quoted" note' });
    assert.is(first.label, 1); // tumor
    try {
      await ingest(store, join(root, "m.csv"), { dataset: "patches2", groupBy: ["patient"] });
      assert.unreachable();
    } catch (e) {
      assert.match((e as Error).message, /group column 'patient' is not one of its columns \(patient_id, slide, x, note\)/);
    }
  } finally {
    await store.close();
  }
});
