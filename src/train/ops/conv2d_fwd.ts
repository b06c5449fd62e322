/** Owner of shaders/train/conv2d_fwd.wgsl: implicit-GEMM 2-D convolution, stride 1 (+ bias, ReLU). */
import code from "../../../shaders/train/conv2d_fwd.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape, tileSize } from "./_check.ts";
import { convGeometry, convParams, expectOutput } from "./_conv.ts";

export const conv2dFwdKernel = new Kernel({
  name: "train/conv2d_fwd",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "read-only-storage", "storage"],
});

const WG = 16, RP = 4, MAX_R = 8;

export interface Conv2dOptions {
  /** Zero padding on every side (1 keeps a 3×3 convolution's size). */
  padding: number;
  bias?: Tensor;
  relu?: boolean;
}

/** Plans y [N,K,OH,OW] = conv(x [N,C,H,W], w [K,C,KH,KW]) (+ bias[K]) (ReLU). */
export function conv2dFwd(x: Tensor, w: Tensor, y: Tensor, o: Conv2dOptions): Dispatch {
  const g = convGeometry("conv2d_fwd", x, w, o.padding);
  expectOutput("conv2d_fwd", "y", y, g);
  if (o.bias) expectShape("conv2d_fwd", "bias", o.bias, [g.K]);
  const rc = tileSize(g.K, MAX_R);
  return {
    kernel: conv2dFwdKernel,
    bindings: [uniforms(convParams(g)), x, w, o.bias ?? null, y],
    workgroups: [Math.ceil((g.N * g.OH * g.OW) / (WG * RP)), Math.ceil(g.K / rc), 1],
    constants: { BIAS: o.bias ? 1 : 0, RELU: o.relu ? 1 : 0, WG, RP, RC: rc },
  };
}
