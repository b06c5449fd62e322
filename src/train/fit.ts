/**
 * The training loop: epochs of steps over batches from any async source (the Loader plus GPU
 * preprocessing, or a GpuDataset for the no-I/O bound), evaluation on a test source after
 * each epoch, and one report per epoch with the names train.ts --json prints.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import type { Sequential, TrainBatch, TrainMetrics } from "./model.ts";

export interface EpochReport {
  epoch: number;
  /** Wall time of the epoch's training steps, until the GPU finished them (evaluation excluded). */
  seconds: number;
  imagesPerSec: number;
  /** Mean training loss over the epoch's steps (each step's forward pass, before its update). */
  loss: number;
  trainAccuracy: number;
  /** Accuracy on the test source after the epoch (NaN without one). */
  testAccuracy: number;
  testLoss: number;
  /** Share of `seconds` spent waiting for the source's next batch. */
  waitShare: number;
  /** Wall time of the evaluation. */
  evalSeconds: number;
  samples: number;
  /** Each step's training loss, in step order (mean over its batch, before its update). */
  stepLoss: number[];
}

export interface FitOptions {
  epochs: number;
  /** The training batches of epoch e (0-based). */
  train: (epoch: number) => AsyncIterable<TrainBatch> | Iterable<TrainBatch>;
  /** Test batches, evaluated after every epoch. */
  test?: () => AsyncIterable<TrainBatch> | Iterable<TrainBatch>;
  /** Called after each epoch (progress output, metrics files). */
  onEpoch?: (r: EpochReport) => void | Promise<void>;
  /**
   * Called after each step is submitted, with the epoch's sample count so far, and the
   * milliseconds since the epoch began and those of them spent waiting for batches.
   */
  onStep?: (epoch: number, samples: number, elapsedMs: number, waitedMs: number) => void;
  /** Learning rate per epoch (a schedule); default: the optimizer's. */
  lr?: (epoch: number) => number;
}

/**
 * Trains `model` for `epochs`, returning one report per epoch.
 *
 * @example
 * ```ts
 * import { requestDevice } from "cassette";
 * import { createModel, GpuDataset, fit } from "cassette/train";
 * const device = await requestDevice();
 * // Two classes of 4×4 images: bright top half or bright bottom half.
 * const n = 64, images = new Float32Array(n * 16), labels = new Uint32Array(n);
 * for (let i = 0; i < n; i++) {
 *   labels[i] = i % 2;
 *   for (let p = 0; p < 16; p++) images[i * 16 + p] = (p < 8) === (i % 2 === 0) ? 1 : 0;
 * }
 * const data = new GpuDataset(device, images, labels, { shape: [1, 4, 4] });
 * const model = createModel(device, { input: [1, 4, 4], layers: [{ kind: "dense", units: 2 }] }, { optimizer: { kind: "adam", lr: 0.05 } });
 * const reports = await fit(model, { epochs: 3, train: (e) => data.batches(e, { batch: 16 }), test: () => data.batches(0, { batch: 64 }) });
 * console.log(reports.at(-1)!.testAccuracy); // 1
 * await model.destroy();
 * await data.destroy();
 * device.destroy();
 * ```
 */
export async function fit(model: Sequential, o: FitOptions): Promise<EpochReport[]> {
  if (!Number.isInteger(o.epochs) || o.epochs < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot train as 'epochs' must be a positive integer: current value is ${o.epochs}`);
  }
  const reports: EpochReport[] = [];
  await model.takeTrainMetrics(); // start the epoch's sums from zero
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    if (o.lr) model.optimizer.lr = o.lr(epoch);
    let samples = 0, waited = 0;
    const t0 = runtime.now();
    const source = o.train(epoch);
    const it = (Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]()) as AsyncIterator<TrainBatch> | Iterator<TrainBatch>;
    for (;;) {
      const w0 = runtime.now();
      const r = await it.next();
      waited += runtime.now() - w0;
      if (r.done) break;
      await model.trainStep(r.value);
      samples += r.value.n;
      o.onStep?.(epoch, samples, runtime.now() - t0, waited);
    }
    const train: TrainMetrics = await model.takeTrainMetrics(); // waits for the GPU
    const seconds = (runtime.now() - t0) / 1000;
    const e0 = runtime.now();
    const test = o.test ? await model.evaluate(o.test()) : { loss: NaN, accuracy: NaN };
    const report: EpochReport = {
      epoch: epoch + 1,
      seconds,
      imagesPerSec: samples / seconds,
      loss: train.loss,
      trainAccuracy: train.accuracy,
      testAccuracy: test.accuracy,
      testLoss: test.loss,
      waitShare: seconds > 0 ? waited / 1000 / seconds : 0,
      evalSeconds: (runtime.now() - e0) / 1000,
      samples,
      stepLoss: train.stepLoss,
    };
    reports.push(report);
    await o.onEpoch?.(report);
  }
  return reports;
}
