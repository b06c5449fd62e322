/** Owner of shaders/train/maxpool_fwd.wgsl: S×S max pooling with stride S, and the winners. */
import code from "../../../shaders/train/maxpool_fwd.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape } from "./_check.ts";
import { poolConstants, poolGeometry } from "./_pool.ts";

export const maxpoolFwdKernel = new Kernel({ name: "train/maxpool_fwd", code, bindings: ["read-only-storage", "storage", "storage"] });

/** Plans y, arg [N, C, ⌊H/S⌋, ⌊W/S⌋] from x [N, C, H, W]; arg is u32 (flat index into x). */
export function maxpoolFwd(x: Tensor, y: Tensor, arg: Tensor, size: number): Dispatch {
  const g = poolGeometry("maxpool_fwd", x, size);
  const out = [g.N, g.C, g.OH, g.OW];
  expectShape("maxpool_fwd", "y", y, out);
  expectShape("maxpool_fwd", "arg", arg, out);
  return {
    kernel: maxpoolFwdKernel,
    bindings: [x, y, arg],
    workgroups: grid(y.size, 256),
    constants: poolConstants(g, y.size),
  };
}
