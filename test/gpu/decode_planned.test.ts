import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
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

// The tolerance of test/gpu/preprocess.test.ts: the region's plan is the whole image's moved by
// whole pixels, so only the shader's f32 positions differ (≤ 1 ulp of a coordinate below 512).
const TOL = 1e-3;

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
        // The boxes: each planned image's, moved back into its frame, is the whole image's.
        planned.forEach((img, i) => {
          const f = img.frame!;
          assert.equal([f.width, f.height], [whole[i].width, whole[i].height], `seed ${seed}: the frame is the header's size`);
          const p = b.batch.plans[i];
          assert.equal({ ...p, x: p.x + f.x, y: p.y + f.y }, a.batch.plans[i], `seed ${seed}, policy ${k}, image ${i}`);
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
    device.destroy();
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
