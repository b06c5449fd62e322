import * as assert from "uvu/assert";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { assertClose, poisonedBuffer, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { idctYcbcrRef } from "../reference/idct_ycbcr.ts";
import { preprocessRef } from "../reference/preprocess.ts";
import { readBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { coefficientImageShape, encodeCoefficients, planCoefficients } from "../../src/gpu/idct.ts";
import { packImages, packLayout, RECORD_BYTES } from "../../src/gpu/pack.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import type { JpegCoefficients } from "../../src/decode/jpeg.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { CassetteError } from "../../src/errors.ts";


type Sampling = Array<[number, number]>;
const SAMPLINGS: Array<["gray" | "ycbcr" | "rgb", Sampling]> = [
  ["gray", [[1, 1]]],
  ["ycbcr", [[1, 1], [1, 1], [1, 1]]], // 4:4:4
  ["ycbcr", [[2, 1], [1, 1], [1, 1]]], // 4:2:2
  ["ycbcr", [[1, 2], [1, 1], [1, 1]]], // 4:4:0
  ["ycbcr", [[2, 2], [1, 1], [1, 1]]], // 4:2:0
  ["ycbcr", [[4, 1], [1, 1], [1, 1]]], // 4:1:1 (replicated)
  ["ycbcr", [[2, 2], [2, 1], [1, 2]]], // mixed ratios per component
  ["rgb", [[1, 1], [1, 1], [1, 1]]],
];

/** A coefficient image as the decoder's coefficient mode gives it, with plausible magnitudes. */
function randomCoefficients(next: () => number, width: number, height: number, colorSpace: "gray" | "ycbcr" | "rgb", sampling: Sampling): JpegCoefficients {
  const hmax = Math.max(...sampling.map((s) => s[0])), vmax = Math.max(...sampling.map((s) => s[1]));
  const mcusX = Math.ceil(width / (8 * hmax)), mcusY = Math.ceil(height / (8 * vmax));
  const components = sampling.map(([h, v], id) => {
    const blocksW = mcusX * h, blocksH = mcusY * v;
    const quant = Uint16Array.from({ length: 64 }, (_, k) => (k === 0 ? randomInt(next, 1, 8) : randomInt(next, 1, 12)));
    const coefficients = new Int16Array(blocksW * blocksH * 64);
    for (let b = 0; b < blocksW * blocksH; b++) {
      coefficients[b * 64] = randomInt(next, -50, 50);
      for (let k = 1; k < 64; k++) if (next() < 0.3) coefficients[b * 64 + k] = randomInt(next, -8, 8);
    }
    return { id: id + 1, h, v, blocksW, blocksH, width: Math.ceil((width * h) / hmax), height: Math.ceil((height * v) / vmax), quant, coefficients };
  });
  return { width, height, colorSpace, progressive: false, orientation: 1, components };
}

/** Runs both passes on a batch of coefficient images; returns each image's pixels. */
async function gpuDecode(device: GPUDevice, images: JpegCoefficients[]): Promise<Uint8Array[]> {
  const shapes = images.map(coefficientImageShape);
  const pack = packLayout(shapes);
  const plan = planCoefficients(images, pack)!;
  const upload = new Uint8Array(plan.uploadBytes);
  plan.write(upload);
  const coef = uploadBuffer(device, upload);
  const planes = device.createBuffer({ size: plan.planeBytes, usage: GPUBufferUsage.STORAGE });
  const dst = poisonedBuffer(device, pack.bytes);
  const encoder = device.createCommandEncoder();
  await encodeCoefficients(device, encoder, plan, coef, planes, dst);
  device.queue.submit([encoder.finish()]);
  const bytes = new Uint8Array(await readBuffer(device, dst, pack.bytes));
  for (const b of [coef, planes, dst]) b.destroy();
  return shapes.map((s, i) => bytes.slice(pack.offsets[i], pack.offsets[i] + s.width * s.height * s.channels));
}

function maxDiff(a: Uint8Array, b: Uint8Array): { max: number; at: number } {
  let max = a.length === b.length ? 0 : Infinity, at = -1;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (d > max) [max, at] = [d, i];
  }
  return { max, at };
}

for (const backend of runtime.gpuBackends) {
  test(`GPU IDCT + upsampling + colour equals the CPU reference (islow) on random coefficients, sizes and samplings (${backend})`, async () => {
    const device = await testDevice(backend);
    const seed = freshSeed();
    const next = rng(seed);
    const images = SAMPLINGS.map(([cs, s]) => randomCoefficients(next, randomInt(next, 1, 45), randomInt(next, 1, 45), cs, s));
    images.push(randomCoefficients(next, 1, 1, "ycbcr", [[2, 2], [1, 1], [1, 1]])); // 1×1
    // Coefficients as corrupt files give them: products past 16 bits, pass-1 sums that saturate.
    const wild = randomCoefficients(next, randomInt(next, 8, 40), randomInt(next, 8, 40), "ycbcr", [[2, 2], [1, 1], [1, 1]]);
    for (const c of wild.components) for (let k = 0; k < c.coefficients.length; k++) if (next() < 0.2) c.coefficients[k] = randomInt(next, -32768, 32767);
    images.push(wild);
    const got = await gpuDecode(device, images);
    images.forEach((img, i) => {
      const want = idctYcbcrRef(img).data;
      const { max, at } = maxDiff(got[i], want);
      assert.ok(max === 0, `image ${i} (${img.colorSpace} ${img.components.map((c) => `${c.h}×${c.v}`)} ${img.width}×${img.height}): max diff ${max} at byte ${at}: got ${got[i][at]}, want ${want[at]} (seed ${seed}; rerun with CASSETTE_SEED=${seed})`);
    });
  });
}

// Both IDCTs are libjpeg's integer one (islow), and upsampling and colour the decoder's integer
// formulas: the hybrid path's pixels are the CPU decoder's, exactly.
test("hybrid decode equals the WASM decoder's full decode on the fixture corpus", async () => {
  const device = await testDevice();
  const jpeg = await createJpegDecoder();
  const dir = join(runtime.cwd(), "test/fixtures/jpeg");
  const disabled = readFileSync(join(dir, "disabled.txt"), "utf8");
  let checked = 0, worst = 0;
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".jpg")).sort()) {
    if (disabled.includes(name)) continue;
    let coefs: JpegCoefficients;
    try {
      coefs = jpeg.decodeCoefficients(readFileSync(join(dir, name)));
      coefficientImageShape(coefs);
    } catch {
      continue; // unsupported by the decoder (arithmetic coding) or by the GPU path (CMYK): the full decode handles those
    }
    const full = jpeg.decode(readFileSync(join(dir, name)));
    const [got] = await gpuDecode(device, [coefs]);
    const { max, at } = maxDiff(got, full.data);
    assert.ok(max === 0, `${name}: max diff ${max} at byte ${at}: GPU ${got[at]}, WASM ${full.data[at]}`);
    worst = Math.max(worst, max);
    checked++;
  }
  assert.ok(checked >= 10, `only ${checked} fixtures checked`);
  console.log(`  ${checked} fixtures, max diff ${worst}`);
}, { timeoutMs: 240_000 });

