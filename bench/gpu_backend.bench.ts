/**
 * Which WebGPU backend should Deno use by default: its built-in wgpu or Dawn (the `webgpu`
 * N-API package)? Same kernels, same inputs, interleaved in one process.
 *
 *   deno run -A bench/gpu_backend.bench.ts [--rounds N] [--quick]
 *
 * Two questions, because training and preprocessing stress different things:
 *   throughput  one normalize dispatch over a 224×224×3 batch of 64 images (9.6 MB in, 38 MB out)
 *   latency     100 small dispatches (4 KB each), each submitted and awaited on its own
 *   chained     the same 100 in one command buffer, awaited once: how a training step runs
 */
import { runtime } from "../runtime-adapters/index.ts";
import { requestDevice } from "../src/gpu/device.ts";
import { uploadBuffer } from "../src/gpu/buffers.ts";
import { encodeNormalize } from "../src/gpu/normalize.ts";
import { compare } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({ program: "bench/gpu_backend.bench.ts", usage: "usage: deno run -A bench/gpu_backend.bench.ts [--rounds N] [--quick]", valued: ["rounds"], flags: ["quick"] });
const quick = args.has("quick");
const rounds = args.int("rounds", quick ? 3 : 11);
if (runtime.gpuBackends.length < 2) {
  console.log(`${runtime.name} offers one WebGPU backend (${runtime.gpuBackends}); this benchmark compares Deno's two.`);
  runtime.exit(0);
}

const bytes = 64 * 224 * 224 * 3;
const input = new Uint8Array(bytes);
for (let i = 0; i < bytes; i++) input[i] = (i * 2654435761) >>> 24;
const small = 4096;

async function setup(backend: "dawn" | "builtin") {
  const device = await requestDevice({ backend });
  const src = uploadBuffer(device, input);
  const dst = device.createBuffer({ size: bytes * 4, usage: GPUBufferUsage.STORAGE });
  const sSrc = uploadBuffer(device, input.subarray(0, small));
  const sDst = device.createBuffer({ size: small * 4, usage: GPUBufferUsage.STORAGE });
  const p = { channels: 3, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
  return {
    backend,
    async big() {
      const enc = device.createCommandEncoder();
      const params = await encodeNormalize(device, enc, src, dst, bytes, p);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      params.destroy();
    },
    async smalls() {
      for (let i = 0; i < 100; i++) {
        const enc = device.createCommandEncoder();
        const params = await encodeNormalize(device, enc, sSrc, sDst, small, p);
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
        params.destroy();
      }
    },
    async chained() {
      const enc = device.createCommandEncoder();
      const params = [];
      for (let i = 0; i < 100; i++) params.push(await encodeNormalize(device, enc, sSrc, sDst, small, p));
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      for (const b of params) b.destroy();
    },
  };
}

const backends = await Promise.all((["builtin", "dawn"] as const).map(setup));
console.log(`${runtime.name} ${runtime.version}; rounds ${rounds}`);
await compare("throughput: normalize 64×224×224×3 (MB/s of input)", { unit: "MB/s", rounds }, backends.map((b) => ({
  name: b.backend, run: b.big, work: bytes / 1e6,
})));
await compare("latency: 100 small dispatches, each awaited (dispatches/s)", { unit: "disp/s", rounds }, backends.map((b) => ({
  name: b.backend, run: b.smalls, work: 100,
})));
await compare("chained: 100 small dispatches in one submit, awaited once (dispatches/s)", { unit: "disp/s", rounds }, backends.map((b) => ({
  name: b.backend, run: b.chained, work: 100,
})));
runtime.exit(0);
