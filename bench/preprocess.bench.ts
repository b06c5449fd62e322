/**
 * GPU preprocessing (crop_resize_normalize.wgsl, the hybrid JPEG path) against its peers, in
 * one process, interleaved round by round so that a shared machine's noise hits them alike.
 *
 *   bun bench/preprocess.bench.ts [--batch N] [--out S] [--input S] [--rounds N] [--quick]
 *
 * Three questions:
 *   batch      images/s and GB/s of a training batch (RandomResizedCrop + flip + normalize to
 *              S×S NCHW f32) on this adapter, upload included, vs a straightforward CPU
 *              implementation in TS of the same resampling, and the library's (cpuTensor);
 *   kernel     the kernel alone over a batch already on the GPU (bytes read + written per
 *              second) vs a device-to-device copy (copyBufferToBuffer) of the same bytes;
 *   hybrid     CPU time per image of the decoder's coefficient mode (entropy decoding only)
 *              vs its full decode, on test/fixtures/jpeg/chinafull_420_q90.jpg (640×427 4:2:0).
 * GB/s counts the bytes the work must move: u8 pixels in, f32 values out.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runtime } from "../runtime-adapters/index.ts";
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import { createPreprocessor } from "../src/gpu/preprocess.ts";
import { packImages, packLayout } from "../src/gpu/pack.ts";
import type { DecodedImage, ImagePlan } from "../src/gpu/pack.ts";
import { createJpegDecoder } from "../src/decode/jpeg.ts";
import { cpuTensor } from "../src/decode/tensor.ts";
import { compare } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/preprocess.bench.ts",
  usage: `usage: bun bench/preprocess.bench.ts [options]
  --batch N    images per batch (default 32; --quick 8)
  --out S      output S×S (default 224; --quick 64)
  --input S    input sides drawn from 0.6·S…1.4·S (default 320; --quick 96)
  --rounds N   measured rounds (default 7; --quick 3)
  --kernel-repeat K  kernel dispatches per measured round (default 10)
  --quick      a small, fast run (the default of bench/main.ts --quick)`,
  valued: ["batch", "out", "input", "rounds", "kernel-repeat"],
  flags: ["quick"],
});
const quick = args.has("quick");
const batch = args.int("batch", quick ? 8 : 32);
const out = args.int("out", quick ? 64 : 224);
const inSide = args.int("input", quick ? 96 : 320);
const rounds = args.int("rounds", quick ? 3 : 7);
const repeat = args.int("kernel-repeat", 10);

// Deterministic inputs: sizes and bytes from a fixed LCG.
let state = 12345;
const rand = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32);
const images: DecodedImage[] = Array.from({ length: batch }, () => {
  const width = Math.round(inSide * (0.6 + 0.8 * rand())), height = Math.round(inSide * (0.6 + 0.8 * rand()));
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i += 4) data[i] = (rand() * 256) | 0;
  return { data, width, height, channels: 3 };
});
const inBytes = images.reduce((a, i) => a + i.data.length, 0);
const outBytes = batch * 3 * out * out * 4;
const moved = (inBytes + outBytes) / 1e9;
const ids = images.map((_, i) => `sample-${i}`);
const mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225];

const device = await requestDevice();
const info = deviceInfo(device)!;
console.log(`${info.runtime}; ${info.backend}; adapter: ${info.adapter}`);
console.log(`batch ${batch} RGB images ~${inSide}² (${(inBytes / 1e6).toFixed(1)} MB) → ${batch}×3×${out}×${out} f32 (${(outBytes / 1e6).toFixed(1)} MB); rounds ${rounds}`);
const pre = await createPreprocessor(device, { width: out, height: out, crop: { kind: "random-resized" }, flip: 0.5, seed: 1, mean, std });
const plans = pre.plan(images, { epoch: 0, ids });

/** The peer: the same resampling (triangle filter, bilinear up to 2× shrink) as plain TS loops. */
function cpuPreprocess(imgs: DecodedImage[], ps: ImagePlan[], dst: Float32Array): void {
  const axis = (crop0: number, len: number, n: number) => {
    const s = len / out, r = s > 2 ? s : 1;
    const idx: number[][] = [], wts: number[][] = [];
    for (let o = 0; o < out; o++) {
      const t = crop0 + (o + 0.5) * s - 0.5;
      const js: number[] = [], ws: number[] = [];
      let sum = 0;
      for (let j = Math.max(0, Math.floor(t - r) + 1); j <= Math.min(n - 1, Math.ceil(t + r) - 1); j++) {
        const w = 1 - Math.abs(j - t) / r;
        if (w > 0) js.push(j), ws.push(w), (sum += w);
      }
      if (js.length === 0) js.push(Math.min(n - 1, Math.max(0, Math.round(t)))), ws.push((sum = 1));
      idx.push(js);
      wts.push(ws.map((w) => w / sum));
    }
    return { idx, wts };
  };
  const plane = out * out;
  imgs.forEach((img, b) => {
    const p = ps[b];
    const xs = axis(p.x, p.w, img.width), ys = axis(p.y, p.h, img.height);
    for (let oy = 0; oy < out; oy++) {
      for (let ox = 0; ox < out; ox++) {
        const sx = p.mirror ? out - 1 - ox : ox;
        let r = 0, g = 0, bl = 0;
        const xi = xs.idx[sx], xw = xs.wts[sx];
        for (let a = 0; a < ys.idx[oy].length; a++) {
          const row = ys.idx[oy][a] * img.width, wy = ys.wts[oy][a];
          for (let k = 0; k < xi.length; k++) {
            const at = (row + xi[k]) * 3, w = wy * xw[k];
            r += w * img.data[at];
            g += w * img.data[at + 1];
            bl += w * img.data[at + 2];
          }
        }
        const o = b * 3 * plane + oy * out + ox;
        dst[o] = (r / 255 - mean[0]) / std[0];
        dst[o + plane] = (g / 255 - mean[1]) / std[1];
        dst[o + 2 * plane] = (bl / 255 - mean[2]) / std[2];
      }
    }
  });
}
const cpuOut = new Float32Array(batch * 3 * out * out);