test("hybrid decode equals the WASM decoder on fresh images of every sampling, narrow ones (1–4 pixels wide, where the triangle filter turns off) among them", async () => {
  const device = await testDevice();
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const samplings = ["2x1", "2x2", "1x2"];
  for (let i = 0; i < 15; i++) {
    const w = i < 9 ? 1 + (i % 4) : randomInt(next, 5, 90), h = randomInt(next, 1, 40);
    const sampling = i < 9 ? samplings[i % 3] : ["1x1", "2x1", "2x2", "1x2", "4x1"][i - 9] ?? "2x2";
    const bytes = cjpeg(randomBytes(next, w * h * 3), w, h, 3, ["-sample", sampling, "-quality", "90"]);
    const full = jpeg.decode(bytes);
    const [got] = await gpuDecode(device, [jpeg.decodeCoefficients(bytes)]);
    const { max, at } = maxDiff(got, full.data);
    assert.ok(max === 0, `seed ${seed}, ${w}×${h} ${sampling}: max diff ${max} at byte ${at}: GPU ${got[at]}, WASM ${full.data[at]}`);
  }
}, { timeoutMs: 240_000 });

test("a preprocessor batch can mix decoded pixels and coefficient images", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const pre = await createPreprocessor(device, { width: 12, height: 10, crop: { kind: "random-resized" }, flip: 0.5, seed, layout: "nhwc" });
  const coefs = [randomCoefficients(next, 33, 20, "ycbcr", [[2, 2], [1, 1], [1, 1]]), randomCoefficients(next, 9, 17, "gray", [[1, 1]])];
  const pixels = { data: randomBytes(next, 20 * 30 * 3), width: 20, height: 30, channels: 3 };
  const batch = [coefs[0], pixels, coefs[1]];
  const out = poisonedBuffer(device, 3 * 12 * 10 * 3 * 4);
  const result = await pre.run(batch, { ids: ["x", "y", "z"], epoch: 4, output: out });
  const got = new Float32Array(await readBuffer(device, out, 3 * 12 * 10 * 3 * 4));
  const sources = [idctYcbcrRef(coefs[0]), pixels, idctYcbcrRef(coefs[1])];
  const want = new Float32Array(got.length);
  sources.forEach((img, i) =>
    want.set(preprocessRef(img, result.plans[i], { width: 12, height: 10, channels: 3, layout: "nhwc", mean: [0, 0, 0], std: [1, 1, 1] }), i * 360));
  // The pixels are the reference's exactly; what is left is the resampling's f32 arithmetic.
  assertClose(got, want, 1e-4, seed);
  // Uploaded: the records, the decoded image's pixels and the coefficients, not the spans the
  // colour pass writes.
  const coefUpload = planCoefficients(batch, packLayout(batch.map((b) => ("components" in b ? coefficientImageShape(b) : b))))!.uploadBytes;
  assert.is(result.uploadBytes, 3 * RECORD_BYTES + Math.ceil((20 * 30 * 3) / 4) * 4 + coefUpload, `seed ${seed}: bytes uploaded`);
  // Once every slot has seen the batch, its coefficient and plane buffers are reused.
  for (let i = 0; i < 3; i++) await pre.run(batch, { ids: ["x", "y", "z"] });
  const warm = pre.allocations;
  for (let i = 0; i < 3; i++) await pre.run(batch, { ids: ["x", "y", "z"] });
  await device.queue.onSubmittedWorkDone();
  assert.is(pre.allocations, warm, "no GPU buffer created after warm-up");
  out.destroy();
  pre.destroy();
});

