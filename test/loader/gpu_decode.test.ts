// The GPU decode through the read path (`decode: "gpu"`): a baseline JPEG leaves the read path
// as its scan (in the loader's thread, in the decode pool, in read workers' packets as a scan
// record), a progressive one and a PNG as pixels, the progressive ones counted
// (`stats().gpuRefused`); the preprocessed tensor is the pixel read's (`decode: true`) exactly.
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { buildPng } from "../_support/png_build.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor, type PreprocessOptions, type Preprocessor } from "../../src/gpu/preprocess.ts";
import { isJpegScan } from "../../src/decode/jpeg_scan.ts";
import { cpuTensor } from "../../src/decode/tensor.ts";
import { CassetteError } from "../../src/errors.ts";
import { imageStore } from "../_support/image_store.ts";
import type { Batch } from "../../src/assemble/batch.ts";
import { Loader, type LoaderOptions } from "../../src/loader.ts";
import type { Sample } from "../../src/read/sample.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-gpu-decode-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

type Kind = "scan" | "refused" | "pixels";

/** Small fresh files (lavapipe): baseline cjpeg of every sampling, grey, restart markers; progressive ones; a PNG. */
function files(next: () => number): { bytes: Uint8Array; kind: Kind }[] {
  const size = () => [randomInt(next, 20, 64), randomInt(next, 16, 56)];
  const out: { bytes: Uint8Array; kind: Kind }[] = [];
  const colour = (args: string[], kind: Kind) => {
    const [w, h] = size();
    out.push({ bytes: cjpeg(randomBytes(next, w * h * 3), w, h, 3, [...args, "-quality", String(randomInt(next, 50, 98))]), kind });
  };
  for (const sampling of ["1x1", "2x1", "2x2"]) colour(["-sample", sampling], "scan");
  colour(["-sample", "2x1", "-restart", "1"], "scan");
  const [w, h] = size();
  out.push({ bytes: cjpeg(randomBytes(next, w * h), w, h, 1), kind: "scan" });
  colour(["-sample", "2x2", "-progressive"], "refused");
  colour(["-sample", "1x1", "-progressive"], "refused");
  const [pw, ph] = size();
  const raw = new Uint8Array((pw * 3 + 1) * ph);
  for (let y = 0; y < ph; y++) raw.set(randomBytes(next, pw * 3), y * (pw * 3 + 1) + 1);
  out.push({ bytes: buildPng({ width: pw, height: ph, bitDepth: 8, colorType: 2, raw }), kind: "pixels" });
  return out;
}

/** Where the Loader decodes: its own thread, the decode pool, read workers' packets (with a planned decode too). */
const PLACES: { name: string; o: Partial<LoaderOptions<Sample>>; planned?: boolean }[] = [
  { name: "this thread", o: { workers: 0, decodeWorkers: 0 } },
  { name: "the decode pool", o: { workers: 0, decodeWorkers: 1 } },
  { name: "2 read workers", o: { workers: 2 } },
  { name: "2 read workers, planned", o: { workers: 2 }, planned: true },
];

/** A batch's tensor as cassette read's --preprocess makes it: the packet's table, or each sample's scan, blocks or pixels. */
async function tensorOf(device: GPUDevice, pre: Preprocessor, b: Batch<Sample>, epoch: number): Promise<{ x: Float32Array; scans: number; cpuDecoded: number }> {
  const images = b.images ?? b.items.map((s) => s.scan ?? s.coefficients ?? s.image!);
  const out = await pre.run(images, { epoch, ids: b.ids });
  const x = new Float32Array(await readBuffer(device, out.buffer, out.bytes));
  return { x, scans: out.gpuDecode?.images ?? 0, cpuDecoded: out.gpuDecode?.cpuDecoded.length ?? 0 };
}

const POLICY: PreprocessOptions = { width: 16, height: 12, crop: { kind: "random-resized", scale: [0.2, 0.9] }, flip: 0.5 };

