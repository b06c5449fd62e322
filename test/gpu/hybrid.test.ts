// The hybrid decode end to end (`decode: "hybrid"`): JPEGs leave the read path as their DCT
// blocks, in the loader's thread, in the decode pool and in read workers' packets, and the GPU
// preprocessor finishes them. The tensor must be the CPU decode's exactly: the GPU IDCT is the
// wasm decoder's integer islow, and upsampling and colour its integer formulas (src/gpu/idct.ts).
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg, cmykJpeg, removeCmykTool } from "../_support/cjpeg.ts";
import { buildPng } from "../_support/png_build.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor, type PreprocessOptions } from "../../src/gpu/preprocess.ts";
import type { DecodedImage } from "../../src/gpu/pack.ts";
import { createDecoder } from "../../src/decode/decoders.ts";
import { type DecodeOptions, isDctImage } from "../../src/decode/decoder.ts";
import { dctBytes, readDct, writeDct } from "../../src/decode/dct.ts";
import { cpuTensor } from "../../src/decode/tensor.ts";
import { CassetteError } from "../../src/errors.ts";
import { imageStore } from "../_support/image_store.ts";
import { Loader, type LoaderOptions } from "../../src/loader.ts";
import type { Sample } from "../../src/read/sample.ts";
import { loaderBatches } from "../../src/train/loader_batches.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-hybrid-"));
afterAll(() => {
  removeCmykTool();
  rmSync(tmp, { recursive: true, force: true });
});

/** Small fresh files (lavapipe): cjpeg of every sampling, grey, progressive, restart markers; a CMYK JPEG and a PNG, which stay pixels. */
function files(next: () => number): { bytes: Uint8Array; dct: boolean }[] {
  const size = () => [randomInt(next, 24, 70), randomInt(next, 20, 60)];
  const out: { bytes: Uint8Array; dct: boolean }[] = [];
  const colour = (args: string[]) => {
    const [w, h] = size();
    out.push({ bytes: cjpeg(randomBytes(next, w * h * 3), w, h, 3, [...args, "-quality", String(randomInt(next, 50, 98))]), dct: true });
  };
  for (const sampling of ["1x1", "2x1", "1x2", "2x2"]) colour(["-sample", sampling]);
  colour(["-sample", "2x2", "-progressive"]);
  colour(["-sample", "2x1", "-restart", "1"]);
  const [w, h] = size();
  out.push({ bytes: cjpeg(randomBytes(next, w * h), w, h, 1), dct: true });
  const [cw, ch] = size();
  out.push({ bytes: cmykJpeg(randomBytes(next, cw * ch * 3), cw, ch, "cmyk", 90, "1x1"), dct: false });
  const [pw, ph] = size();
  const raw = new Uint8Array((pw * 3 + 1) * ph);
  for (let y = 0; y < ph; y++) raw.set(randomBytes(next, pw * 3), y * (pw * 3 + 1) + 1);
  out.push({ bytes: buildPng({ width: pw, height: ph, bitDepth: 8, colorType: 2, raw }), dct: false });
  return out;
}

const POLICIES: PreprocessOptions[] = [
  { width: 16, height: 16, crop: { kind: "random-resized", scale: [0.1, 0.9] }, flip: 0.5 },
  { width: 12, height: 20, crop: { kind: "center", resize: 24 }, channels: 1 },
];

/** Where the Loader decodes: its own thread, the decode pool, read workers' packets. */
const PLACES: { name: string; o: Partial<LoaderOptions<Sample>> }[] = [
  { name: "this thread", o: { workers: 0, decodeWorkers: 0 } },
  { name: "the decode pool", o: { workers: 0, decodeWorkers: 1 } },
  { name: "2 read workers", o: { workers: 2 } },
];

