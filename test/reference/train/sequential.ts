/**
 * CPU reference of a whole Sequential model in f64, composed from the per-kernel references:
 * the forward in training mode (batch norm with the batch's statistics) or eval mode (with its
 * running statistics, the state a weights file carries), and the mean softmax cross-entropy.
 * Backward passes are checked against central differences of the loss.
 */
import type { LayerSpec } from "../../../src/train/layers.ts";
import { gemmRef } from "./gemm.ts";
import { conv2dRef } from "./conv2d.ts";
import { avgpoolRef, maxpoolRef } from "./pool.ts";
import { reluRef } from "./elementwise.ts";
import { batchnormApplyRef, batchnormStatsRef } from "./batchnorm.ts";
import { softmaxXentRef } from "./softmax_xent.ts";

/** Loss (mean over the batch) of a model on x [B, ...input]; params in the model's `parameters` order. */
export function sequentialLossRef(
  layers: LayerSpec[], input: number[], params: ArrayLike<number>[], x: ArrayLike<number>, labels: ArrayLike<number>, B: number,
): number {
  const logits = sequentialForwardRef(layers, input, params, x, B);
  return softmaxXentRef(logits, labels, B, logits.length / B).loss / B;
}

/**
 * Logits [B, classes] of x [B, ...input]. Without `state`, training mode; with it (the batch-norm
 * layers' running [mean | var] vectors, in layer order), eval mode.
 */
export function sequentialForwardRef(
  layers: LayerSpec[], input: number[], params: ArrayLike<number>[], x: ArrayLike<number>, B: number, state?: ArrayLike<number>[],
  kinks?: Kinks,
): Float64Array {
  // A ReLU is applied here, after its layer, so that its input can be seen (same values as fused).
  const relu = (z: ArrayLike<number>, on: boolean | undefined): ArrayLike<number> => {
    if (!on) return z;
    if (kinks) for (let i = 0; i < z.length; i++) kinks.margin = Math.min(kinks.margin, Math.abs(z[i]));
    return reluRef(z);
  };
  let shape = input.slice();
  let v: ArrayLike<number> = x;
  let p = 0, s = 0;
  for (const l of layers) {
    switch (l.kind) {
      case "dense": {
        const fanIn = shape.reduce((a, b) => a * b, 1);
        v = relu(gemmRef(v, params[p], B, l.units, fanIn, { bias: params[p + 1] }), l.relu);
        p += 2;
        shape = [l.units];
        break;
      }
      case "conv2d": {
        const [C, H, W] = shape, k = l.kernel, P = l.padding ?? (k - 1) / 2;
        v = relu(conv2dRef(v, params[p], { N: B, C, H, W, K: l.filters, KH: k, KW: k, P }, params[p + 1]), l.relu);
        p += 2;
        shape = [l.filters, H + 2 * P - k + 1, W + 2 * P - k + 1];
        break;
      }
      case "maxpool": {
        const [C, H, W] = shape;
        if (kinks) kinks.margin = Math.min(kinks.margin, maxpoolGap(v, B * C, H, W, l.size));
        v = maxpoolRef(v, B, C, H, W, l.size).y;
        shape = [C, Math.floor(H / l.size), Math.floor(W / l.size)];
        break;
      }
      case "avgpool": {
        const [C, H, W] = shape;
        v = avgpoolRef(v, B * C, H * W);
        shape = [C];
        break;
      }
      case "relu":
        v = relu(v, true);
        break;
      case "batchnorm": {
        const C = shape[0], I = shape.slice(1).reduce((a, b) => a * b, 1);
        const running = state?.[s++];
        const { mean, variance } = running
          ? { mean: Array.from({ length: C }, (_, c) => running[c]), variance: Array.from({ length: C }, (_, c) => running[C + c]) }
          : batchnormStatsRef(v, B, C, I);
        v = relu(batchnormApplyRef(v, C, I, mean, variance, params[p], params[p + 1], l.eps ?? 1e-5), l.relu);
        p += 2;
        break;
      }
    }
  }
  return Float64Array.from(v);
}

/**
 * How close a forward came to a point where the loss is not smooth: the smallest |input| of a
 * ReLU and the smallest gap between a max-pool window's two largest values. Below f32's reach
 * (~1e-5 here), the GPU's f32 forward may take the other side of the kink than this f64 one, and
 * its gradient is then another function's: a gradient check must draw other inputs.
 */
export interface Kinks {
  margin: number;
}

function maxpoolGap(x: ArrayLike<number>, NC: number, H: number, W: number, S: number): number {
  let gap = Infinity;
  for (let nc = 0; nc < NC; nc++) {
    for (let oh = 0; oh + S <= H; oh += S) {
      for (let ow = 0; ow + S <= W; ow += S) {
        let a = -Infinity, b = -Infinity;
        for (let dh = 0; dh < S; dh++) {
          for (let dw = 0; dw < S; dw++) {
            const v = x[(nc * H + oh + dh) * W + ow + dw];
            if (v > a) b = a, a = v;
            else if (v > b) b = v;
          }
        }
        // Two zeros are two ReLUs off: either one's gradient is 0, so a tie between them is no kink.
        if (a !== 0 || b !== 0) gap = Math.min(gap, a - b);
      }
    }
  }
  return gap;
}
