/** Owner of shaders/train/gather_rows.wgsl: out[b] = src[index[b]], rows copied bit for bit. */
import code from "../../../shaders/train/gather_rows.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, invalid } from "./_check.ts";

export const gatherRowsKernel = new Kernel({
  name: "train/gather_rows",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"],
});

/** Plans out [B, …] = src [R, …] rows at index [B] (u32 < R; larger indices read row R−1). */
export function gatherRows(src: Tensor, index: Tensor, out: Tensor): Dispatch {
  expectRank("gather_rows", "index", index, 1);
  const L = src.size / src.shape[0];
  if (out.shape[0] !== index.size || out.size !== index.size * L) {
    invalid(`Cannot run gather_rows as 'out' must hold ${index.size} rows of ${L} values like 'src' [${src.shape}]: current shape is [${out.shape}]`);
  }
  return { kernel: gatherRowsKernel, bindings: [uniforms([out.size]), src, index, out], workgroups: grid(out.size, 256), constants: { L } };
}
