/**
 * The f16 GEMM: C = op(A)·op(B) (+ bias) (ReLU) with A and B stored as f16 (made from f32
 * tensors by cast_f16.ts), C and bias f32; sums in f32 (the default) or in f16. It is
 * shaders/train/gemm.wgsl compiled with f16 element types (gemmSource), so the transposes,
 * checks and register tiles are gemm.ts's. The kernel needs the device feature `shader-f16`:
 * compiling it on a device opened without it throws CassetteError ERR_UNSUPPORTED (open the
 * device with `requestDevice({ features: ["shader-f16"] })`).
 */
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { invalid } from "./_check.ts";
import type { GemmOptions } from "./gemm.ts";
import { gemmGeometry, gemmSource } from "./gemm.ts";

/** One kernel per accumulation type: a type is fixed when the WGSL is compiled. */
const gemmF16Kernels = {
  f32: f16Kernel("train/gemm_f16", "f32"),
  f16: f16Kernel("train/gemm_f16 (f16 sums)", "f16"),
};

function f16Kernel(name: string, acc: "f32" | "f16"): Kernel {
  return new Kernel({
    name,
    code: gemmSource("f16", acc),
    bindings: ["uniform", "read-only-storage", "read-only-storage", "read-only-storage", "storage"],
    features: ["shader-f16"],
  });
}

export interface GemmF16Options extends GemmOptions {
  /**
   * Type of the products and running sums: "f32" (default: f16 storage only, the error is the
   * operands' rounding) or "f16" (f16 compute: each step also rounds to 11 significant bits).
   */
  accumulate?: "f32" | "f16";
}

/** Whether `device` was opened with `shader-f16`, which gemmF16 needs. */
export function hasF16(device: GPUDevice): boolean {
  return device.features.has("shader-f16");
}

/** Plans C[M,N] = op(A)·op(B) (+ bias) (ReLU) for f16 tensors A and B, f32 C. */
export function gemmF16(a: Tensor, b: Tensor, c: Tensor, o: GemmF16Options = {}): Dispatch {
  const acc = o.accumulate ?? "f32";
  if (acc !== "f32" && acc !== "f16") {
    invalid(`Cannot run gemm_f16 as 'accumulate' must be "f32" or "f16": current value is ${JSON.stringify(o.accumulate)}`);
  }
  const g = gemmGeometry("gemm_f16", "f16", a, b, c, o);
  return {
    kernel: gemmF16Kernels[acc],
    bindings: [uniforms([g.M, g.N, g.K]), a, b, o.bias ?? null, c],
    workgroups: g.workgroups,
    constants: g.constants,
  };
}
