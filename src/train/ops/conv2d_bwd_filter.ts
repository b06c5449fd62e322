/**
 * Owner of shaders/train/conv2d_bwd_filter.wgsl: the weight gradient of conv2d_fwd, split over
 * the batch when the weights alone give too few workgroups, the splits then added by sum_axes.
 */
import code from "../../../shaders/train/conv2d_bwd_filter.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { Tensor } from "../tensor.ts";
import { expectShape, invalid, tileSize } from "./_check.ts";
import { convGeometry, convParams, expectOutput } from "./_conv.ts";
import { sumAxes } from "./sum_axes.ts";

export const conv2dBwdFilterKernel = new Kernel({
  name: "train/conv2d_bwd_filter",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "storage"],
});

const WG = 16, MAX_R = 8;
/** Workgroups worth filling before splitting the batch: enough for a wide GPU. */
const TARGET_GROUPS = 64;

function tiles(C: number, KH: number, KW: number, K: number) {
  const taps = C * KH * KW;
  const rt = tileSize(taps, MAX_R, WG);
  const rc = tileSize(K, MAX_R);
  return { taps, rt, rc, groups: Math.ceil(taps / (WG * rt)) * Math.ceil(K / rc) };
}

/** How many batch splits conv2dBwdFilter uses for this geometry (1: no scratch needed). */
export function filterSplits(batch: number, wShape: readonly number[]): number {
  const [K, C, KH, KW] = wShape;
  const { groups } = tiles(C, KH, KW, K);
  return Math.max(1, Math.min(batch, 32, Math.floor(TARGET_GROUPS / groups)));
}

/**
 * Plans dw [K,C,KH,KW] from dy [N,K,OH,OW] and x [N,C,H,W]. With more than one split,
 * `scratch` must hold splits·K·C·KH·KW values.
 */
export function conv2dBwdFilter(
  dy: Tensor, x: Tensor, dw: Tensor,
  o: { padding: number; splits?: number; scratch?: Tensor },
): Dispatch[] {
  const g = convGeometry("conv2d_bwd_filter", x, dw, o.padding);
  expectOutput("conv2d_bwd_filter", "dy", dy, g);
  const S = o.splits ?? 1;
  if (!Number.isInteger(S) || S < 1 || S > g.N) invalid(`Cannot run conv2d_bwd_filter as 'splits' must be an integer in 1…${g.N}: current value is ${S}`);
  const { taps, rt, rc } = tiles(g.C, g.KH, g.KW, g.K);
  const wsize = g.K * taps;
  let part = dw;
  if (S > 1) {
    if (!o.scratch) invalid(`Cannot run conv2d_bwd_filter with ${S} splits as 'scratch' is missing: it needs ${S * wsize} values`);
    expectShape("conv2d_bwd_filter", "scratch", o.scratch, [S, wsize]);
    part = o.scratch;
  }
  const main: Dispatch = {
    kernel: conv2dBwdFilterKernel,
    bindings: [uniforms(convParams(g, S)), dy, x, part],
    workgroups: [Math.ceil(taps / (WG * rt)), Math.ceil(g.K / rc), S],
    constants: { WG, RT: rt, RC: rc },
  };
  if (S === 1) return [main];
  return [main, sumAxes(part.reshape([S, wsize, 1]), dw.reshape([wsize]))];
}
