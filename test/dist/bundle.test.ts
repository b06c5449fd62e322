/** The esbuild bundle (dist/, built by build.ts) works on its own: stores, ids, and the decode pool's and the loader's read workers' entries. */
import * as assert from "uvu/assert";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";

const dist = new URL("../../dist/mod.js", import.meta.url).href;

test("dist/mod.js exports the public surface and its decode pool starts its bundled worker", async () => {
  const m = await import(dist);
  for (const name of ["Loader", "openStore", "sampleId", "createSplits", "loadSplits", "createJpegDecoder", "requestDevice", "createPreprocessor"]) {
    assert.type(m[name], "function", `dist exports ${name}`);
  }
  assert.is(m.sampleId("fashion-mnist", "train/0"), "6ceecba5-6052-5b9e-9e8a-368b24047c2e");
  const dir = new URL("../fixtures/jpeg/", import.meta.url);
  const name = readdirSync(dir).find((n) => n.endsWith(".jpg"))!;
  const bytes = new Uint8Array(readFileSync(new URL(name, dir)));
  const { createDecodePool } = await import(new URL("../../dist/decode/mod.js", import.meta.url).href);
  const pool = await createDecodePool({ workers: 2 });
  try {
    const img = await pool.decode(bytes.slice()); // the pool transfers (detaches) its input
    const ref = (await m.createJpegDecoder()).decode(bytes);
    assert.is(img.width, ref.width);
    assert.is(img.data.length, ref.data.length);
    assert.ok(img.data.every((v: number, i: number) => v === ref.data[i]), "the pool's worker decodes as the main thread does");
  } finally {
    await pool.close();
  }
});

test("dist/mod.js: a Loader with read workers starts the bundled read worker and decodes there", async () => {
  const m = await import(dist);
  const dir = mkdtempSync(join(tmpdir(), "cassette-dist-"));
  const address = `sqlite:${join(dir, "fm.sqlite")}`;
  try {
    const store = await m.openStore(address);
    await m.ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 16 });
    const ids: string[] = [];
    for await (const page of store.scanNat("fm")) ids.push(...page.map((r: { id: string }) => r.id));
    await store.close();
    const loader = new m.Loader({ store: address, dataset: "fm", ids, batchSize: 8, workers: 1, decode: true });
    let n = 0;
    for await (const b of loader.epoch(0)) n += b.items.filter((s: { image?: { width: number } }) => s.image?.width === 28).length;
    await loader.close();
    assert.is(n, ids.length, "every sample decoded in the bundled worker");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("every subpath package.json exports has its bundle, and each loads", async () => {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  const expect: Record<string, string> = { "./train": "createModel", "./decode": "createDecodePool", "./read": "HedgeSource", "./gpu": "planImage", "./dataset": "loadFashionMnist", "./browser": "Loader" };
  for (const [sub, name] of Object.entries(expect)) {
    const m = await import(new URL(`../../${pkg.exports[sub].default}`, import.meta.url).href);
    assert.type(m[name], "function", `dist ${sub} exports ${name}`);
  }
});