test("decode: \"gpu\": baseline JPEGs come as scans (here, in the pool, in read workers' packets), progressive ones and a PNG as pixels and the progressive ones counted; the tensor is the pixel read's exactly", async () => {
  const seed = freshSeed();
  const all = files(rng(seed));
  const { address, ids } = await imageStore(tmp, `g${seed}`, "g", all);
  const byId = new Map(ids.map((id, i) => [id, all[i]]));
  const refusedFiles = all.filter((f) => f.kind === "refused").length;
  const scanFiles = all.filter((f) => f.kind === "scan").length;
  const device = await testDevice();
  const pre = await createPreprocessor(device, { ...POLICY, seed });
  // Strict order and one seed: both reads hand over the same batches, so their tensors compare.
  const common = { store: address, dataset: "g", ids, batchSize: 4, seed: 3, order: "strict" as const };
  try {
    // The pixel read's tensors, the reference.
    const want: Float32Array[] = [];
    const plain = new Loader<Sample>({ ...common, decode: true, workers: 0, decodeWorkers: 0 });
    try {
      for await (const b of plain.epoch(0)) want.push((await tensorOf(device, pre, b, 0)).x);
      assert.is(plain.stats().gpuRefused, undefined, "no GPU decode, no count");
    } finally {
      await plain.close();
    }
    for (const place of PLACES) {
      const what = `seed ${seed}, ${place.name}`;
      const decode = place.planned ? { gpu: true, plan: pre.options } : "gpu" as const;
      const loader = new Loader<Sample>({ ...common, decode, ...place.o });
      try {
        let k = 0, scans = 0, gpuScans = 0;
        for await (const b of loader.epoch(0)) {
          b.ids.forEach((id, i) => {
            const s = b.items[i];
            const kind = byId.get(id)!.kind;
            const asScan = b.images?.scanBytes ? b.images.scanBytes[i] > 0 : s.scan !== undefined;
            assert.is(asScan, kind === "scan", `${what}: sample ${id} (${kind}) as a scan or pixels`);
            if (asScan) {
              assert.ok(isJpegScan(s.scan!) && s.image === undefined && s.coefficients === undefined, `${what}: a scan and no pixels`);
              assert.equal(Array.from(s.scan!.file), Array.from(byId.get(id)!.bytes), `${what}: the scan carries its file`);
            } else assert.ok(s.image && s.image.data.length === s.image.width * s.image.height * s.image.channels, `${what}: pixels`);
            scans += asScan ? 1 : 0;
          });
          const got = await tensorOf(device, pre, b, 0);
          gpuScans += got.scans;
          assert.is(got.cpuDecoded, 0, `${what}: no cjpeg file goes back to the CPU`);
          assert.ok(got.x.every((v, i) => Object.is(v, want[k][i])), `${what}: batch ${k}'s tensor is the pixel read's (first difference at ${got.x.findIndex((v, i) => !Object.is(v, want[k][i]))})`);
          k++;
          b.release?.();
        }
        assert.is(k, want.length, `${what}: the batches`);
        assert.is(scans, scanFiles, `${what}: every baseline JPEG as a scan`);
        assert.is(gpuScans, scanFiles, `${what}: the GPU decoded them`);
        assert.is(loader.stats().gpuRefused, refusedFiles, `${what}: the progressive JPEGs counted as refused`);
      } finally {
        await loader.close();
      }
    }
  } finally {
    pre.destroy();
  }
}, { timeoutMs: 300_000 });

test("the GPU decode is refused where pixels are needed: beside a transform, with a fixed region, by the CPU tensor; a scale keeps JPEGs as pixels, uncounted", async () => {
  const module = { module: new URL("../../src/decode/transforms/random_resized_crop.ts", import.meta.url), options: { size: 8 } };
  const invalid = (re: RegExp) => (e: unknown) => e instanceof CassetteError && e.code === "ERR_INVALID_OPTION" && re.test(e.message);
  assert.throws(() => new Loader({ store: "sqlite:/nonexistent.sqlite", dataset: "g", ids: ["x"], batchSize: 1, workers: 0, decode: "gpu", transform: module }), invalid(/GPU decode/));
  assert.throws(
    () => new Loader({ store: "sqlite:/nonexistent.sqlite", dataset: "g", ids: ["x"], batchSize: 1, workers: 0, decode: { gpu: true, region: { x: 0, y: 0, width: 4, height: 4 } } }),
    invalid(/'region' asks for a box of each: current value is \{"x":0,"y":0,"width":4,"height":4\}/),
  );
  assert.throws(() => new Loader({ store: "sqlite:/nonexistent.sqlite", dataset: "g", ids: ["x"], batchSize: 1, decode: { gpu: 1 as never } }), invalid(/'gpu' must be true or false/));
  const seed = freshSeed();
  const all = files(rng(seed));
  const { address, ids } = await imageStore(tmp, `r${seed}`, "g", all);
  const loader = new Loader<Sample>({ store: address, dataset: "g", ids, batchSize: 16, workers: 0, decodeWorkers: 0, decode: { gpu: true, scale: 0.5 } });
  try {
    for await (const b of loader.epoch(0)) {
      assert.ok(b.items.every((s) => s.image && !s.scan), `seed ${seed}: a scale decodes every file to pixels`);
    }
    assert.is(loader.stats().gpuRefused, 0, `seed ${seed}: the options, not readScan, kept them on the CPU`);
  } finally {
    await loader.close();
  }
  const plain = new Loader<Sample>({ store: address, dataset: "g", ids, batchSize: 16, workers: 0, decodeWorkers: 0, decode: "gpu" });
  try {
    for await (const b of plain.epoch(0)) {
      const images = b.items.map((s) => s.scan ?? s.image!);
      assert.throws(() => cpuTensor(images as never, { width: 8, height: 8 }), (e: unknown) => e instanceof CassetteError && e.code === "ERR_UNSUPPORTED" && /decode: "gpu"/.test(e.message));
    }
  } finally {
    await plain.close();
  }
});
