/**
 * Issue 22's round trip, one test through real components: an ImageFolder of fresh random JPEGs
 * (cjpeg) and PNGs (zlib) → `ingest` into SQLite (class folders → labels) → `exportShards` as
 * WebDataset shards into a bucket of a real S3 server (versitygw) → the Loader over
 * `wds:s3://…/PREFIX.index.json` (shards streamed, samples ready as parsed, decoded in the
 * pool) → `loaderBatches` on the GPU. Every sample arrives exactly once per epoch, with its
 * folder's label, and its pixels in the training tensor are the GPU preprocessing of the file
 * it was made from (decoded on the CPU here, preprocessed by the reference).
 */
import * as assert from "uvu/assert";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_S3, startS3Server } from "../_support/s3_server.ts";
import { testDevice, assertClose } from "../_support/gpu.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { buildPng } from "../_support/png_build.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { preprocessRef } from "../reference/preprocess.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { openStore } from "../../src/source/open.ts";
import { exportShards, openSink } from "../../src/source/export/export.ts";
import { open } from "../../src/read/open.ts";
import { Loader } from "../../src/loader.ts";
import { createDecoder } from "../../src/decode/decoders.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import { loaderBatches } from "../../src/train/loader_batches.ts";
import type { DecodedImage } from "../../src/gpu/pack.ts";

const skip = NO_S3;
const tmp = mkdtempSync(join(tmpdir(), "cassette-roundtrip-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test("ImageFolder → SQLite → WebDataset shards in S3 → Loader (wds:s3://) → GPU batch: every sample once per epoch, its label, its pixels", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const CLASSES = ["ant", "bee", "cow"];
  const files = new Map<string, { bytes: Uint8Array; label: number }>(); // by the key ingest gives: the path under the folder
  const root = join(tmp, "folder");
  CLASSES.forEach((cls, label) => {
    mkdirSync(join(root, cls), { recursive: true });
    for (let i = 0; i < 7; i++) {
      const w = randomInt(next, 12, 48), h = randomInt(next, 12, 48);
      const png = next() < 0.3;
      let bytes: Uint8Array;
      if (png) {
        const raw = new Uint8Array(h * (w * 3 + 1));
        for (let y = 0; y < h; y++) raw.set(randomBytes(next, w * 3), y * (w * 3 + 1) + 1);
        bytes = buildPng({ width: w, height: h, bitDepth: 8, colorType: 2, raw });
      } else {
        bytes = cjpeg(randomBytes(next, w * h * 3), w, h, 3);
      }
      const name = `${cls}/img${i}.${png ? "png" : "jpg"}`;
      writeFileSync(join(root, name), bytes);
      files.set(name, { bytes, label });
    }
  });

  const store = await openStore(`sqlite:${join(tmp, "rt.sqlite")}`);
  const s3 = await startS3Server();
  let loader: Loader<DecodedImage> | undefined;
  const device = await testDevice();
  const W = 16, H = 16;
  const pre = await createPreprocessor(device, { width: W, height: H, channels: 3 });
  try {
    const sum = await ingest(store, root, { dataset: "folder" });
    assert.equal([sum.written, sum.errors.length], [files.size, 0], JSON.stringify(sum.errors));
    const byId = new Map([...files].map(([key, f]) => [sampleId("folder", key), f]));
    const url = s3.url("roundtrip", "wds");
    const sink = await openSink(url, { credentials: s3.credentials, createBucket: true });
    const out = await exportShards(store, "folder", sink, { seed: 4, maxSamples: 6 });
    await (sink as { close?(): Promise<void> }).close?.();
    assert.ok(out.shards.length >= 3, `several shards: ${out.shards.length}`);
    const [base, query] = url.split("?");
    const source = await open(`wds:${base}/${out.index}?${query}`, { mode: "read", dataset: "folder", s3: { credentials: s3.credentials } });
    loader = new Loader<DecodedImage>({ store: source, ids: [...byId.keys()], batchSize: 5, seed: 9, decode: true, decodeWorkers: 1, transform: (s) => s.image! });
    const auto = await createDecoder("auto");
    for (let epoch = 0; epoch < 2; epoch++) {
      const seen = new Set<string>();
      for await (const b of loaderBatches(loader, pre, epoch, { classes: CLASSES.length })) {
        const x = new Float32Array(await readBuffer(device, b.x, b.n * 3 * W * H * 4));
        const want = new Float32Array(b.n * 3 * W * H);
        const images = b.ids.map((id) => auto.decode(byId.get(id)!.bytes));
        const plans = pre.plan(images, { epoch, ids: b.ids });
        b.ids.forEach((id, i) => {
          assert.ok(byId.has(id), `an id of the folder: ${id}`);
          assert.not.ok(seen.has(id), `${id} twice in epoch ${epoch}`);
          seen.add(id);
          assert.is(b.labels[i], byId.get(id)!.label, `label of ${id}`);
          want.set(preprocessRef(images[i], plans[i], { width: W, height: H, channels: 3, layout: "nchw", mean: [0, 0, 0], std: [1, 1, 1] }), i * 3 * W * H);
        });
        assertClose(x, want, 1e-3, seed);
      }
      assert.is(seen.size, files.size, `every sample in epoch ${epoch}`);
    }
  } finally {
    pre.destroy();
    await loader?.close();
    await store.close();
    await s3.close();
  }
}, { skip, timeoutMs: 120_000 });
