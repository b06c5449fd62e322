/**
 * The training loop: epochs of steps over batches from any async source (the Loader plus GPU
 * preprocessing, or a GpuDataset for the no-I/O bound), evaluation on a test source after
 * each epoch, and one report per epoch with the names train.ts --json prints.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { deviceLost } from "../gpu/device.ts";
import type { Sequential, TrainBatch, TrainMetrics } from "./model.ts";

/** One epoch of `fit`: its time and throughput, training loss and accuracy, test loss and accuracy, and the share spent waiting for batches. */
export interface EpochReport {
  /** The epoch (0-based). */
  epoch: number;
  /** Wall time of the epoch's training steps, until the GPU finished them (evaluation excluded). */
  seconds: number;
  /** Training samples per second of `seconds`. */
  imagesPerSec: number;
  /** Mean training loss over the epoch's steps (each step's forward pass, before its update). */
  loss: number;
  /** Training accuracy over the epoch's steps (each step's forward pass, before its update), 0…1. */
  trainAccuracy: number;
  /** Accuracy on the test source after the epoch (NaN without one). */
  testAccuracy: number;
  /** Mean loss on the test source after the epoch (NaN without one). */
  testLoss: number;
  /** Share of `seconds` spent waiting for the source's next batch. */
  waitShare: number;
  /** Wall time of the evaluation. */
  evalSeconds: number;
  /** Training samples of the epoch. */
  samples: number;
  /** Each step's training loss, in step order (mean over its batch, before its update). */
  stepLoss: number[];
}

/** What `fit` trains: the number of epochs, the training (and test) batches per epoch, callbacks, a learning-rate schedule, and where a resumed run starts. */
export interface FitOptions {
  /** Epochs in all: epochs 0 … epochs − 1 are trained (a resumed run's from `startEpoch` on). */
  epochs: number;
  /** The training batches of epoch e (0-based). */
  train: (epoch: number) => AsyncIterable<TrainBatch> | Iterable<TrainBatch>;
  /** Test batches, evaluated after every epoch. */
  test?: () => AsyncIterable<TrainBatch> | Iterable<TrainBatch>;
  /** Called after each epoch (progress output, metrics files). */
  onEpoch?: (r: EpochReport) => void | Promise<void>;
  /**
   * Called after each step is submitted, with the epoch's sample count so far (an interrupted
   * run's included, with `carry`), and the milliseconds since the epoch began and those of them
   * spent waiting for batches (this run's). A promise is awaited (a checkpoint): the time it
   * takes is left out of the epoch's `seconds`.
   */
  onStep?: (epoch: number, samples: number, elapsedMs: number, waitedMs: number) => void | Promise<void>;
  /** Learning rate per epoch (a schedule); default: the optimizer's. */
  lr?: (epoch: number) => number;
  /** The first epoch to train (0-based; default 0): a resumed run starts at its checkpoint's. */
  startEpoch?: number;
  /** What an interrupted run trained of `startEpoch` before its checkpoint: its report counts both runs. */
  carry?: EpochCarry;
}

/** An epoch's training so far: what a checkpoint keeps of the epoch in progress. */
export interface EpochCarry {
  /** Training samples of the epoch so far. */
  samples: number;
  /** Seconds of the epoch's training so far. */
  seconds: number;
  /** Of `seconds`, the time spent waiting for batches. */
  waitedSeconds: number;
  /** Mean training loss and accuracy over `samples` (each step's forward pass, before its update). */
  loss: number;
  /** Mean training accuracy over `samples`, 0…1. */
  accuracy: number;
  /** Each step's training loss so far, in step order. */
  stepLoss: number[];
}

/** An epoch's figures so far: `carry` (an interrupted run's) followed by this run's. */
export function carried(carry: EpochCarry | undefined, now: { samples: number; seconds: number; waitedSeconds: number } & TrainMetrics): EpochCarry {
  const c = carry ?? { samples: 0, seconds: 0, waitedSeconds: 0, loss: 0, accuracy: 0, stepLoss: [] };
  const rows = now.samples + c.samples;
  // Means weighted by samples; a part of no samples weighs nothing (its mean is NaN).
  const mean = (a: number, na: number, b: number, nb: number) => (na === 0 ? b : nb === 0 ? a : (a * na + b * nb) / (na + nb));
  return {
    samples: rows,
    seconds: c.seconds + now.seconds,
    waitedSeconds: c.waitedSeconds + now.waitedSeconds,
    loss: mean(c.loss, c.samples, now.loss, now.samples),
    accuracy: mean(c.accuracy, c.samples, now.accuracy, now.samples),
    stepLoss: [...c.stepLoss, ...now.stepLoss],
  };
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
  try {
    return await epochs(model, o);
  } catch (e) {
    // A lost device fails its next step with an error that does not say so (a page's tab, a GPU reset).
    throw await deviceLost(model.device, e, "train");
  }
}

async function epochs(model: Sequential, o: FitOptions): Promise<EpochReport[]> {
  // Reports from `startEpoch` on (a resumed run's earlier epochs are its checkpoint's).
  if (!Number.isInteger(o.epochs) || o.epochs < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot train as 'epochs' must be a positive integer: current value is ${o.epochs}`);
  }
  const reports: EpochReport[] = [];
  await model.takeTrainMetrics(); // start the epoch's sums from zero
  const start = o.startEpoch ?? 0;
  // startEpoch = epochs: a run resumed from its last epoch's checkpoint has nothing left to train.
  if (!Number.isInteger(start) || start < 0 || start > o.epochs) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot train as 'startEpoch' must be an integer from 0 to ${o.epochs}: current value is ${o.startEpoch}`);
  }
  for (let epoch = start; epoch < o.epochs; epoch++) {
    if (o.lr) model.optimizer.lr = o.lr(epoch);
    const carry = epoch === start ? o.carry : undefined;
    let samples = 0, waited = 0, paused = 0;
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
      const p = o.onStep?.(epoch, (carry?.samples ?? 0) + samples, runtime.now() - t0 - paused, waited);
      if (p) {
        const p0 = runtime.now();
        await p;
        paused += runtime.now() - p0;
      }
    }
    const mine = await model.takeTrainMetrics(); // waits for the GPU
    const seconds = (runtime.now() - t0 - paused) / 1000;
    const train = carried(carry, { ...mine, samples, seconds, waitedSeconds: waited / 1000 });
    const e0 = runtime.now();
    const test = o.test ? await model.evaluate(o.test()) : { loss: NaN, accuracy: NaN };
    const report: EpochReport = {
      epoch: epoch + 1,
      seconds: train.seconds,
      imagesPerSec: train.samples / train.seconds,
      loss: train.loss,
      trainAccuracy: train.accuracy,
      testAccuracy: test.accuracy,
      testLoss: test.loss,
      waitShare: train.seconds > 0 ? train.waitedSeconds / train.seconds : 0,
      evalSeconds: (runtime.now() - e0) / 1000,
      samples: train.samples,
      stepLoss: train.stepLoss,
    };
    reports.push(report);
    await o.onEpoch?.(report);
  }
  return reports;
}
