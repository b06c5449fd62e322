/** Owner of shaders/train/gather_u8.wgsl: rows of bytes gathered and normalized to f32. */
import code from "../../../shaders/train/gather_u8.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, invalid } from "./_check.ts";

export const gatherU8Kernel = new Kernel({
  name: "train/gather_u8",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"],
});

/**
 * Plans out [B, …] (f32) = (bytes of row index[b] of `src`) / 255 − mean) / std, where `src`
 * holds rows of L = out.size / B bytes packed 4 per u32 (any shape; its buffer is read as bytes).
 */
export function gatherU8(src: Tensor, index: Tensor, out: Tensor, o: { mean: number; std: number }): Dispatch {
  expectRank("gather_u8", "index", index, 1);
  if (out.shape[0] !== index.size) invalid(`Cannot run gather_u8 as 'out' must hold ${index.size} rows: current shape is [${out.shape}]`);
  if (!(o.std > 0)) invalid(`Cannot run gather_u8 as 'std' must be > 0: current value is ${o.std}`);
  const L = out.size / index.size;
  return {
    kernel: gatherU8Kernel,
    bindings: [uniforms([out.size, { f32: 1 / (255 * o.std) }, { f32: -o.mean / o.std }]), src, index, out],
    constants: { L },
    workgroups: grid(out.size, 256),
  };
}
