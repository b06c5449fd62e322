/**
 * Which convolution strategy is faster on this adapter: conv2d_fwd.wgsl's implicit GEMM
 * against im2col (bench/train/im2col.wgsl) followed by gemm.wgsl, on the forward pass of the
 * cnn model's two convolutions at batch 128. The im2col side is not charged for turning its
 * NHWC result back into NCHW, so it is favoured. Then the filter gradient of the second
 * convolution (144 taps on 16 lanes) with tiles split evenly (tileSize: 2 groups of 5 taps a
 * lane) against power-of-two tiles (2 groups of 8, the second almost idle), checked equal.
 * Interleaved rounds (bench/_lib/compare.ts).
 *
 *   bun bench/train/conv_variants.ts [--batch 128] [--rounds 7]
 */
import { deviceInfo, requestDevice } from "../../src/gpu/device.ts";
import { grid, Kernel } from "../../src/gpu/kernel.ts";
import { Program, uniforms } from "../../src/train/program.ts";
import { createTensor } from "../../src/train/tensor.ts";
import { conv2dFwd } from "../../src/train/ops/conv2d_fwd.ts";
import { conv2dBwdFilter, filterSplits } from "../../src/train/ops/conv2d_bwd_filter.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { gemm } from "../../src/train/ops/gemm.ts";
import { compare } from "../_lib/compare.ts";
import { benchArgs } from "../_lib/args.ts";
import im2colCode from "./im2col.wgsl" with { type: "text" };

const args = benchArgs({ program: "bench/train/conv_variants.ts", usage: "usage: bun bench/train/conv_variants.ts [--batch 128] [--rounds 7]", valued: ["batch", "rounds"] });
const B = args.int("batch", 128), rounds = args.int("rounds", 7);
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
{
  const [C, H, K] = [16, 14, 32];
  const x = createTensor(device, [B, C, H, H]), dy = createTensor(device, [B, K, H, H]);
  device.queue.writeBuffer(x.buffer, 0, Float32Array.from({ length: x.size }, () => Math.random() - 0.5));
  device.queue.writeBuffer(dy.buffer, 0, Float32Array.from({ length: dy.size }, () => Math.random() - 0.5));
  const dwEven = createTensor(device, [K, C, 3, 3]), dwPow2 = createTensor(device, [K, C, 3, 3]);
  const S = filterSplits(B, dwEven.shape);
  const scratch = createTensor(device, [S, dwEven.size]);
  const even = conv2dBwdFilter(dy, x, dwEven, { padding: 1, splits: S, scratch });
  const taps = C * 9, WG = even[0].constants!.WG;
  // The tile the earlier rule chose: the next power of two of taps / lanes, at most 8.
  const rt = Math.min(8, 2 ** Math.ceil(Math.log2(Math.ceil(taps / WG))));
  const pow2 = conv2dBwdFilter(dy, x, dwPow2, { padding: 1, splits: S, scratch });
  pow2[0] = { ...pow2[0], workgroups: [Math.ceil(taps / (WG * rt)), pow2[0].workgroups[1], pow2[0].workgroups[2]], constants: { ...pow2[0].constants!, RT: rt } };
  const a = await Program.build(device, even), b = await Program.build(device, pow2);
  await a.run(device);
  await b.run(device);
  const [ra, rb] = [new Float32Array(await readBuffer(device, dwEven.buffer)), new Float32Array(await readBuffer(device, dwPow2.buffer))];
  if (ra.some((v, i) => v !== rb[i])) throw new Error("the two tilings disagree");
  const flops = 2 * B * H * H * K * taps;
  await compare(`conv3×3 ${C}→${K} on ${H}×${H}, filter gradient, GFLOP/s`, { unit: "GFLOP/s", rounds }, [
    { name: `even tiles (RT ${even[0].constants!.RT})`, work: flops / 1e9, run: () => a.run(device) },
    { name: `power-of-two tiles (RT ${rt})`, work: flops / 1e9, run: () => b.run(device), baseline: true },
  ]);
}
device.destroy();
