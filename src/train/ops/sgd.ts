/** Owner of shaders/train/sgd.wgsl: SGD with momentum and weight decay over one parameter buffer. */
import code from "../../../shaders/train/sgd.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectSize } from "./_check.ts";

export const sgdKernel = new Kernel({ name: "train/sgd", code, bindings: ["uniform", "storage", "read-only-storage", "storage"] });

/** Bytes of sgd's uniform: {count, lr, momentum, wd}, rewritten when the learning rate changes. */
export function sgdParams(count: number, lr: number, momentum: number, wd: number): ArrayBuffer {
  const b = new ArrayBuffer(16);
  new Uint32Array(b, 0, 1)[0] = count;
  new Float32Array(b, 4, 3).set([lr, momentum, wd]);
  return b;
}

/** Plans one update of w with gradient g and velocity v; `params` is a 16-byte uniform buffer (sgdParams). */
export function sgd(params: GPUBuffer, w: Tensor, g: Tensor, v: Tensor): Dispatch {
  expectSize("sgd", "g", g, w.size);
  expectSize("sgd", "v", v, w.size);
  return { kernel: sgdKernel, bindings: [params, w, g, v], workgroups: grid(w.size, 256) };
}
