/** Owner of shaders/train/maxpool_bwd.wgsl: routes each window's gradient to its winner. */
import code from "../../../shaders/train/maxpool_bwd.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { grid, uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape } from "./_check.ts";
import { poolGeometry } from "./_pool.ts";

export const maxpoolBwdKernel = new Kernel({
  name: "train/maxpool_bwd",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"],
});

/** Plans dx [N, C, H, W] from dy and maxpool_fwd's arg [N, C, ⌊H/S⌋, ⌊W/S⌋]. */
export function maxpoolBwd(dy: Tensor, arg: Tensor, dx: Tensor, size: number): Dispatch {
  const g = poolGeometry("maxpool_bwd", dx, size);
  const out = [g.N, g.C, g.OH, g.OW];
  expectShape("maxpool_bwd", "dy", dy, out);
  expectShape("maxpool_bwd", "arg", arg, out);
  return { kernel: maxpoolBwdKernel, bindings: [uniforms([dx.size, g.H, g.W, g.OH, g.OW, g.S]), dy, arg, dx], workgroups: grid(dx.size, 256) };
}
