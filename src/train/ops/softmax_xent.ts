/** Owner of shaders/train/softmax_xent.wgsl: softmax cross-entropy, its gradient, epoch sums. */
import code from "../../../shaders/train/softmax_xent.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, expectShape } from "./_check.ts";

export const softmaxXentKernel = new Kernel({
  name: "train/softmax_xent",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "storage", "storage"],
});

/**
 * Plans dz = ∂(mean loss)/∂z for logits z [B, C] and labels [2B + 1] (`packLabels`: the u32
 * labels, each row's other label, λ), and adds the batch's loss sum, correct count and row count
 * to stats [3].
 */
export function softmaxXent(z: Tensor, labels: Tensor, dz: Tensor, stats: Tensor): Dispatch {
  expectRank("softmax_xent", "z", z, 2);
  const [B, C] = z.shape;
  expectShape("softmax_xent", "labels", labels, [2 * B + 1]);
  expectShape("softmax_xent", "dz", dz, [B, C]);
  expectShape("softmax_xent", "stats", stats, [3]);
  return { kernel: softmaxXentKernel, bindings: [uniforms([B, C, { f32: 1 / B }]), z, labels, dz, stats], workgroups: [1, 1, 1] };
}

/**
 * The labels tensor's words for n rows: the labels, then each row's other label (the row before's
 * when mixed, MixUp and CutMix's roll by one; else its own), then λ as f32 bits (1 unmixed).
 */
export function packLabels(labels: ArrayLike<number>, n: number, lambda?: number): Uint32Array<ArrayBuffer> {
  const out = new Uint32Array(2 * n + 1);
  for (let i = 0; i < n; i++) {
    out[i] = labels[i];
    out[n + i] = lambda === undefined ? labels[i] : labels[(i + n - 1) % n];
  }
  new Float32Array(out.buffer, 8 * n, 1)[0] = lambda ?? 1;
  return out;
}
