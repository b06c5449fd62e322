/**
 * Is the f16 GEMM (src/train/ops/gemm_f16.ts) faster than the f32 one (gemm.wgsl) on this
 * adapter? Both accumulation modes, and f32 sums with the operands cast from f32 first (what a
 * step with f32 master weights would pay), against gemm.wgsl as the baseline, at the mlp's
 * (784-256-10, batch 128) five products of a training step. Interleaved rounds, one process.
 *
 *   bun bench/gemm_f16.bench.ts [--rounds N] [--repeat R] [--quick]
 *
 * One repetition submits R dispatches of the product in one compute pass and waits for them,
 * so that the ~0.25 ms of an awaited submit does not hide the small products. GFLOP/s counts
 * 2·M·N·K per product (the cast is not counted as work: it is charged as time).
 */
import { runtime } from "../runtime-adapters/index.ts";
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import { Program } from "../src/train/program.ts";
import type { Dispatch } from "../src/train/program.ts";
import { createTensor, tensorFrom } from "../src/train/tensor.ts";
import { castF16 } from "../src/train/ops/cast_f16.ts";
import { gemm } from "../src/train/ops/gemm.ts";
import type { GemmOptions } from "../src/train/ops/gemm.ts";
import { gemmF16, hasF16 } from "../src/train/ops/gemm_f16.ts";
import { compare } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";

const USAGE = `usage: bun bench/gemm_f16.bench.ts [--rounds N] [--repeat R] [--quick]
  --rounds N   measured rounds per contender (default 7; 3 with --quick), after one warm-up
  --repeat R   dispatches of the product per submit (default 10; 5 with --quick)
  --quick      fewer rounds and repetitions (bench/main.ts --quick)
  --help       this text
(also: deno run -A bench/gemm_f16.bench.ts …, node --import ./runtime-adapters/node_hooks.mjs bench/gemm_f16.bench.ts …)`;

const args = benchArgs({ program: "bench/gemm_f16.bench.ts", usage: USAGE, valued: ["rounds", "repeat"], flags: ["quick"] });
const quick = args.has("quick");
const rounds = args.int("rounds", quick ? 3 : 7);
const repeat = args.int("repeat", quick ? 5 : 10);

const device = await requestDevice({ features: ["shader-f16"] });
const info = deviceInfo(device)!;
console.log(`${info.runtime}, ${info.backend}; adapter: ${info.adapter}; rounds ${rounds}, ${repeat} dispatches per submit`);
if (!hasF16(device)) {
  console.log("This adapter lacks the WebGPU feature shader-f16: the f16 GEMM cannot run here.");
  device.destroy();
  runtime.exit(0);
}

// The mlp 784-256-10 at batch 128 (src/train/models.ts, src/train/layers.ts: forward NN,
// weight gradient TN, input gradient NT; the first layer has no input gradient).
const SHAPES: { what: string; M: number; N: number; K: number; o: GemmOptions }[] = [
  { what: "layer 1 forward NN, 128×784 · 784×256", M: 128, N: 256, K: 784, o: { relu: true } },
  { what: "layer 1 weight gradient TN, (128×784)ᵀ · 128×256", M: 784, N: 256, K: 128, o: { transA: true } },
  { what: "layer 2 forward NN, 128×256 · 256×10", M: 128, N: 10, K: 256, o: {} },
  { what: "layer 2 input gradient NT, 128×10 · (256×10)ᵀ", M: 128, N: 256, K: 10, o: { transB: true } },
  { what: "layer 2 weight gradient TN, (128×256)ᵀ · 128×10", M: 256, N: 10, K: 128, o: { transA: true } },
];

/** Uniform values in [-1, 1) from a fixed LCG: the figures do not depend on them. */
function values(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

const programs: Program[] = [];
async function build(dispatches: Dispatch[]): Promise<() => Promise<void>> {
  const p = await Program.build(device, dispatches, "bench/gemm_f16");
  programs.push(p);
  return () => p.run(device);
}
const times = (d: Dispatch) => Array.from({ length: repeat }, () => d);

for (const { what, M, N, K, o } of SHAPES) {
  const shapeA = o.transA ? [K, M] : [M, K], shapeB = o.transB ? [N, K] : [K, N];
  const a = tensorFrom(device, values(M * K, 1), shapeA), b = tensorFrom(device, values(K * N, 2), shapeB);
  const a16 = createTensor(device, shapeA, "a16", "f16"), b16 = createTensor(device, shapeB, "b16", "f16");
  const c = createTensor(device, [M, N]);
  await build([castF16(a, a16), castF16(b, b16)]).then((cast) => cast());
  const gflop = (repeat * 2 * M * N * K) / 1e9;
  await compare(`mlp ${what}, GFLOP/s`, { unit: "GFLOP/s", rounds }, [
    { name: "f32 (gemm.wgsl)", work: gflop, run: await build(times(gemm(a, b, c, o))), baseline: true },
    { name: "f16 storage, f32 sums", work: gflop, run: await build(times(gemmF16(a16, b16, c, o))) },
    { name: "f16 storage, f16 sums", work: gflop, run: await build(times(gemmF16(a16, b16, c, { ...o, accumulate: "f16" }))) },
    {
      name: "cast both + f16 storage, f32 sums",
      work: gflop,
      run: await build(Array.from({ length: repeat }, () => [castF16(a, a16), castF16(b, b16), gemmF16(a16, b16, c, o)]).flat()),
    },
  ]);
  for (const t of [a, b, a16, b16, c]) t.buffer.destroy();
}
for (const p of programs) p.destroy();
device.destroy();
runtime.exit(0);
