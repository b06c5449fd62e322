/**
 * Predictions over stored images (`cassette predict`): the loader and GPU path that train.ts
 * evaluates with, and the model's eval forward with its softmax read back per batch.
 *
 *   Loader (ready order, decode) ─► loaderBatches (GPU preprocess) ─► model.predictStep ─► top-k
 *   every id exactly once            the model's input shape,           n × classes          on the CPU
 *                                    train.ts's mean and std            probabilities
 *
 * The model comes from its weights file: the header names the spec (src/train/weights.ts), so
 * the file alone is enough to build it.
 */
import { createHash } from "node:crypto";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { FASHION_MNIST_MEAN, FASHION_MNIST_STD } from "../dataset/fashion_mnist.ts";
import { Loader, type LoaderOptions } from "../loader.ts";
import type { Sample } from "../read/sample.ts";
import type { DecodedImage } from "../gpu/pack.ts";
import { createPreprocessor, type Preprocessor } from "../gpu/preprocess.ts";
import { loaderBatches, type LoaderTrainBatch } from "./loader_batches.ts";
import { createModel, type Sequential } from "./model.ts";
import type { ModelSpec } from "./layers.ts";
import { MODELS } from "./models.ts";
import { decodeWeights } from "./weights.ts";

/** A model built from a weights file, and the file's identity. */
export interface LoadedModel {
  /** The model, its weights loaded. */
  model: Sequential;
  /** "sha256:HEX" of the file's bytes: which weights predicted a row. */
  digest: string;
  /** The MODELS name whose spec the file's equals, if any. */
  name?: string;
}

/**
 * Builds the model a weights file's header names and loads its weights. With `name`, the
 * header's spec must be MODELS[name]'s; errors name the file and what differs.
 */
export async function loadModel(device: GPUDevice, path: string, o: { name?: string; seed?: number } = {}): Promise<LoadedModel> {
  let bytes: Uint8Array;
  try {
    bytes = await runtime.readFile(path);
  } catch (cause) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot read weights file '${path}': ${(cause as Error).message}`, { cause });
  }
  const { header } = decodeWeights(bytes, `'${path}'`);
  const spec = header.model as ModelSpec;
  if (!spec || typeof spec !== "object" || !Array.isArray(spec.input) || !Array.isArray(spec.layers)) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot build a model from weights file '${path}' as its header's model is not a spec { input, layers }: current value is ${JSON.stringify(header.model)?.slice(0, 200)}`);
  }
  const named = Object.entries(MODELS).find(([, m]) => canonical(m) === canonical(spec))?.[0];
  if (o.name !== undefined) {
    if (!MODELS[o.name]) throw new CassetteError("ERR_INVALID_OPTION", `Cannot build model '${o.name}': use one of ${Object.keys(MODELS).join(", ")}`);
    if (named !== o.name) {
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot use weights file '${path}' for model '${o.name}' as it holds ${named ? `model '${named}'` : `another model (${describeSpec(spec)})`}: ` +
          `give --model ${named ?? "NAME"} or leave --model out (the file names its model)`,
      );
    }
  }
  let model: Sequential;
  try {
    model = createModel(device, spec, { seed: o.seed });
  } catch (e) {
    if (!(e instanceof CassetteError)) throw e;
    throw new CassetteError(e.code, `Cannot build the model of weights file '${path}': ${e.message}`, { cause: e });
  }
  try {
    await model.load(path);
  } catch (e) {
    await model.destroy();
    throw e;
  }
  return { model, digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`, name: named };
}

/** JSON with sorted keys and no undefined fields: two specs built differently compare equal. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x));
}

/** A spec in a few words: "input 1×28×28, dense 256 → dense 10". */
export function describeSpec(spec: ModelSpec): string {
  const l = spec.layers.map((x) => {
    switch (x.kind) {
      case "dense": return `dense ${x.units}`;
      case "conv2d": return `conv ${x.kernel}×${x.kernel}·${x.filters}`;
      case "maxpool": return `maxpool ${x.size}`;
      default: return x.kind;
    }
  });
  return `input ${spec.input.join("×")}, ${l.join(" → ")}`;
}

/** What `predict` reads and how: the store, dataset and ids, batch size, top-k, workers and prefetch. */
export interface PredictOptions {
  /** What the Loader reads (LoaderOptions.store): an address, an open Store or a Source. */
  store: LoaderOptions["store"];
  /** The dataset: needed for a Store and for sqlite: and cassandra:// addresses, as the Loader's. */
  dataset?: string;
  /** The ids of the samples to predict. */
  ids: readonly string[];
  /** Samples per batch (default 256). */
  batchSize?: number;
  /** Classes kept per sample, most probable first (default 5; at most the model's classes). */
  topK?: number;
  /** Read and decode in this many worker threads (default 0; needs `store` as an address). */
  workers?: number;
  /** Batches of requests kept in flight, as the Loader's `prefetch` (default "auto"). */
  prefetch?: number | "auto";
}

/** One batch's predictions, in the order the loader handed its samples over. */
export interface PredictedBatch {
  /** The samples' ids, in the order the loader handed them over. */
  ids: string[];
  /** The stored class of each sample; -1 where it has none. */
  labels: Int32Array;
  /** Classes kept per sample. */
  k: number;
  /** n × k classes, each row most probable first (ties: the lower class first, as evaluate's argmax). */
  classes: Int32Array;
  /** n × k probabilities, as `classes`. */
  probs: Float32Array;
}

