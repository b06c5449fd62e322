/** Owner of shaders/train/sum_axes.wgsl: sums a [O, J, I] tensor over O and I (bias gradients). */
import code from "../../../shaders/train/sum_axes.wgsl" with { type: "text" };
import { grid, Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectRank, expectShape } from "./_check.ts";

export const sumAxesKernel = new Kernel({ name: "train/sum_axes", code, bindings: ["uniform", "read-only-storage", "storage"] });

/** Up to this many terms per output, one invocation adds them all (no workgroup tree). */
const SERIAL_TERMS = 256;

/** Plans out[J] = Σ_{o,i} src[o, j, i] for src of shape [O, J, I]. */
export function sumAxes(src: Tensor, out: Tensor): Dispatch {
  expectRank("sum_axes", "src", src, 3);
  const [O, J, I] = src.shape;
  expectShape("sum_axes", "out", out, [J]);
  const serial = O * I <= SERIAL_TERMS;
  return {
    kernel: sumAxesKernel,
    bindings: [uniforms([O, J]), src, out],
    workgroups: serial ? grid(J, 64) : grid(J, 1),
    constants: { SERIAL: serial ? 1 : 0, I },
  };
}
