/** Owner of shaders/train/adamw.wgsl: AdamW over one parameter buffer. */
import code from "../../../shaders/train/adamw.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectSize } from "./_check.ts";

export const adamwKernel = new Kernel({ name: "train/adamw", code, bindings: ["uniform", "storage", "read-only-storage", "storage", "storage"] });

export interface AdamWHyper {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

/** Bytes of adamw's uniform for step t (1-based): the bias corrections are computed here in f64. */
export function adamwParams(count: number, h: AdamWHyper, t: number): ArrayBuffer {
  const b = new ArrayBuffer(32);
  new Uint32Array(b, 0, 1)[0] = count;
  new Float32Array(b, 4, 7).set([h.lr, h.beta1, h.beta2, h.eps, h.weightDecay, 1 / (1 - h.beta1 ** t), 1 / (1 - h.beta2 ** t)]);
  return b;
}

/** Plans one update of w with gradient g and moments m, v; `params` is a 32-byte uniform buffer (adamwParams). */
export function adamw(params: GPUBuffer, w: Tensor, g: Tensor, m: Tensor, v: Tensor): Dispatch {
  for (const [what, t] of [["g", g], ["m", m], ["v", v]] as const) expectSize("adamw", what, t, w.size);
  return { kernel: adamwKernel, bindings: [params, w, g, m, v], workgroups: grid(w.size, 256) };
}
