/**
 * Owner of shaders/train/maxpool_bwd.wgsl: routes each window's gradient to its winner. The
 * override declarations and index arithmetic repeat maxpool_fwd.wgsl's (one invocation per
 * input here, per output there); the constants are shared on this side (_pool.ts), while each
 * kernel stays a whole text, as WGSL has no includes.
 */
import code from "../../../shaders/train/maxpool_bwd.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape } from "./_check.ts";
import { poolConstants, poolGeometry } from "./_pool.ts";

export const maxpoolBwdKernel = new Kernel({
  name: "train/maxpool_bwd",
  code,
  bindings: ["read-only-storage", "read-only-storage", "storage", "read-only-storage"],
});

/**
 * Plans dx [N, C, H, W] from dy and maxpool_fwd's arg [N, C, ⌊H/S⌋, ⌊W/S⌋]. With `reluGate`
 * (the pooled input x, itself the output of a ReLU), dx is also zeroed where x ≤ 0: the
 * ReLU's backward in the same pass.
 */
export function maxpoolBwd(dy: Tensor, arg: Tensor, dx: Tensor, size: number, reluGate?: Tensor): Dispatch {
  const g = poolGeometry("maxpool_bwd", dx, size);
  const out = [g.N, g.C, g.OH, g.OW];
  expectShape("maxpool_bwd", "dy", dy, out);
  expectShape("maxpool_bwd", "arg", arg, out);
  if (reluGate) expectShape("maxpool_bwd", "reluGate", reluGate, dx.shape);
  return {
    kernel: maxpoolBwdKernel,
    bindings: [dy, arg, dx, reluGate ?? null],
    workgroups: grid(dx.size, 256),
    constants: { ...poolConstants(g, dx.size), RELU_GATE: reluGate ? 1 : 0 },
  };
}