/**
 * Normalization by the model's channels, as train.ts picks it: Fashion-MNIST's statistics for
 * one channel (what the named models train on), ImageNet's for three. predict uses the model's
 * own (`Sequential.normalize`, from its weights' header) where the file records it.
 */
export function inputNormalization(channels: number): { mean: number[]; std: number[] } {
  return channels === 1 ? { mean: [FASHION_MNIST_MEAN], std: [FASHION_MNIST_STD] } : { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
}

/** Predictions older than this many batches are awaited before the next batch is preprocessed (NOTE below). */
const IN_FLIGHT = 2;

/**
 * Runs `model` over every id once, in batches, and yields each batch's top-k classes.
 *
 * The next batch is read and preprocessed while the GPU runs the last ones: at most IN_FLIGHT
 * predictions are outstanding, and the preprocessor rewrites a batch's input only `depth` (3)
 * runs later, so every batch is copied into the model before its buffer is reused.
 *
 * @example
 * ```ts
 * import { ingest, openStore, requestDevice } from "cassette";
 * import { createModel, loadModel, predict } from "cassette/train";
 * const store = await openStore("sqlite:.tmp/predict-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 8 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * const device = await requestDevice();
 * const untrained = createModel(device, "mlp");
 * await untrained.save(".tmp/predict-example.bin"); // what train.ts --save writes
 * await untrained.destroy();
 * const { model } = await loadModel(device, ".tmp/predict-example.bin"); // its header names the model
 * let n = 0;
 * for await (const b of predict(model, { store, dataset: "fm", ids, topK: 3 })) n += b.ids.length;
 * console.log(n); // 16
 * await model.destroy();
 * device.destroy();
 * await store.close();
 * ```
 */
export async function* predict(model: Sequential, o: PredictOptions): AsyncGenerator<PredictedBatch> {
  const [C, H, W] = model.spec.input;
  if (model.spec.input.length !== 3 || (C !== 1 && C !== 3)) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot predict with a model whose input is [${model.spec.input}]: the loader's images become [1 or 3, H, W] tensors`);
  }
  const k = o.topK ?? Math.min(5, model.classes);
  if (!Number.isInteger(k) || k < 1 || k > model.classes) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot keep the top ${o.topK} classes as 'topK' must be an integer from 1 to the model's ${model.classes} classes`);
  }
  const batchSize = o.batchSize ?? 256;
  const workers = o.workers ?? 0;
  if (workers > 0 && typeof o.store !== "string") throw new CassetteError("ERR_INVALID_OPTION", "Cannot read in worker threads as they open the store themselves: give 'store' as an address");
  // A grey model asks the decoder for one channel, as train.ts does; the plan order does not
  // matter to predictions, so batches come in ready order. The Loader first: from here on it
  // owns (and closes) a Source it was given.
  const loader = new Loader<DecodedImage>({
    store: o.store, dataset: o.dataset, ids: o.ids, batchSize, shuffle: false, order: "ready", workers,
    decode: C === 1 ? { grey: true } : {}, transform: (s: Sample) => s.image!, prefetch: o.prefetch, reaskTail: true,
  });
  const pending: { b: LoaderTrainBatch; probs: Promise<Float32Array> }[] = [];
  const finish = async ({ b, probs }: (typeof pending)[number]): Promise<PredictedBatch> => {
    const top = topK(await probs, b.n, model.classes, k);
    return { ids: b.ids, labels: b.labels, k, ...top };
  };
  let pre: Preprocessor | undefined;
  try {
    // As the model was trained (its weights' header), else as train.ts did before it recorded it.
    pre = await createPreprocessor(model.device, { width: W, height: H, channels: C, ...(model.normalize ?? inputNormalization(C)) });
    for await (const b of loaderBatches(loader, pre, 0)) {
      for (let i = 0; i < b.n; i++) {
        if (b.labels[i] >= model.classes) {
          throw new CassetteError(
            "ERR_INVALID_OPTION",
            `Cannot predict sample ${b.ids[i]} with this model as its label ${b.labels[i]} is not one of the model's ${model.classes} classes: the weights are for another dataset`,
          );
        }
      }
      const probs = model.predictStep(b);
      probs.catch(() => {}); // awaited in order below; not an unhandled rejection meanwhile
      pending.push({ b, probs });
      if (pending.length >= IN_FLIGHT) yield await finish(pending.shift()!);
    }
    while (pending.length) yield await finish(pending.shift()!);
  } finally {
    // Nothing still running may lose its input: wait for it before the buffers go.
    await Promise.allSettled(pending.map((p) => p.probs));
    await loader.close();
    pre?.destroy();
  }
}

/**
 * The k most probable classes of each of n rows of `classes` probabilities, most probable
 * first; equal probabilities keep the lower class first (the argmax evaluate counts).
 */
export function topK(probs: Float32Array, n: number, classes: number, k: number): { classes: Int32Array; probs: Float32Array } {
  const outC = new Int32Array(n * k), outP = new Float32Array(n * k);
  const taken = new Uint8Array(classes);
  for (let r = 0; r < n; r++) {
    const row = r * classes;
    taken.fill(0);
    for (let j = 0; j < k; j++) {
      let best = -1;
      for (let c = 0; c < classes; c++) {
        if (!taken[c] && (best < 0 || probs[row + c] > probs[row + best])) best = c;
      }
      taken[best] = 1;
      outC[r * k + j] = best;
      outP[r * k + j] = probs[row + best];
    }
  }
  return { classes: outC, probs: outP };
}