test("decode: \"hybrid\": JPEGs come as DCT blocks (here, in the pool, in read workers' packets), CMYK and PNG as pixels, and loaderBatches' tensor is the CPU decode's exactly", async () => {
  const seed = freshSeed();
  const all = files(rng(seed));
  const { address, ids } = await imageStore(tmp, `h${seed}`, "h", all);
  const byId = new Map(ids.map((id, i) => [id, all[i]]));
  const device = await testDevice();
  const auto = await createDecoder("auto");
  try {
    for (const policy of POLICIES) {
      const pre = await createPreprocessor(device, { ...policy, seed });
      try {
        for (const place of PLACES) {
          const what = `seed ${seed}, ${place.name}, ${JSON.stringify(policy.crop)}`;
          const loader = new Loader<Sample>({ store: address, dataset: "h", ids, batchSize: 4, seed: 5, decode: "hybrid", ...place.o });
          try {
            // Epoch 0: what each sample came as.
            let dct = 0;
            for await (const b of loader.epoch(0)) {
              b.ids.forEach((id, i) => {
                const s = b.items[i];
                const asDct = b.images?.dctBytes ? b.images.dctBytes[i] > 0 : s.coefficients !== undefined;
                assert.is(asDct, byId.get(id)!.dct, `${what}: sample ${i} of the batch as DCT blocks or pixels`);
                if (asDct) assert.ok(isDctImage(s.coefficients!) && s.image === undefined, `${what}: coefficients and no pixels`);
                else assert.ok(s.image && s.image.data.length === s.image.width * s.image.height * s.image.channels, `${what}: pixels`);
                dct += asDct ? 1 : 0;
              });
              b.release?.();
            }
            assert.is(dct, all.filter((f) => f.dct).length, `${what}: every JPEG but the CMYK one as DCT blocks`);
            // Epoch 1: the tensor, against the CPU decode's through the same preprocessor.
            let seen = 0;
            for await (const b of loaderBatches(loader, pre, 1)) {
              const got = new Float32Array(await readBuffer(device, b.x, b.n * (policy.channels ?? 3) * policy.width * policy.height * 4));
              const images = b.ids.map((id): DecodedImage => {
                const i = auto.decode(byId.get(id)!.bytes);
                return { data: i.data, width: i.width, height: i.height, channels: i.channels };
              });
              const want = await pre.run(images, { epoch: 1, ids: b.ids });
              assertClose(got, new Float32Array(await readBuffer(device, want.buffer, want.bytes)), 0, seed);
              seen += b.n;
            }
            assert.is(seen, ids.length, `${what}: every sample once`);
          } finally {
            await loader.close();
          }
        }
      } finally {
        pre.destroy();
      }
    }
  } finally {
    auto.close();
  }
});

test("decode: { hybrid: true, grey: true }: a YCbCr JPEG gives its luma's blocks only, and the tensor is the CPU's grey decode's exactly", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const all = files(next).filter((f) => f.dct);
  const { address, ids } = await imageStore(tmp, `g${seed}`, "h", all);
  const byId = new Map(ids.map((id, i) => [id, all[i].bytes]));
  const device = await testDevice();
  const pre = await createPreprocessor(device, { width: 14, height: 14, channels: 1, crop: { kind: "random-resized" }, seed });
  const auto = await createDecoder("auto");
  const decode: DecodeOptions = { hybrid: true, grey: true };
  const loader = new Loader<Sample>({ store: address, dataset: "h", ids, batchSize: 3, seed: 2, decode, workers: 0, decodeWorkers: 0 });
  try {
    for await (const b of loader.epoch(0)) {
      for (const s of b.items) assert.ok(s.coefficients?.colorSpace === "gray" && s.coefficients.components.length === 1, `seed ${seed}: one grey component`);
    }
    for await (const b of loaderBatches(loader, pre, 1)) {
      const got = new Float32Array(await readBuffer(device, b.x, b.n * 14 * 14 * 4));
      const want = await pre.run(b.ids.map((id) => auto.decode(byId.get(id)!, { grey: true })), { epoch: 1, ids: b.ids });
      assertClose(got, new Float32Array(await readBuffer(device, want.buffer, want.bytes)), 0, seed);
    }
  } finally {
    await loader.close();
    auto.close();
    pre.destroy();
  }
});

