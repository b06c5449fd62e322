/**
 * The named models of `train.ts --model`, all for 28×28 grey images in 10 classes
 * (Fashion-MNIST):
 *   mlp      784-256-10, ReLU (bench/train.bench.ts trains the same model in TF.js)
 *   cnn      conv3×3·16 → pool → conv3×3·32 → pool → dense 10, ReLU (likewise)
 *   cnn-bn   conv3×3·32 → BN → pool → conv3×3·64 → BN → pool → dense 128 → dense 10: wider, with
 *            batch norm (its 10-epoch accuracy is not measured yet: ~85 min on lavapipe)
 */
import { CassetteError } from "../errors.ts";
import { batchNorm, conv2d, dense, maxPool } from "./layers.ts";
import type { ModelSpec } from "./layers.ts";

/** The named models of `train.ts --model` (mlp, cnn, cnn-bn), for 28×28 grey images in 10 classes. */
export const MODELS: Readonly<Record<string, ModelSpec>> = {
  mlp: { input: [1, 28, 28], layers: [dense(256, { relu: true }), dense(10)] },
  cnn: {
    input: [1, 28, 28],
    layers: [conv2d(16, 3, { relu: true }), maxPool(2), conv2d(32, 3, { relu: true }), maxPool(2), dense(10)],
  },
  "cnn-bn": {
    input: [1, 28, 28],
    layers: [
      conv2d(32, 3), batchNorm({ relu: true }), maxPool(2),
      conv2d(64, 3), batchNorm({ relu: true }), maxPool(2),
      dense(128, { relu: true }), dense(10),
    ],
  },
};

/** The spec of a named model; throws naming the known ones. */
export function modelSpec(name: string): ModelSpec {
  const spec = MODELS[name];
  if (!spec) throw new CassetteError("ERR_INVALID_OPTION", `Cannot build model '${name}': use one of ${Object.keys(MODELS).join(", ")}`);
  return spec;
}
