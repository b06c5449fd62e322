import * as assert from "uvu/assert";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { buildPng } from "../_support/png_build.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor, type PreprocessOptions } from "../../src/gpu/preprocess.ts";
import { decodePlanned } from "../../src/gpu/decode_planned.ts";
import type { DecodedImage } from "../../src/gpu/pack.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { createPngDecoder } from "../../src/decode/png.ts";
import type { Decoder } from "../../src/decode/decoder.ts";
import { CassetteError } from "../../src/errors.ts";
import { createDecoder } from "../../src/decode/decoders.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import { openStore } from "../../src/source/open.ts";
import { Loader } from "../../src/loader.ts";

const tmp = mkdtempSync(join(tmpdir(), "cassette-planned-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// Exactly: the kernel works in the frame's pixels either way (NOTE [ Packed preprocessing input ],
// src/gpu/pack.ts), reading the same pixels with the same weights.
const TOL = 0;

/** Small fresh files: cjpeg of every sampling, grey, and a PNG (the GPU is lavapipe here). */
function files(next: () => number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const sampling of ["1x1", "2x1", "1x2", "2x2"]) {
    const w = randomInt(next, 40, 90), h = randomInt(next, 30, 70);
    out.push(cjpeg(randomBytes(next, w * h * 3), w, h, 3, ["-sample", sampling, "-quality", "90"]));
  }
  const w = randomInt(next, 40, 90), h = randomInt(next, 30, 70);
  out.push(cjpeg(randomBytes(next, w * h), w, h, 1));
  const pw = randomInt(next, 30, 70), ph = randomInt(next, 30, 70);
  const raw = new Uint8Array((pw * 3 + 1) * ph);
  for (let y = 0; y < ph; y++) raw.set(randomBytes(next, pw * 3), y * (pw * 3 + 1) + 1);
  out.push(buildPng({ width: pw, height: ph, bitDepth: 8, colorType: 2, raw }));
  return out;
}

async function tensor(device: GPUDevice, pre: Awaited<ReturnType<typeof createPreprocessor>>, images: DecodedImage[], epoch: number, ids: string[]) {
  const batch = await pre.run(images, { epoch, ids });
  return { batch, values: new Float32Array(await readBuffer(device, batch.buffer, batch.bytes)) };
}

const POLICIES: PreprocessOptions[] = [
  { width: 16, height: 16, crop: { kind: "random-resized" }, flip: 0.5 },
  { width: 12, height: 20, crop: { kind: "center", resize: 24 } },
  { width: 16, height: 16, crop: { kind: "random-resized", scale: [0.05, 0.3] }, antialiasAbove: 1.5 },
  { width: 16, height: 16, crop: { kind: "resize" } },
];

test("decodePlanned: only the planned box decoded and uploaded; the same boxes and the same tensor as the whole decode, for fresh JPEGs of every sampling and a PNG", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const device = await testDevice();
  const jpeg = await createJpegDecoder(), png = await createPngDecoder();
  const decoderOf = (b: Uint8Array): Decoder => (b[0] === 0xff ? jpeg : png);
  try {
    const bytes = files(next);
    const ids = bytes.map((_, i) => `id-${seed}-${i}`);
    for (const [k, policy] of POLICIES.entries()) {
      const pre = await createPreprocessor(device, { ...policy, seed: seed + k });
      try {
        const epoch = randomInt(next, 0, 5);
        const whole = bytes.map((b) => decoderOf(b).decode(b)).map((i): DecodedImage => ({ data: i.data, width: i.width, height: i.height, channels: i.channels }));
        const planned = bytes.map((b, i) => pre.decodePlanned(decoderOf(b), b, epoch, ids[i]));
        const a = await tensor(device, pre, whole, epoch, ids);
        const b = await tensor(device, pre, planned, epoch, ids);
        // The boxes: the whole image's, drawn on the frame.
        assert.equal(b.batch.plans, a.batch.plans, `seed ${seed}, policy ${k}`);
        planned.forEach((img, i) => {
          const f = img.frame!;
          assert.equal([f.width, f.height], [whole[i].width, whole[i].height], `seed ${seed}: the frame is the header's size`);
          // The pixels are the whole decode's there (region decode at scale 1).
          for (let y = 0; y < img.height; y++) {
            const row = whole[i].data.subarray(((f.y + y) * f.width + f.x) * img.channels, ((f.y + y) * f.width + f.x + img.width) * img.channels);
            assert.ok(row.every((v, j) => v === img.data[y * img.width * img.channels + j]), `seed ${seed}, image ${i}, row ${y}`);
          }
        });
        assertClose(b.values, a.values, TOL, seed);
        if (policy.crop!.kind === "resize") assert.is(b.batch.uploadBytes, a.batch.uploadBytes, `seed ${seed}: a resize reads every pixel`);
        else assert.ok(b.batch.uploadBytes < a.batch.uploadBytes, `seed ${seed}, policy ${k}: ${b.batch.uploadBytes} bytes uploaded for the boxes, ${a.batch.uploadBytes} for the whole images`);
      } finally {
        pre.destroy();
      }
    }
  } finally {
    jpeg.close();
    png.close();
  }
});