test("decode: { plan, hybrid: true } in read workers: each JPEG's blocks only for the box its plan reads (its region), the tensor the whole decode's exactly, from fewer bytes", async () => {
  const seed = freshSeed();
  const all = files(rng(seed));
  const { address, ids } = await imageStore(tmp, `p${seed}`, "h", all);
  const byId = new Map(ids.map((id, i) => [id, all[i]]));
  const device = await testDevice();
  const pre = await createPreprocessor(device, { width: 16, height: 16, crop: { kind: "random-resized", scale: [0.05, 0.4] }, flip: 0.5, seed });
  const auto = await createDecoder("auto");
  const loader = new Loader<Sample>({ store: address, dataset: "h", ids, batchSize: 4, seed: 3, workers: 2, readAhead: false, decode: { plan: pre.options, hybrid: true } });
  try {
    let regions = 0, planned = 0, whole = 0;
    for (const epoch of [0, 1]) {
      for await (const b of loader.epoch(epoch)) {
        b.items.forEach((s) => (regions += s.coefficients?.region ? 1 : 0));
        const got = await pre.run(b.images!, { epoch, ids: b.ids });
        const images = b.ids.map((id): DecodedImage => {
          const i = auto.decode(byId.get(id)!.bytes);
          return { data: i.data, width: i.width, height: i.height, channels: i.channels };
        });
        const want = await pre.run(images, { epoch, ids: b.ids });
        b.release?.();
        assertClose(new Float32Array(await readBuffer(device, got.buffer, got.bytes)), new Float32Array(await readBuffer(device, want.buffer, want.bytes)), 0, seed);
        planned += got.uploadBytes;
        // The whole images' blocks, as decode: "hybrid" without a plan hands them over.
        const blocks = b.ids.map((id) => auto.decodeDct!(byId.get(id)!.bytes, { hybrid: true }) ?? auto.decode(byId.get(id)!.bytes));
        whole += (await pre.run(blocks, { epoch, ids: b.ids })).uploadBytes;
      }
    }
    assert.is(regions, 2 * all.filter((f) => f.dct).length, `seed ${seed}: every JPEG but the CMYK one as a region's blocks, both epochs`);
    assert.ok(planned < whole, `seed ${seed}: ${planned} bytes uploaded for the regions' blocks, ${whole} for the whole images' blocks`);
  } finally {
    await loader.close();
    auto.close();
    pre.destroy();
  }
});

test("a DCT record reads back as the image written (views, no copy), and a cut or foreign record is a named error", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const jpeg = await createDecoder("jpeg");
  try {
    for (const f of files(next).filter((f) => f.dct)) {
      const info = jpeg.decode(f.bytes);
      const region = { x: randomInt(next, 0, info.width - 1), y: randomInt(next, 0, info.height - 1), width: 0, height: 0 };
      region.width = randomInt(next, 1, info.width - region.x);
      region.height = randomInt(next, 1, info.height - region.y);
      for (const img of [jpeg.decodeDct!(f.bytes)!, jpeg.decodeDct!(f.bytes, { region })!]) {
        const n = dctBytes(img);
        const buf = new Uint8Array(n + 8);
        assert.is(writeDct(img, buf, 4), n);
        const back = readDct(buf, 4, n);
        assert.equal({ ...back, components: [] }, { ...img, components: [] }, `seed ${seed}: the header`);
        back.components.forEach((c, j) => {
          const want = img.components[j];
          assert.equal([c.id, c.h, c.v, c.blocksW, c.blocksH, c.width, c.height, c.blockX, c.blockY], [want.id, want.h, want.v, want.blocksW, want.blocksH, want.width, want.height, want.blockX, want.blockY]);
          assert.equal(Array.from(c.quant), Array.from(want.quant));
          assert.ok(c.coefficients.every((v, k) => v === want.coefficients[k]), `seed ${seed}: component ${j}'s blocks`);
          assert.is(c.coefficients.buffer, buf.buffer, "a view of the record");
        });
        const named = (e: unknown) => e instanceof CassetteError && e.code === "ERR_MALFORMED_INPUT" && /DCT record/.test(e.message);
        assert.throws(() => readDct(buf, 4, n - 64), named, "cut");
        assert.throws(() => readDct(new Uint8Array(n + 8), 4, n), named, "not a record");
      }
    }
  } finally {
    jpeg.close();
  }
});

test("the hybrid decode is refused where pixels are needed: beside a transform, and by the CPU tensor", async () => {
  const module = { module: new URL("../../src/decode/transforms/random_resized_crop.ts", import.meta.url), options: { size: 8 } };
  assert.throws(
    () => new Loader({ store: "sqlite:/nonexistent.sqlite", dataset: "h", ids: ["x"], batchSize: 1, workers: 0, decode: "hybrid", transform: module }),
    (e: unknown) => e instanceof CassetteError && e.code === "ERR_INVALID_OPTION" && /hybrid/.test(e.message),
  );
  assert.throws(
    () => new Loader({ store: "sqlite:/nonexistent.sqlite", dataset: "h", ids: ["x"], batchSize: 1, decode: "hybird" as never }),
    (e: unknown) => e instanceof CassetteError && e.code === "ERR_INVALID_OPTION" && /"hybrid"/.test(e.message),
  );
  const next = rng(freshSeed());
  const jpeg = await createDecoder("jpeg");
  try {
    const img = jpeg.decodeDct!(files(next)[0].bytes)!;
    assert.throws(() => cpuTensor([img as never], { width: 8, height: 8 }), (e: unknown) => e instanceof CassetteError && e.code === "ERR_UNSUPPORTED" && /hybrid/.test(e.message));
  } finally {
    jpeg.close();
  }
});
