/**
 * Why gemm.wgsl uses register tiles and no workgroup memory: it against the textbook 16×16
 * workgroup-memory tiling (bench/train/gemm_shared.wgsl) on the mlp's three products at batch
 * 128 (forward NN, weight gradient TN is timed as NN of the same size). Interleaved rounds.
 *
 *   bun bench/train/gemm_variants.ts [--rounds 7]
 */
import { deviceInfo, requestDevice } from "../../src/gpu/device.ts";
import { Kernel } from "../../src/gpu/kernel.ts";
import { Program, uniforms } from "../../src/train/program.ts";
import { createTensor } from "../../src/train/tensor.ts";
import { gemm } from "../../src/train/ops/gemm.ts";
import { compare } from "../_lib/compare.ts";
import { benchArgs } from "../_lib/args.ts";
import sharedCode from "./gemm_shared.wgsl" with { type: "text" };

const args = benchArgs({ program: "bench/train/gemm_variants.ts", usage: "usage: bun bench/train/gemm_variants.ts [--rounds 7]", valued: ["rounds"] });
const rounds = args.int("rounds", 7);
const device = await requestDevice();
console.log(`${deviceInfo(device)!.runtime}; adapter: ${deviceInfo(device)!.adapter}`);
const shared = new Kernel({ name: "bench/gemm_shared", code: sharedCode, bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"] });

for (const [M, N, K, what] of [[128, 256, 784, "mlp forward 128×784 · 784×256"], [784, 256, 128, "mlp weight gradient 784×128 · 128×256"]] as const) {
  const a = createTensor(device, [M, K]), b = createTensor(device, [K, N]), c = createTensor(device, [M, N]);
  const ours = await Program.build(device, [gemm(a, b, c)]);
  const textbook = await Program.build(device, [{ kernel: shared, bindings: [uniforms([M, N, K]), a, b, c], workgroups: [Math.ceil(N / 16), Math.ceil(M / 16), 1] }]);
  const gflop = (2 * M * N * K) / 1e9;
  await compare(`${what}, GFLOP/s`, { unit: "GFLOP/s", rounds }, [
    { name: "register tiles (gemm.wgsl)", work: gflop, run: () => ours.run(device) },
    { name: "16×16 workgroup memory", work: gflop, run: () => textbook.run(device), baseline: true },
  ]);
  for (const t of [a, b, c]) t.buffer.destroy();
}
device.destroy();