test("CMYK coefficients are refused as unsupported, so the caller decodes them on the CPU", () => {
  const img = randomCoefficients(rng(1), 8, 8, "ycbcr", [[1, 1], [1, 1], [1, 1]]);
  try {
    coefficientImageShape({ ...img, colorSpace: "cmyk" });
    assert.unreachable("should throw");
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_UNSUPPORTED");
    assert.match((e as Error).message, /cmyk/);
  }
});

test("a region's DCT blocks (decodeDct with a region): the GPU's pixels are the CPU region decode's exactly, boxes at every edge, every sampling, progressive and restart markers", async () => {
  const device = await testDevice();
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const kinds: string[][] = [["-sample", "1x1"], ["-sample", "2x1"], ["-sample", "1x2"], ["-sample", "2x2"], ["-sample", "4x1"], ["-sample", "2x2", "-progressive"], ["-sample", "2x1", "-restart", "1"], ["-grayscale"]];
  let smaller = 0;
  for (const args of kinds) {
    const w = randomInt(next, 20, 120), h = randomInt(next, 20, 100);
    const grey = args[0] === "-grayscale";
    const bytes = cjpeg(randomBytes(next, w * h * (grey ? 1 : 3)), w, h, grey ? 1 : 3, [...args, "-quality", String(randomInt(next, 40, 95))]);
    const whole = jpeg.decodeCoefficients(bytes);
    for (let k = 0; k < 6; k++) {
      // Boxes anywhere, touching each edge in turn, down to one pixel.
      const x = k === 0 ? 0 : randomInt(next, 0, w - 1), y = k === 1 ? 0 : randomInt(next, 0, h - 1);
      const region = { x, y, width: k === 2 ? w - x : randomInt(next, 1, w - x), height: k === 3 ? h - y : k === 4 ? 1 : randomInt(next, 1, h - y) };
      const dct = jpeg.decodeDct(bytes, { region })!;
      const what = `seed ${seed}, ${args.join(" ")} ${w}×${h}, region ${JSON.stringify(region)}`;
      // The blocks held are the whole decode's, window by window.
      dct.components.forEach((c, j) => {
        const all = whole.components[j];
        for (let by = 0; by < c.blocksH; by++) {
          for (let bx = 0; bx < c.blocksW; bx++) {
            const at = ((by + c.blockY!) * all.blocksW + bx + c.blockX!) * 64;
            for (let i = 0; i < 64; i++) {
              if (c.coefficients[(by * c.blocksW + bx) * 64 + i] !== all.coefficients[at + i]) throw new Error(`${what}: component ${j} block (${bx}, ${by}) differs`);
            }
          }
        }
      });
      if (dct.components[0].coefficients.length < whole.components[0].coefficients.length) smaller++;
      const want = jpeg.decode(bytes, { region });
      const [got] = await gpuDecode(device, [dct]);
      assert.equal([dct.region!.width, dct.region!.height], [want.width, want.height], what);
      const { max, at } = maxDiff(got, want.data);
      assert.ok(max === 0, `${what}: max diff ${max} at byte ${at}: GPU ${got[at]}, WASM ${want.data[at]}`);
    }
  }
  assert.ok(smaller > 0, `seed ${seed}: some regions hold fewer blocks than the whole image`);
}, { timeoutMs: 240_000 });
