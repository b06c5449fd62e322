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
): Float64Array {
  let shape = input.slice();
  let v: ArrayLike<number> = x;
  let p = 0, s = 0;
  for (const l of layers) {
    switch (l.kind) {
      case "dense": {
        const fanIn = shape.reduce((a, b) => a * b, 1);
        v = gemmRef(v, params[p], B, l.units, fanIn, { bias: params[p + 1], relu: l.relu });
        p += 2;
        shape = [l.units];
        break;
      }
      case "conv2d": {
        const [C, H, W] = shape, k = l.kernel, P = l.padding ?? (k - 1) / 2;
        v = conv2dRef(v, params[p], { N: B, C, H, W, K: l.filters, KH: k, KW: k, P }, params[p + 1], l.relu);
        p += 2;
        shape = [l.filters, H + 2 * P - k + 1, W + 2 * P - k + 1];
        break;
      }
      case "maxpool": {
        const [C, H, W] = shape;
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
        v = reluRef(v);
        break;
      case "batchnorm": {
        const C = shape[0], I = shape.slice(1).reduce((a, b) => a * b, 1);
        const running = state?.[s++];
        const { mean, variance } = running
          ? { mean: Array.from({ length: C }, (_, c) => running[c]), variance: Array.from({ length: C }, (_, c) => running[C + c]) }
          : batchnormStatsRef(v, B, C, I);
        v = batchnormApplyRef(v, C, I, mean, variance, params[p], params[p + 1], l.eps ?? 1e-5, l.relu);
        p += 2;
        break;
      }
    }
  }
  return Float64Array.from(v);
}
