/**
 * Owner of shaders/train/cast_f16.wgsl: an f16 copy of an f32 tensor (round to nearest, ties
 * to even; ±inf past f16's range), the operands of gemm_f16.ts. Runs on any device: the
 * kernel packs the bits with integer arithmetic and needs no `shader-f16`.
 */
import code from "../../../shaders/train/cast_f16.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectDType, expectSize } from "./_check.ts";

export const castF16Kernel = new Kernel({ name: "train/cast_f16", code, bindings: ["uniform", "read-only-storage", "storage"] });

/** Plans dst = f16(src): `src` an f32 tensor, `dst` an f16 tensor of as many values. */
export function castF16(src: Tensor, dst: Tensor): Dispatch {
  expectDType("cast_f16", "src", src, "f32");
  expectDType("cast_f16", "dst", dst, "f16");
  expectSize("cast_f16", "dst", dst, src.size);
  // One invocation per 32-bit word of dst, i.e. per pair of values.
  return { kernel: castF16Kernel, bindings: [uniforms([src.size]), src, dst], workgroups: grid(Math.ceil(src.size / 2), 256) };
}
