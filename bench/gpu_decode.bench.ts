/**
 * The GPU JPEG decode (issue 42): a batch of photos to a SIZE² tensor three ways, interleaved
 * in one run, one thread feeding the GPU:
 *
 *   - gpu:    `readScan` on the CPU (header, stuffing out), the Huffman decode, IDCT, colour and
 *             preprocessing on the GPU (src/gpu/huffman.ts);
 *   - hybrid: `decodeCoefficients` on the CPU (the entropy decode), the rest on the GPU;
 *   - cpu:    `decode` to pixels on the CPU, the preprocessing on the GPU.
 *
 * The same tensor every way (test/gpu/gpu_decode.test.ts). Figures: images/s, CPU seconds per
 * 1 000 images (the process's), and the cores the CPU's decoders would need for the gpu way's
 * rate. Then the GPU decode's time pass by pass (each prefix of the passes submitted alone,
 * the difference of medians), and how soon its chunks synchronized. On a CPU driver
 * (lavapipe) the GPU's work runs on the same cores: there it shows correctness and the
 * breakdown's shape, not the speed.
 *
 *   node_modules/.bin/bun bench/gpu_decode.bench.ts [--quick] [--batch B] [--out SIZE] [--resync N]
 *
 * Inputs: bench/jpeg/data/photos500 (bench/jpeg/make_inputs.sh: five real photos, q90 4:2:0, cut
 * to 500×375 with `jpegtran -crop`, lossless: the issue's target size).
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { compare } from "./_lib/compare.ts";
import { processCpuSeconds } from "./_lib/cpu.ts";
import { makeInputs } from "./_lib/inputs.ts";
import { benchArgs } from "./_lib/args.ts";
import { runtime } from "../runtime-adapters/index.ts";
import { createJpegDecoder } from "../src/decode/jpeg.ts";
import { isJpegScan, type JpegScan } from "../src/decode/jpeg_scan.ts";
import { createPreprocessor } from "../src/gpu/preprocess.ts";
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import { coefficientImageShape, compileCoefficientKernels, encodeCoefficients, planCoefficients } from "../src/gpu/idct.ts";
import { compileHuffmanKernels, encodeHuffman, type HuffmanPass, planScans, RESYNC_ROUNDS, STATUS_IMAGES } from "../src/gpu/huffman.ts";
import { packLayout } from "../src/gpu/pack.ts";
import { readBuffer } from "../src/gpu/buffers.ts";

const args = benchArgs({
  program: "bench/gpu_decode.bench.ts",
  usage: `usage: bun bench/gpu_decode.bench.ts [--quick] [--batch B] [--out SIZE] [--resync N]

  A batch of 500×375 photos to a SIZE² tensor: Huffman decode on the GPU (gpu), entropy decode
  on the CPU and the rest on the GPU (hybrid), or pixels decoded on the CPU (cpu). Images/s,
  CPU seconds per 1 000 images, the GPU decode's passes timed one by one.

  --quick      3 rounds instead of 7, a batch of 32
  --batch B    images a batch (default 128)
  --out SIZE   the output side (default 224)
  --resync N   resync rounds before settle (default ${RESYNC_ROUNDS})`,
  valued: ["batch", "out", "resync"],
  flags: ["quick"],
});
const quick = args.has("quick");
const rounds = quick ? 3 : 7;
const batch = args.int("batch", quick ? 32 : 128);
const side = args.int("out", 224);
const resync = args.int("resync", RESYNC_ROUNDS);

const HERE = fileURLToPath(new URL("./jpeg/", import.meta.url));
makeInputs("gpu_decode.bench.ts", HERE + "make_inputs.sh", "run bash bench/jpeg/make_inputs.sh where the Debian mirror is reachable (it fetches the photos once)");
const photos = `${HERE}data/photos500/`;
const files = readdirSync(photos).filter((f) => f.endsWith(".jpg")).sort().map((f) => new Uint8Array(readFileSync(photos + f)));
const inputs = Array.from({ length: batch }, (_, i) => files[i % files.length]);
const megabytes = inputs.reduce((n, f) => n + f.length, 0) / 1e6;

const device = await requestDevice();
const info = deviceInfo(device);
const jpeg = await createJpegDecoder();
const pre = await createPreprocessor(device, { width: side, height: side, crop: { kind: "random-resized" }, flip: 0.5, seed: 7 });
await Promise.all([compileHuffmanKernels(device), compileCoefficientKernels(device)]);
const ids = inputs.map((_, i) => `p${i}`);
const { cores } = runtime.cpuTimes();
console.log(`a batch of ${batch} photos of 500×375 (q90 4:2:0, ${megabytes.toFixed(1)} MB) to ${side}², on ${info ? `${info.backend}: ${info.adapter}${info.cpu ? " (a CPU driver: the GPU's work is the same cores')" : ""}` : "an unknown adapter"}; ${cores} cores`);

// Exact before fast: the gpu way's tensor of the batch is the cpu way's, byte for byte.
{
  const scans = inputs.map((f) => jpeg.readScan(f));
  if (!scans.every(isJpegScan)) throw new Error(`a photo was refused: ${scans.filter((s) => !isJpegScan(s)).map((s) => "reason" in s ? s.reason : "")}`);
  const a = await pre.run(scans as JpegScan[], { ids, epoch: 1 });
  const ta = new Uint8Array(await readBuffer(device, a.buffer, a.bytes));
  const b = await pre.run(inputs.map((f) => jpeg.decode(f)), { ids, epoch: 1 });
  const tb = new Uint8Array(await readBuffer(device, b.buffer, b.bytes));
  const same = ta.length === tb.length && ta.every((v, i) => v === tb[i]);
  console.log(`the gpu way's tensor is the cpu way's byte for byte: ${same ? "yes" : "NO"}; handed back to the CPU: ${a.gpuDecode!.cpuDecoded.length}`);
  if (!same) throw new Error("the GPU decode's tensor differs from the CPU decode's");
}

let handedBack = 0;
const ways = [
  {
    name: "cpu (decode to pixels, 1 thread)",
    batch: () => pre.run(inputs.map((f) => jpeg.decode(f)), { ids }),
  },
  {
    name: "hybrid (entropy decode on the CPU)",
    batch: () => pre.run(inputs.map((f) => jpeg.decodeCoefficients(f)), { ids }),
  },
  {
    name: "gpu (Huffman decode on the GPU)",
    batch: async () => {
      const scans = inputs.map((f) => jpeg.readScan(f));
      if (!scans.every(isJpegScan)) throw new Error("a photo was refused");
      const out = await pre.run(scans as JpegScan[], { ids });
      handedBack += out.gpuDecode!.cpuDecoded.length;
      return out;
    },
  },
];
const cpu = new Map<string, { s: number; images: number }>();
const table = await compare(`A batch of ${batch} photos (500×375) decoded and preprocessed to ${side}²`, { rounds, unit: "images/s" }, ways.map((w, k) => ({
  name: w.name,
  baseline: k === 0,
  work: batch,
  run: async () => {
    const c0 = processCpuSeconds();
    await w.batch();
    await device.queue.onSubmittedWorkDone();
    const c1 = processCpuSeconds();
    if (c0 !== undefined && c1 !== undefined) {
      const was = cpu.get(w.name) ?? { s: 0, images: 0 };
      cpu.set(w.name, { s: was.s + c1 - c0, images: was.images + batch });
    }
  },
})));
if (handedBack) console.log(`  (the GPU handed ${handedBack} photos back to the CPU: not expected of these files)`);
if (cpu.size === ways.length) {
  const per = ways.map((w) => ({ name: w.name, s: (1000 * cpu.get(w.name)!.s) / cpu.get(w.name)!.images }));
  const gpuRate = table.find((r) => r.name.startsWith("gpu"))?.best ?? 0;
  console.log(`\nCPU seconds per 1 000 images (the process, every thread; a CPU driver's GPU work included)`);
  for (const p of per) console.log(`  ${p.name.padEnd(40)} ${p.s.toFixed(2)} s   ${(p.s / per[0].s).toFixed(3)}×   cores per 1 000 images/s: ${p.s.toFixed(2)}`);
  const decodeRate = table.find((r) => r.name.startsWith("cpu"))?.best ?? 0;
  if (decodeRate > 0) console.log(`  the CPU decoder at ${decodeRate.toFixed(0)} images/s a thread would need ${(gpuRate / decodeRate).toFixed(1)} cores for the gpu way's ${gpuRate.toFixed(0)} images/s`);
}

// The gpu way's CPU work alone, as on a machine whose GPU is a GPU: the header and the stuffing
// (readScan), and laying out the uploads (planCoefficients, planScans, their writes).
let scans: JpegScan[] = [];
let plan = planCoefficients(inputs.map((f) => jpeg.readScan(f) as JpegScan), packLayout([]))!;
let upload = new Uint8Array(0), scanBytes = new Uint8Array(0);
let sp = planScans(plan.scans);
const host: number[] = [];
for (let r = 0; r < rounds + 1; r++) {
  const t0 = performance.now();
  scans = inputs.map((f) => jpeg.readScan(f) as JpegScan);
  plan = planCoefficients(scans, packLayout(scans.map(coefficientImageShape)))!;
  if (upload.length !== plan.uploadBytes) upload = new Uint8Array(plan.uploadBytes);
  plan.write(upload);
  sp = planScans(plan.scans);
  if (scanBytes.length !== sp.uploadBytes) scanBytes = new Uint8Array(sp.uploadBytes);
  sp.write(scanBytes);
  if (r > 0) host.push((performance.now() - t0) / batch);
}
const perImage = host.sort((a, b) => a - b)[host.length >> 1];
console.log(`\nThe gpu way's CPU work (readScan, then laying out both uploads): ${(perImage * 1000).toFixed(0)} µs an image, ${perImage.toFixed(3)} cores per 1 000 images/s (target ≤ 0.1)`);

// The passes one by one: each prefix submitted alone (steady state, medians), then differences.
const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
const buf = (size: number) => device.createBuffer({ size: Math.max(4, size), usage });
const coef = buf(plan.bufferBytes), scanBuf = buf(sp.uploadBytes), status = buf(sp.statusBytes), stateA = buf(sp.stateBytes), stateB = buf(sp.stateBytes);
const planes = buf(plan.planeBytes), dst = buf(packLayout(scans.map(coefficientImageShape)).bytes);
device.queue.writeBuffer(coef, 0, upload);
device.queue.writeBuffer(scanBuf, 0, scanBytes);
const steps: (HuffmanPass | "idct")[] = ["speculate", "resync", "settle", "emit", "idct"];
async function timeUpTo(step: HuffmanPass | "idct"): Promise<number> {
  const times: number[] = [];
  for (let r = 0; r < rounds + 1; r++) {
    await device.queue.onSubmittedWorkDone();
    const t0 = performance.now();
    const encoder = device.createCommandEncoder();
    encoder.clearBuffer(coef, plan.uploadBytes, plan.bufferBytes - plan.uploadBytes);
    await encodeHuffman(device, encoder, sp, { scan: scanBuf, coef, stateA, stateB, status }, resync, step === "idct" ? "emit" : step);
    if (step === "idct") await encodeCoefficients(device, encoder, plan, coef, planes, dst);
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
    if (r > 0) times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[times.length >> 1];
}
const cumulative: number[] = [];
for (const s of steps) cumulative.push(await timeUpTo(s));
const read = device.createBuffer({ size: sp.statusBytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
const enc = device.createCommandEncoder();
enc.copyBufferToBuffer(status, 0, read, 0, sp.statusBytes);
device.queue.submit([enc.finish()]);
await read.mapAsync(GPUMapMode.READ);
const words = new Uint32Array(read.getMappedRange().slice(0));
read.unmap();
const names = ["speculate (every chunk from a guess)", `resync ×${resync}`, "settle (one thread an interval)", "emit (write the coefficients)", "IDCT + upsampling + colour"];
console.log(`\nThe GPU decode of the batch, pass by pass (medians of ${rounds}, ms; ${sp.chunks} chunks of 1 024 bits, ${sp.intervals} intervals, ${sp.tables} Huffman tables)`);
cumulative.forEach((t, i) => console.log(`  ${names[i].padEnd(40)} ${(t - (i ? cumulative[i - 1] : 0)).toFixed(2).padStart(9)} ms`));
console.log(`  ${"all".padEnd(40)} ${cumulative[cumulative.length - 1].toFixed(2).padStart(9)} ms   ${((1000 * batch) / cumulative[cumulative.length - 1]).toFixed(0)} images/s`);
const flagged = Array.from({ length: scans.length }, (_, k) => words[STATUS_IMAGES + k]).filter((f) => f !== 0).length;
console.log(`  chunks decoded again: ${words[1]} by resync (${((100 * words[1]) / Math.max(1, sp.chunks)).toFixed(1)} %), ${words[0]} by settle (${((100 * words[0]) / Math.max(1, sp.chunks)).toFixed(1)} %); images handed back: ${flagged}`);
for (const b of [coef, scanBuf, status, stateA, stateB, planes, dst]) b.destroy();
pre.destroy();
device.destroy();
