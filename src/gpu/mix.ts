/**
 * Owner of shaders/preprocess/mix.wgsl: a batch's MixUp or CutMix on the GPU, as drawn by
 * src/decode/mix.ts (`drawMix`): the tensor copied into a scratch buffer, then mixed in place
 * from it, both recorded into the caller's encoder.
 */
import code from "../../shaders/preprocess/mix.wgsl" with { type: "text" };
import type { BatchMixPlan } from "../decode/mix.ts";
import { grid, Kernel } from "./kernel.ts";

const kernel = new Kernel({ name: "preprocess/mix", code, bindings: ["uniform", "read-only-storage", "storage"] });

/** A tensor's shape as the kernel reads it. */
export interface MixShape {
  n: number;
  channels: number;
  height: number;
  width: number;
  layout: "nchw" | "nhwc";
}

/**
 * Records `plan` over the tensor at the start of `tensor` (n·c·h·w f32 values): a copy into
 * `scratch` (at least as large), then the mixing dispatch. `params` is a 48-byte uniform buffer.
 */
export async function encodeMix(
  device: GPUDevice, encoder: GPUCommandEncoder, plan: BatchMixPlan, s: MixShape, tensor: GPUBuffer, scratch: GPUBuffer, params: GPUBuffer,
): Promise<void> {
  if (plan.kind === "none") return;
  const count = s.n * s.channels * s.height * s.width;
  const groups = grid(count, 64);
  const b = plan.box ?? { x1: 0, y1: 0, x2: 0, y2: 0 };
  const data = new ArrayBuffer(48);
  new Uint32Array(data).set([s.n, s.channels, s.height, s.width, b.x1, b.y1, b.x2, b.y2, 0, groups[0] * 64, 0, 0]);
  new Float32Array(data, 32, 1)[0] = plan.weight;
  device.queue.writeBuffer(params, 0, data);
  encoder.copyBufferToBuffer(tensor, 0, scratch, 0, count * 4);
  await kernel.encode(device, encoder, [params, scratch, tensor], groups, { MIXUP: plan.kind === "mixup" ? 1 : 0, NCHW: s.layout === "nchw" ? 1 : 0 });
}