const rowsBatch = await compare(`batch: random-resized-crop + flip + normalize, ${batch} images → ${out}² NCHW f32 (images/s)`, { unit: "img/s", rounds }, [
  {
    name: "GPU, upload + kernel, awaited",
    run: async () => {
      await pre.run(images, { epoch: 0, ids });
      await device.queue.onSubmittedWorkDone();
    },
    work: batch,
  },
  {
    name: "GPU, 3 batches in flight",
    run: async () => {
      for (let i = 0; i < 3; i++) await pre.run(images, { epoch: i, ids });
      await device.queue.onSubmittedWorkDone();
    },
    work: 3 * batch,
  },
  { name: "CPU, TypeScript", run: () => cpuPreprocess(images, plans, cpuOut), work: batch, baseline: true },
  // The library's CPU tensor (separable, f32 rows), the same plans: `read --preprocess --device cpu`.
  { name: "CPU, cpuTensor (src/decode/tensor.ts)", run: () => cpuTensor(images, pre.options, { epoch: 0, ids }, cpuOut), work: batch },
]);
for (const r of rowsBatch) console.log(`  ${r.name}: ${((r.best / batch) * moved).toFixed(3)} GB/s moved (best)`);

// The kernel alone: the batch packed once into a GPU buffer, then `repeat` dispatches a round.
const layout = packLayout(images);
const packed = new Uint8Array(layout.bytes);
packImages(packed, images, plans, layout);
const input = device.createBuffer({ size: Math.ceil(layout.bytes / 4) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
device.queue.writeBuffer(input, 0, packed);
const output = device.createBuffer({ size: outBytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
// The copy moves the same bytes as the kernel: it reads and writes (in + out) / 2 each.
const half = Math.ceil((inBytes + outBytes) / 2 / 4) * 4;
const copySrc = device.createBuffer({ size: half, usage: GPUBufferUsage.COPY_SRC });
const copyDst = device.createBuffer({ size: half, usage: GPUBufferUsage.COPY_DST });
await compare(`kernel: ${repeat} dispatches over the batch on the GPU vs copies of the same bytes (GB/s moved)`, { unit: "GB/s", rounds }, [
  {
    name: "crop_resize_normalize kernel",
    run: async () => {
      const enc = device.createCommandEncoder();
      for (let i = 0; i < repeat; i++) await pre.encode(enc, input, output, batch);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
    },
    work: repeat * moved,
  },
  {
    name: "copyBufferToBuffer",
    run: async () => {
      const enc = device.createCommandEncoder();
      for (let i = 0; i < repeat; i++) enc.copyBufferToBuffer(copySrc, 0, copyDst, 0, half);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
    },
    work: (repeat * 2 * half) / 1e9,
    baseline: true,
  },
]);

// Hybrid vs full decode: CPU time per image.
const jpegBytes = readFileSync(join(runtime.cwd(), "test/fixtures/jpeg/chinafull_420_q90.jpg"));
const jpeg = await createJpegDecoder();
const hybridPre = await createPreprocessor(device, { width: out, height: out, crop: { kind: "center" }, mean, std });
const n = quick ? 4 : 16;
await compare(`hybrid: CPU side of decoding chinafull_420_q90.jpg (640×427 4:2:0), ${n} images (images/s)`, { unit: "img/s", rounds }, [
  { name: "coefficients only (hybrid)", run: () => { for (let i = 0; i < n; i++) jpeg.decodeCoefficients(jpegBytes); }, work: n },
  { name: "full WASM decode", run: () => { for (let i = 0; i < n; i++) jpeg.decode(jpegBytes); }, work: n, baseline: true },
]);
await compare(`hybrid end to end: decode + GPU preprocess to ${out}², ${n} images a batch, awaited (images/s)`, { unit: "img/s", rounds }, [
  {
    name: "coefficients + GPU IDCT",
    run: async () => {
      await hybridPre.run(Array.from({ length: n }, () => jpeg.decodeCoefficients(jpegBytes)));
      await device.queue.onSubmittedWorkDone();
    },
    work: n,
  },
  {
    name: "full WASM decode + GPU",
    run: async () => {
      await hybridPre.run(Array.from({ length: n }, () => jpeg.decode(jpegBytes)));
      await device.queue.onSubmittedWorkDone();
    },
    work: n,
    baseline: true,
  },
]);

for (const b of [input, output, copySrc, copyDst]) b.destroy();
pre.destroy();
hybridPre.destroy();
device.destroy();
runtime.exit(0);
