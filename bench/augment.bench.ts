/**
 * The augmented preprocessing pass (shaders/preprocess/augment.wgsl) against the plain one
 * (crop_resize_normalize.wgsl) on the same batch, already on the GPU, in one process, interleaved
 * round by round: what a full policy costs the pass (issue 41's target: ≥ 0.8× the plain pass on
 * a real GPU, where both are bound by memory bandwidth). And the same on the CPU (cpuTensor), where
 * the augmented samples take the per-pixel paths.
 *
 *   bun bench/augment.bench.ts [--batch N] [--out S] [--input S] [--rounds N] [--quick]
 *
 * Policies: "colour" (ColorJitter 0.4/0.4/0.4/0.1 and RandomErasing 0.25: one contrast mean pass),
 * "full" (TrivialAugment, ColorJitter, RandomAffine 15°/0.1/0.9–1.1 and RandomErasing: every
 * sample warped, up to two mean passes), each drawn per sample as training draws them.
 */
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import { createPreprocessor } from "../src/gpu/preprocess.ts";
import { packImages, packLayout } from "../src/gpu/pack.ts";
import type { DecodedImage } from "../src/gpu/pack.ts";
import { augmentBytes, encodeAugmented, meanBytes, meanPasses, packAugment } from "../src/gpu/augment.ts";
import { cpuTensor, planBatch } from "../src/decode/tensor.ts";
import { parseAugment } from "../src/decode/augment.ts";
import { compare } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/augment.bench.ts",
  usage: `usage: bun bench/augment.bench.ts [options]
  --batch N    images per batch (default 64; --quick 8)
  --out S      output S×S (default 224; --quick 64)
  --input S    input sides drawn from 0.6·S…1.4·S (default 400; --quick 96)
  --rounds N   measured rounds (default 7; --quick 3)
  --kernel-repeat K  passes per measured round (default 10)
  --quick      a small, fast run`,
  valued: ["batch", "out", "input", "rounds", "kernel-repeat"],
  flags: ["quick"],
});
const quick = args.has("quick");
const batch = args.int("batch", quick ? 8 : 64);
const out = args.int("out", quick ? 64 : 224);
const inSide = args.int("input", quick ? 96 : 400);
const rounds = args.int("rounds", quick ? 3 : 7);
const repeat = args.int("kernel-repeat", 10);

let state = 777;
const rand = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32);
const images: DecodedImage[] = Array.from({ length: batch }, () => {
  const width = Math.round(inSide * (0.6 + 0.8 * rand())), height = Math.round(inSide * (0.6 + 0.8 * rand()));
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = (rand() * 256) | 0;
  return { data, width, height, channels: 3 };
});
const ids = images.map((_, i) => `sample-${i}`);
const mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225];
const base = { width: out, height: out, crop: { kind: "random-resized" as const }, flip: 0.5, seed: 1, mean, std };
const policies = {
  colour: parseAugment("jitter=0.4,hue=0.1,erase=0.25"),
  full: parseAugment("trivial,jitter=0.4,hue=0.1,degrees=15,translate=0.1,scale=0.9:1.1,erase=0.25"),
};

const device = await requestDevice();
const info = deviceInfo(device)!;
console.log(`${info.runtime}; ${info.backend}; adapter: ${info.adapter}`);
console.log(`batch ${batch} RGB images ~${inSide}² → ${batch}×3×${out}×${out} f32; rounds ${rounds}, ${repeat} passes a round`);

const plain = await createPreprocessor(device, base);
const layout = packLayout(images);
const packed = new Uint8Array(layout.bytes);
packImages(packed, images, plain.plan(images, { ids }), layout);
const input = device.createBuffer({ size: Math.ceil(layout.bytes / 4) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
device.queue.writeBuffer(input, 0, packed);
const output = device.createBuffer({ size: batch * 3 * out * out * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });

// The augmented pass's buffers, as Preprocessor.run makes them: params (scale 1/std, bias −mean/std), table, means.
const params = device.createBuffer({ size: 48, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
const p = new ArrayBuffer(48);
new Uint32Array(p, 0, 2).set([out, out]);
new Float32Array(p, 16, 8).set([...std.map((s) => 1 / s), 0, ...mean.map((m, c) => -m / std[c]), 0]);
device.queue.writeBuffer(params, 0, p);
const means = device.createBuffer({ size: meanBytes(batch), usage: GPUBufferUsage.STORAGE });
const constants = { NCHW: 1, OUT_CHANNELS: 3, ANTIALIAS_ABOVE: 2 };
const augmented = Object.entries(policies).map(([name, augment]) => {
  const plans = planBatch(images, { ...base, augment }, { ids });
  const bytes = new Uint8Array(augmentBytes(batch));
  packAugment(bytes, plans);
  const table = device.createBuffer({ size: bytes.length, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(table, 0, bytes);
  const warped = plans.filter((q) => q.augment?.warp).length, passes = meanPasses(plans);
  return { name, augment, table, passes, describe: `${warped}/${batch} warped, ${passes} mean pass${passes === 1 ? "" : "es"}` };
});

const passRound = (encode: (enc: GPUCommandEncoder) => Promise<void>) => async () => {
  const enc = device.createCommandEncoder();
  for (let i = 0; i < repeat; i++) await encode(enc);
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
};
await compare(`GPU pass over a batch already on the GPU, ${batch} images → ${out}² (images/s)`, { unit: "img/s", rounds }, [
  { name: "plain pass (crop, flip, resize, normalize)", run: passRound((enc) => plain.encode(enc, input, output, batch)), work: repeat * batch, baseline: true },
  ...augmented.map((a) => ({
    name: `${a.name} policy (${a.describe})`,
    run: passRound((enc) => encodeAugmented(device, enc, { params, input, output, table: a.table, means }, batch, out * out, a.passes, constants)),
    work: repeat * batch,
  })),
]);

const cpuOut = new Float32Array(batch * 3 * out * out);
const n = quick ? batch : Math.min(batch, 16);
const few = images.slice(0, n), fewIds = ids.slice(0, n);
await compare(`CPU tensor (cpuTensor), ${n} images → ${out}² (images/s)`, { unit: "img/s", rounds }, [
  { name: "plain", run: () => cpuTensor(few, base, { ids: fewIds }, cpuOut), work: n, baseline: true },
  ...augmented.map((a) => ({ name: `${a.name} policy`, run: () => cpuTensor(few, { ...base, augment: a.augment }, { ids: fewIds }, cpuOut), work: n })),
]);
plain.destroy();
device.destroy();
