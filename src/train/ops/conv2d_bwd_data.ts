/**
 * Owner of shaders/train/conv2d_bwd_data.wgsl: the input gradient of conv2d_fwd. Its register
 * tiling repeats conv2d_fwd.wgsl's with the roles of x and dy swapped; it stays a whole text of
 * its own, since WGSL has no includes and a shared skeleton would hide the index math in which
 * the two kernels differ.
 */
import code from "../../../shaders/train/conv2d_bwd_data.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape, tileSize } from "./_check.ts";
import { convGeometry, convParams, expectOutput } from "./_conv.ts";

export const conv2dBwdDataKernel = new Kernel({
  name: "train/conv2d_bwd_data",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"],
});

const WG = 16, RP = 4, MAX_R = 8;

/** Plans dx [N,C,H,W] from dy [N,K,OH,OW] and w [K,C,KH,KW]; `x` gives the input's shape only. */
export function conv2dBwdData(dy: Tensor, w: Tensor, dx: Tensor, o: { padding: number }): Dispatch {
  const g = convGeometry("conv2d_bwd_data", dx, w, o.padding);
  expectOutput("conv2d_bwd_data", "dy", dy, g);
  expectShape("conv2d_bwd_data", "dx", dx, [g.N, g.C, g.H, g.W]);
  const rc = tileSize(g.C, MAX_R);
  return {
    kernel: conv2dBwdDataKernel,
    bindings: [uniforms(convParams(g)), dy, w, dx],
    workgroups: [Math.ceil((g.N * g.H * g.W) / (WG * RP)), Math.ceil(g.C / rc), 1],
    constants: { WG, RP, RC: rc },
  };
}