test("decodePlanned cuts the rows a centre crop does not read, and refuses options that scale, turn or cut", async () => {
  const jpeg = await createJpegDecoder();
  try {
    const bytes = cjpeg(new Uint8Array(40 * 30 * 3).fill(90), 40, 30, 3);
    const o = { width: 8, height: 8, crop: { kind: "center" as const } };
    const img = decodePlanned(jpeg, bytes, o, 0, "a");
    assert.ok(img.frame && img.width < 40, "a centre crop of 8 from 30 rows reads part of the image");
    for (const bad of [{ scale: 0.5 as const }, { applyOrientation: true }, { region: { x: 0, y: 0, width: 4, height: 4 } }]) {
      assert.throws(() => decodePlanned(jpeg, bytes, o, 0, "a", bad), (e: unknown) => e instanceof CassetteError && e.code === "ERR_INVALID_OPTION" && /decodeOptions/.test(e.message));
    }
  } finally {
    jpeg.close();
  }
});

test("the Loader's decode: { plan } in read workers: packets carry the boxes (FRAME_*), and each batch's tensor is the whole decode's, from fewer bytes", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const root = join(tmp, "folder");
  mkdirSync(join(root, "a"), { recursive: true });
  const bytes = files(next);
  const keys = bytes.map((b, i) => `a/img${i}.${b[0] === 0xff ? "jpg" : "png"}`);
  bytes.forEach((b, i) => writeFileSync(join(root, keys[i]), b));
  const store = await openStore(`sqlite:${join(tmp, `planned-${seed}.sqlite`)}`);
  const address = store.address;
  const sum = await ingest(store, root, { dataset: "p" });
  assert.is(sum.written, bytes.length);
  await store.close();
  const ids = keys.map((k) => sampleId("p", k));
  const byId = new Map(ids.map((id, i) => [id, bytes[i]]));
  const device = await testDevice();
  const pre = await createPreprocessor(device, { width: 16, height: 16, crop: { kind: "random-resized", scale: [0.05, 0.4] }, flip: 0.5, seed });
  const auto = await createDecoder("auto");
  try {
    // Read ahead (true, and the default), epoch e + 1's run may ask for a sample while epoch e's still does: the worker
    // cannot tell whose decode it is, decodes it whole, and the GPU plans it whole (same tensor).
    for (const readAhead of [false, true, undefined]) {
      const loader = new Loader({ store: address, dataset: "p", ids, batchSize: 4, seed: 3, workers: 2, readAhead, decode: { plan: pre.options } });
      try {
        let planned = 0, whole = 0, boxes = 0;
        for (const epoch of [0, 1]) {
          for await (const b of loader.epoch(epoch)) {
            assert.ok(b.images?.frameWidth, "a batch of packets, with the frames' columns");
            boxes += b.images!.frameWidth!.filter((w) => w > 0).length;
            const got = await tensor(device, pre, b.images! as never, epoch, b.ids);
            const images = b.ids.map((id) => auto.decode(byId.get(id)!)).map((i): DecodedImage => ({ data: i.data, width: i.width, height: i.height, channels: i.channels }));
            const want = await tensor(device, pre, images, epoch, b.ids);
            b.release?.();
            assertClose(got.values, want.values, TOL, seed);
            planned += got.batch.uploadBytes;
            whole += want.batch.uploadBytes;
          }
        }
        if (readAhead === false) {
          assert.is(boxes, 2 * ids.length, `seed ${seed}: every image decoded as its box`);
          assert.ok(planned < whole, `seed ${seed}: ${planned} bytes uploaded for the boxes, ${whole} for the whole images`);
        }
      } finally {
        await loader.close();
      }
    }
  } finally {
    auto.close();
    pre.destroy();
  }
});

test("decode: { plan } is refused beside a scale, an orientation or a region, or without an output size", async () => {
  for (const decode of [{ plan: { width: 8, height: 8 }, scale: 0.5 as const }, { plan: { width: 8, height: 8 }, applyOrientation: true }, { plan: { width: 0, height: 8 } }]) {
    assert.throws(() => new Loader({ store: "sqlite:/nonexistent.sqlite", dataset: "p", ids: ["x"], batchSize: 1, workers: 1, decode }), (e: unknown) => e instanceof CassetteError && e.code === "ERR_INVALID_OPTION" && /plan/.test(e.message));
  }
});
