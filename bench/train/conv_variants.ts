/**
 * Which convolution strategy is faster on this adapter: conv2d_fwd.wgsl's implicit GEMM
 * against im2col (bench/train/im2col.wgsl) followed by gemm.wgsl, on the forward pass of the
 * cnn model's two convolutions at batch 128. The im2col side is not charged for turning its
 * NHWC result back into NCHW, so it is favoured. Interleaved rounds (bench/_lib/compare.ts).
 *
 *   bun bench/train/conv_variants.ts [--batch 128] [--rounds 7]
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { deviceInfo, requestDevice } from "../../src/gpu/device.ts";
import { Kernel } from "../../src/gpu/kernel.ts";
import { Program, grid, uniforms } from "../../src/train/program.ts";
import { createTensor } from "../../src/train/tensor.ts";
import { conv2dFwd } from "../../src/train/ops/conv2d_fwd.ts";
import { gemm } from "../../src/train/ops/gemm.ts";
import { compare } from "../_lib/compare.ts";
import im2colCode from "./im2col.wgsl" with { type: "text" };

const args = runtime.args();
const opt = (name: string, def: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const B = Number(opt("--batch", "128")), rounds = Number(opt("--rounds", "7"));
const device = await requestDevice();
console.log(`${deviceInfo(device)!.runtime}; adapter: ${deviceInfo(device)!.adapter}; batch ${B}`);
const im2col = new Kernel({ name: "bench/im2col", code: im2colCode, bindings: ["uniform", "read-only-storage", "storage"] });

for (const [C, H, K] of [[1, 28, 16], [16, 14, 32]]) {
  const x = createTensor(device, [B, C, H, H]), w = createTensor(device, [K, C, 3, 3]), b = createTensor(device, [K]);
  const y = createTensor(device, [B, K, H, H]);
  const cols = createTensor(device, [B * H * H, C * 9]), yRows = createTensor(device, [B * H * H, K]);
  const implicit = await Program.build(device, [conv2dFwd(x, w, y, { padding: 1, bias: b, relu: true })]);
  const unfolded = await Program.build(device, [
    { kernel: im2col, bindings: [uniforms([B, C, H, H, K, 3, 3, 1, H, H, 0, 0]), x, cols], workgroups: grid(cols.size, 256) },
    gemm(cols, w.reshape([K, C * 9]), yRows, { transB: true, bias: b, relu: true }),
  ]);
  const flops = 2 * B * H * H * K * C * 9;
  await compare(`conv3×3 ${C}→${K} on ${H}×${H}, forward, GFLOP/s`, { unit: "GFLOP/s", rounds }, [
    { name: "implicit GEMM (conv2d_fwd)", work: flops / 1e9, run: () => implicit.run(device) },
    { name: "im2col + gemm", work: flops / 1e9, run: () => unfolded.run(device), baseline: true },
  ]);
  for (const t of [x, w, b, y, cols, yRows]) t.buffer.destroy();
}
device.destroy();
