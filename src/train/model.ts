/**
 * A small sequential model trained on the GPU: layers (layers.ts) with forward and backward
 * on GPU buffers, parameters in one buffer, an optimizer step in one dispatch, softmax
 * cross-entropy as the loss, evaluation, and save/load of weights.
 *
 * For each batch size it sees, the model plans every dispatch once (activation tensors,
 * uniforms, bind groups) and records a step as one compute pass; steps are submitted without
 * waiting, at most two in flight. Loss and accuracy are summed on the GPU and read back only
 * when asked (once per epoch); after each step a copy of the sums goes to a history buffer, so
 * that the same read-back gives every step's loss without a stall per step.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { readBuffer } from "../gpu/buffers.ts";
import { initValues } from "./init.ts";
import { describe, fusesRelu, planLayer } from "./layers.ts";
import type { LayerPlan, ModelSpec, ParamSpec } from "./layers.ts";
import { Optimizer } from "./optim.ts";
import type { OptimizerSpec } from "./optim.ts";
import { Program } from "./program.ts";
import type { Dispatch } from "./program.ts";
import { packLabels, softmaxXent } from "./ops/softmax_xent.ts";
import { createTensor, Tensor, TensorArena } from "./tensor.ts";
import { decodeWeights, encodeWeights, type WeightHeader } from "./weights.ts";
import { modelSpec } from "./models.ts";

// The spec lives with the layers (models.ts builds on it without importing this file).
export type { ModelSpec } from "./layers.ts";

/**
 * One batch for a step or an evaluation: `n` samples of f32 NCHW values in `x` (from byte
 * `xOffset`, needs COPY_SRC usage) and their class labels. The model copies both before the
 * step's kernels run, so the source may rewrite `x` once the following step has been submitted.
 */
export interface TrainBatch {
  /** The batch's f32 NCHW values (COPY_SRC usage). */
  x: GPUBuffer;
  /** Byte offset of the batch in `x` (default 0). */
  xOffset?: number;
  /** u32/i32 labels: on the CPU, or in a GPUBuffer (COPY_SRC) from byte `labelsOffset`. */
  labels: GPUBuffer | Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer>;
  /** Byte offset of the labels in `labels`, when it is a GPUBuffer (default 0). */
  labelsOffset?: number;
  /** Samples in the batch. */
  n: number;
  /**
   * A mixed batch (MixUp or CutMix, src/decode/mix.ts): each row's target is `lambda` of its
   * label and 1 − `lambda` of the row before's (the first row's: the last's). Labels on the CPU only.
   */
  mix?: { lambda: number };
}

/** Loss (mean per sample) and accuracy over the samples summed since the last reset. */
export interface Metrics {
  /** Mean loss per sample. */
  loss: number;
  /** Share of samples whose most probable class is their label, 0…1. */
  accuracy: number;
  /** Samples counted. */
  samples: number;
}

/** Training metrics with each step's own loss (its forward pass, before its update), in step order. */
export interface TrainMetrics extends Metrics {
  /** Each step's loss (mean over its batch), in step order. */
  stepLoss: number[];
}

/** How `createModel` sets a model up: the initialization seed and the optimizer. */
export interface CreateModelOptions {
  /** Seed of the weight initialization (default 0). */
  seed?: number;
  /** Default: Adam, lr 1e-3 (TF.js's and Keras's defaults). */
  optimizer?: OptimizerSpec;
}

interface BatchPlan {
  batch: number;
  input: Tensor;
  labels: Tensor;
  layers: LayerPlan[];
  /** The training step's dispatches, in order (what `train` runs). */
  steps: Dispatch[];
  train: Program;
  evalProgram?: Promise<Program>;
  evalDispatches: Dispatch[];
  owned: Tensor[];
}

interface Slot {
  spec: ParamSpec;
  value: Tensor;
  grad?: Tensor;
}

const MAX_IN_FLIGHT = 2;
/** Steps per history buffer: 12 bytes (the three sums) a step. */
const HISTORY_CHUNK = 1024;

/** A sequential model trained on the GPU with WGSL kernels: steps, evaluation, prediction, and weights saved to and loaded from files. Made by `createModel`. */
export class Sequential {
  /** The device the model runs on. */
  readonly device: GPUDevice;
  /** The model's layers and input shape. */
  readonly spec: ModelSpec;
  /** The optimizer that updates the parameters at each step. */
  readonly optimizer: Optimizer;
  /** Per-sample output shape of each layer. */
  readonly shapes: number[][];
  /** Number of classes: the last layer's outputs. */
  readonly classes: number;
  /**
   * The input normalization the model was trained with, per channel, on pixels scaled to 0…1
   * (train.ts sets it): saved in the weights' header and read back by `load`, so that predict
   * normalizes as training did. Undefined: not recorded (files from before it was).
   */
  normalize?: Normalization;
  readonly #params: Slot[][];
  readonly #state: Slot[][];
  readonly #buffers: GPUBuffer[];
  readonly #trainStats: Tensor;
  readonly #evalStats: Tensor;
  readonly #plans = new Map<number, Promise<BatchPlan>>();
  #inFlight: Promise<unknown>[] = [];
  /** The training sums after each step since the last take, HISTORY_CHUNK steps per buffer. */
  readonly #history: GPUBuffer[] = [];
  #steps = 0;

  private constructor(device: GPUDevice, spec: ModelSpec, o: CreateModelOptions) {
    this.device = device;
    this.spec = spec;
    if (!Array.isArray(spec.input) || spec.input.length === 0 || spec.input.some((d) => !Number.isInteger(d) || d < 1)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot build a model as 'input' must be a per-sample shape of positive integers: current value is ${JSON.stringify(spec.input)}`);
    }
    if (!spec.layers?.length) throw new CassetteError("ERR_INVALID_OPTION", "Cannot build a model as 'layers' is empty");
    // Shapes, parameter and state specs, layer by layer.
    const paramSpecs: ParamSpec[][] = [], stateSpecs: ParamSpec[][] = [];
    this.shapes = [];
    let shape = spec.input;
    spec.layers.forEach((l, i) => {
      const d = describe(l, shape, i);
      this.shapes.push(d.output);
      paramSpecs.push(d.params);
      stateSpecs.push(d.state);
      shape = d.output;
    });
    if (shape.length !== 1) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot build a model as its last layer must output class scores [classes]: current shape is [${shape}]`);
    }
    this.classes = shape[0];
    // Parameters and their gradients share one layout in two buffers; state has its own.
    const arena = new TensorArena(device), stateArena = new TensorArena(device);
    const pIdx = paramSpecs.map((ps) => ps.map((p) => arena.reserve(p.shape)));
    const sIdx = stateSpecs.map((ss) => ss.map((s) => stateArena.reserve(s.shape)));
    const P = arena.allocate(device, "model/params"), G = arena.allocate(device, "model/grads"), S = stateArena.allocate(device, "model/state");
    this.#buffers = [P.buffer, G.buffer, S.buffer];
    this.#params = paramSpecs.map((ps, i) => ps.map((p, j) => ({ spec: p, value: P.tensors[pIdx[i][j]], grad: G.tensors[pIdx[i][j]] })));
    this.#state = stateSpecs.map((ss, i) => ss.map((s, j) => ({ spec: s, value: S.tensors[sIdx[i][j]] })));
    const seed = o.seed ?? 0;
    let stream = 0;
    for (const slot of [...this.#params.flat(), ...this.#state.flat()]) {
      const v = initValues(slot.spec.init, slot.value.size, slot.spec.fanIn, slot.spec.fanOut, seed, stream++);
      device.queue.writeBuffer(slot.value.buffer, slot.value.offset, v);
    }
    const whole = (b: GPUBuffer) => new Tensor(b, [b.size / 4]);
    this.optimizer = new Optimizer(device, o.optimizer ?? { kind: "adam", lr: 1e-3 }, whole(P.buffer), whole(G.buffer));
    this.#trainStats = createTensor(device, [3], "model/train-stats");
    this.#evalStats = createTensor(device, [3], "model/eval-stats");
  }

  /**
   * Builds a model from its spec: weights initialized from `seed` (He for ReLU layers, Glorot
   * for the output layer, zeros for biases).
   */
  static create(device: GPUDevice, spec: ModelSpec, o: CreateModelOptions = {}): Sequential {
    return new Sequential(device, spec, o);
  }

  /** Number of trained values. */
  get parameterCount(): number {
    return this.#params.flat().reduce((a, s) => a + s.value.size, 0);
  }

  /** Names and shapes of every parameter, in order. */
  get parameters(): { name: string; shape: number[] }[] {
    return this.#params.flat().map((s) => ({ name: s.spec.name, shape: s.spec.shape }));
  }

  #plan(batch: number): Promise<BatchPlan> {
    if (!Number.isInteger(batch) || batch < 1) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot run a batch of ${batch} samples: 'n' must be a positive integer`);
    }
    let plan = this.#plans.get(batch);
    if (!plan) {
      plan = this.#build(batch);
      this.#plans.set(batch, plan);
      plan.catch(() => this.#plans.delete(batch));
    }
    return plan;
  }

  async #build(B: number): Promise<BatchPlan> {
    const device = this.device;
    const input = createTensor(device, [B, ...this.spec.input], "model/input");
    const labels = createTensor(device, [2 * B + 1], "model/labels", "u32"); // packLabels' layout
    const owned = [input, labels];
    const layers: LayerPlan[] = [];
    let x = input;
    this.spec.layers.forEach((spec, i) => {
      const plan = planLayer(spec, {
        device, batch: B, x, output: this.shapes[i],
        params: this.#params[i].map((s) => s.value),
        grads: this.#params[i].map((s) => s.grad!),
        state: this.#state[i].map((s) => s.value),
        inputRelu: i > 0 && fusesRelu(this.spec.layers[i - 1]),
      });
      layers.push(plan);
      owned.push(...plan.owned);
      x = plan.y;
    });
    const logits = x;
    const dlogits = createTensor(device, logits.shape, "model/dlogits");
    owned.push(dlogits);
    // Backward, last layer first; each layer's dx is the previous layer's dy.
    const backward: Dispatch[] = [];
    let dy = dlogits;
    for (let i = layers.length - 1; i >= 0; i--) {
      const dx = i > 0 ? createTensor(device, layers[i - 1].y.shape, `model/d${i - 1}`) : null;
      if (dx) owned.push(dx);
      backward.push(...layers[i].backward(dy, dx, !!layers[i + 1]?.gatesInputRelu));
      if (dx) dy = dx;
    }
    const steps = [
      ...layers.flatMap((l) => l.train),
      softmaxXent(logits, labels, dlogits, this.#trainStats),
      ...backward,
      this.optimizer.dispatch,
    ];
    const train = await Program.build(device, steps, `train-${B}`);
    const evalDispatches = [...layers.flatMap((l) => l.eval), softmaxXent(logits, labels, dlogits, this.#evalStats)];
    return { batch: B, input, labels, layers, steps, train, evalDispatches, owned };
  }

  #load(encoder: GPUCommandEncoder, plan: BatchPlan, b: TrainBatch): void {
    const bytes = plan.input.bytes;
    const xOffset = b.xOffset ?? 0;
    if (b.x.size < xOffset + bytes) {
      throw new CassetteError(
        "ERR_INVALID_OPTION",
        `Cannot take a batch of ${b.n} samples of [${this.spec.input}] as 'x' holds ${b.x.size - xOffset} bytes from byte ${xOffset}: it needs ${bytes}`,
      );
    }
    encoder.copyBufferToBuffer(b.x, xOffset, plan.input.buffer, 0, bytes);
    if (b.labels instanceof Int32Array || b.labels instanceof Uint32Array) {
      if (b.labels.length < b.n) throw new CassetteError("ERR_INVALID_OPTION", `Cannot take a batch of ${b.n} samples as 'labels' has ${b.labels.length}`);
      this.device.queue.writeBuffer(plan.labels.buffer, 0, packLabels(b.labels, b.n, b.mix?.lambda));
    } else {
      if (b.mix) throw new CassetteError("ERR_UNSUPPORTED", "Cannot take a mixed batch whose labels are on the GPU: give them as an Int32Array");
      // The labels twice (each row its own other label), then λ = 1.
      encoder.copyBufferToBuffer(b.labels, b.labelsOffset ?? 0, plan.labels.buffer, 0, b.n * 4);
      encoder.copyBufferToBuffer(b.labels, b.labelsOffset ?? 0, plan.labels.buffer, b.n * 4, b.n * 4);
      this.device.queue.writeBuffer(plan.labels.buffer, b.n * 8, Float32Array.of(1));
    }
  }

  async #submit(encoder: GPUCommandEncoder): Promise<void> {
    this.device.queue.submit([encoder.finish()]);
    this.#inFlight.push(this.device.queue.onSubmittedWorkDone());
    // Bound how far the CPU runs ahead of the GPU (and how long a batch's buffers stay in use).
    while (this.#inFlight.length > MAX_IN_FLIGHT) await this.#inFlight.shift();
  }

  /**
   * Compiles the training and evaluation programs for these batch sizes now, so that the first
   * epoch's time (and images/s) measures training, not shader compilation.
   */
  async prepare(...batchSizes: number[]): Promise<void> {
    await Promise.all(batchSizes.map(async (n) => {
      const plan = await this.#plan(n);
      plan.evalProgram ??= Program.build(this.device, plan.evalDispatches, `eval-${plan.batch}`);
      await plan.evalProgram;
    }));
  }

  /** @internal A training step's dispatches for `batch` samples, in order (bench/train/step_profile.ts times them one by one). */
  async _stepDispatches(batch: number): Promise<readonly Dispatch[]> {
    return (await this.#plan(batch)).steps;
  }

  /** Waits until every submitted step has run. */
  async flush(): Promise<void> {
    await Promise.all(this.#inFlight.splice(0));
  }

  /** One training step: forward, loss, backward and optimizer update on this batch. */
  async trainStep(b: TrainBatch): Promise<void> {
    const plan = await this.#plan(b.n);
    const encoder = this.device.createCommandEncoder();
    // writeBuffer calls (labels, optimizer hyper-parameters) land before this submit in queue order.
    this.#load(encoder, plan, b);
    this.optimizer.beforeStep();
    plan.train.encode(encoder);
    const chunk = Math.floor(this.#steps / HISTORY_CHUNK);
    this.#history[chunk] ??= this.device.createBuffer({
      label: "model/step-history", size: HISTORY_CHUNK * 12, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
    encoder.copyBufferToBuffer(this.#trainStats.buffer, 0, this.#history[chunk], (this.#steps % HISTORY_CHUNK) * 12, 12);
    this.#steps++;
    await this.#submit(encoder);
  }

  /** Forward in eval mode (batch norm uses running statistics), adding to the eval metrics. */
  async evalStep(b: TrainBatch): Promise<void> {
    const plan = await this.#plan(b.n);
    plan.evalProgram ??= Program.build(this.device, plan.evalDispatches, `eval-${plan.batch}`);
    const program = await plan.evalProgram;
    const encoder = this.device.createCommandEncoder();
    this.#load(encoder, plan, b);
    program.encode(encoder);
    await this.#submit(encoder);
  }

  /** Loss and accuracy over an iterable of batches, in eval mode. */
  async evaluate(batches: AsyncIterable<TrainBatch> | Iterable<TrainBatch>): Promise<Metrics> {
    this.#clear(this.#evalStats);
    for await (const b of batches) await this.evalStep(b);
    return this.#metrics(this.#evalStats);
  }

  /**
   * Training loss and accuracy so far, without resetting the sums (for a progress bar: it waits
   * for the GPU, so call it every few steps, not every step).
   */
  trainMetrics(): Promise<Metrics> {
    return this.#metrics(this.#trainStats);
  }

  /**
   * Training loss and accuracy summed since the last call (the forward pass of each step, before
   * its update), and each of those steps' own loss.
   */
  async takeTrainMetrics(): Promise<TrainMetrics> {
    const m = await this.peekTrainMetrics();
    this.#steps = 0;
    this.#clear(this.#trainStats);
    return m;
  }

  /** What `takeTrainMetrics` would give, without starting the sums again (for a checkpoint mid-epoch). */
  async peekTrainMetrics(): Promise<TrainMetrics> {
    const m = await this.#metrics(this.#trainStats);
    // A step's loss is the difference of consecutive snapshots of the running sums.
    const stepLoss: number[] = [];
    let loss0 = 0, rows0 = 0;
    for (let first = 0; first < this.#steps; first += HISTORY_CHUNK) {
      const n = Math.min(HISTORY_CHUNK, this.#steps - first);
      const v = new Float32Array(await readBuffer(this.device, this.#history[first / HISTORY_CHUNK], n * 12));
      for (let k = 0; k < n; k++) {
        const loss = v[3 * k], rows = v[3 * k + 2];
        stepLoss.push(rows > rows0 ? (loss - loss0) / (rows - rows0) : NaN);
        loss0 = loss, rows0 = rows;
      }
    }
    return { ...m, stepLoss };
  }

  #clear(t: Tensor): void {
    const e = this.device.createCommandEncoder();
    e.clearBuffer(t.buffer);
    this.device.queue.submit([e.finish()]);
  }

  async #metrics(t: Tensor): Promise<Metrics> {
    await this.flush();
    const [loss, hits, rows] = new Float32Array(await readBuffer(this.device, t.buffer, 12));
    return { loss: rows ? loss / rows : NaN, accuracy: rows ? hits / rows : NaN, samples: rows };
  }

  /** Every parameter's values (CPU copies), in `parameters` order. */
  async readParameters(): Promise<Float32Array[]> {
    return this.#read(this.#params.flat().map((s) => s.value));
  }

  /** Every parameter's gradient from the last training step. */
  async readGradients(): Promise<Float32Array[]> {
    return this.#read(this.#params.flat().map((s) => s.grad!));
  }

  async #read(ts: Tensor[]): Promise<Float32Array[]> {
    await this.flush();
    const cache = new Map<GPUBuffer, Float32Array>();
    for (const t of ts) if (!cache.has(t.buffer)) cache.set(t.buffer, new Float32Array(await readBuffer(this.device, t.buffer)));
    return ts.map((t) => cache.get(t.buffer)!.slice(t.offset / 4, t.offset / 4 + t.size));
  }

  /** The weights (parameters, then state such as batch-norm statistics) with their header (weights.ts). */
  async weights(): Promise<{ header: WeightHeader; values: Float32Array[] }> {
    const slots = [...this.#params.flat(), ...this.#state.flat()];
    const values = await this.#read(slots.map((s) => s.value));
    return {
      header: {
        format: "cassette-weights", version: 1, model: this.spec, tensors: slots.map((s) => ({ name: s.spec.name, shape: s.spec.shape, dtype: "f32" })),
        ...(this.normalize ? { normalize: this.normalize } : {}),
      },
      values,
    };
  }

  /** Writes the weights (parameters and batch-norm statistics) to a file (format: weights.ts). */
  async save(path: string | URL): Promise<void> {
    const { header, values } = await this.weights();
    await writeAtomically(path, encodeWeights(header, values));
  }

  /** Reads weights saved by `save` from a model of the same layers; optimizer state starts afresh. */
  async load(path: string | URL): Promise<void> {
    const { header, values } = decodeWeights(await runtime.readFile(path), String(path));
    await this.setWeights(header, values, String(path));
    if (header.normalize !== undefined) this.normalize = checkNormalization(header.normalize, this.spec.input[0], `weights file ${path}`);
  }

  /**
   * Puts weights into the model: `header` must list this model's tensors (names, shapes, dtype)
   * and describe the same model; the first difference is named.
   */
  async setWeights(header: Pick<WeightHeader, "model" | "tensors">, values: Float32Array[], where: string): Promise<void> {
    const slots = [...this.#params.flat(), ...this.#state.flat()];
    const mismatch = (why: string): never => {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot load weights from ${where} into this model as ${why}`);
    };
    // The tensors first (the message names the one that differs), then the rest of the spec
    // (an activation, say, changes no shape).
    if (header.tensors.length !== slots.length) mismatch(`the file has ${header.tensors.length} tensors: the model has ${slots.length}`);
    header.tensors.forEach((t, i) => {
      const s = slots[i].spec;
      if (t.name !== s.name || t.shape.join() !== s.shape.join()) mismatch(`tensor ${i} is ${t.name} [${t.shape}] in the file: the model has ${s.name} [${s.shape}]`);
      if ((t.dtype ?? "f32") !== "f32") mismatch(`tensor ${t.name} is ${t.dtype} in the file: the model's are f32`);
    });
    const theirs = JSON.stringify(header.model), ours = JSON.stringify(this.spec);
    if (header.model !== undefined && theirs !== ours) mismatch(`the file's model is ${theirs}: this model is ${ours}`);
    await this.flush();
    slots.forEach((s, i) => this.device.queue.writeBuffer(s.value.buffer, s.value.offset, values[i] as Float32Array<ArrayBuffer>));
  }

  /** Frees every buffer of the model. */
  async destroy(): Promise<void> {
    await this.flush();
    for (const p of this.#plans.values()) {
      const plan = await p.catch(() => undefined);
      if (!plan) continue;
      plan.train.destroy();
      (await plan.evalProgram)?.destroy();
      for (const t of plan.owned) t.buffer.destroy();
    }
    this.#plans.clear();
    for (const p of this.#predictPrograms.values()) (await p.catch(() => undefined))?.destroy();
    this.#predictPrograms.clear();
    this.optimizer.destroy();
    for (const b of this.#buffers) b.destroy();
    this.#trainStats.buffer.destroy();
    this.#evalStats.buffer.destroy();
    for (const b of this.#history) b.destroy();
  }

  // --- Prediction (`cassette predict`, src/train/predict.ts) ------------------------------------
  // The eval forward without the loss: the eval program also adds softmax cross-entropy against
  // the batch's labels, which an unlabeled sample has not. The logits are read back once per
  // batch, and the softmax is taken here in f64: the read-back is n × classes values either way,
  // and no kernel is needed for it. The programs hold only uniform buffers (the tensors are the
  // batch plan's); destroy() does not free them yet, the device's end does.

  readonly #predictPrograms = new Map<number, Promise<Program>>();

  /**
   * Each sample's class probabilities (the softmax of its logits) in eval mode (batch norm uses
   * its running statistics): n × classes values, row by row. One submit and one read-back per
   * call; calls may overlap (their submits keep call order), so a caller can prepare the next
   * batch while this one runs. The batch's labels are not read.
   */
  async predictStep(b: TrainBatch): Promise<Float32Array<ArrayBuffer>> {
    const plan = await this.#plan(b.n);
    let program = this.#predictPrograms.get(b.n);
    if (!program) {
      program = Program.build(this.device, plan.layers.flatMap((l) => l.eval), `predict-${b.n}`);
      this.#predictPrograms.set(b.n, program);
      program.catch(() => this.#predictPrograms.delete(b.n));
    }
    const forward = await program;
    const logits = plan.layers[plan.layers.length - 1].y;
    const readback = this.device.createBuffer({ label: "model/predict-readback", size: logits.bytes, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
    try {
      const encoder = this.device.createCommandEncoder();
      this.#load(encoder, plan, b);
      forward.encode(encoder);
      encoder.copyBufferToBuffer(logits.buffer, logits.offset, readback, 0, logits.bytes);
      this.device.queue.submit([encoder.finish()]);
      await readback.mapAsync(GPUMapMode.READ);
      return this.#softmaxRows(new Float32Array(readback.getMappedRange().slice(0)), b.n);
    } finally {
      readback.destroy();
    }
  }

  /** Row-wise softmax of n × classes logits, in f64 (the row's max subtracted first), as f32. */
  #softmaxRows(z: Float32Array, n: number): Float32Array<ArrayBuffer> {
    const c = this.classes, out = new Float32Array(n * c);
    for (let r = 0; r < n; r++) {
      const row = r * c;
      let top = -Infinity;
      for (let k = 0; k < c; k++) if (z[row + k] > top) top = z[row + k];
      let sum = 0;
      for (let k = 0; k < c; k++) sum += Math.exp(z[row + k] - top);
      for (let k = 0; k < c; k++) out[row + k] = Math.exp(z[row + k] - top) / sum;
    }
    return out;
  }
}

/**
 * A model from a spec or a name of MODELS (models.ts: "mlp", "cnn", "cnn-bn").
 *
 * @example
 * ```ts
 * import { requestDevice } from "cassette";
 * import { createModel } from "cassette/train";
 * const device = await requestDevice();
 * const model = createModel(device, "cnn", { seed: 1 });
 * console.log(model.parameterCount); // 20490
 * await model.destroy();
 * device.destroy();
 * ```
 */
export function createModel(device: GPUDevice, spec: ModelSpec | string, o: CreateModelOptions = {}): Sequential {
  return Sequential.create(device, typeof spec === "string" ? modelSpec(spec) : spec, o);
}

/** Written beside the target and renamed over it: a run killed mid-write keeps the last whole file. */
export function writeAtomically(path: string | URL, bytes: Uint8Array): Promise<void> {
  return runtime.replaceFile(path, bytes);
}

/** Per-channel mean and standard deviation of the input, on pixels scaled to 0…1. */
export interface Normalization {
  /** Mean per channel. */
  mean: number[];
  /** Standard deviation per channel. */
  std: number[];
}

/** A normalization as a header carries it: one mean and a positive std per channel (or one for all). */
export function checkNormalization(n: unknown, channels: number, where: string): Normalization {
  const o = n as Partial<Normalization> | null;
  const ok = (xs: unknown, positive: boolean) =>
    Array.isArray(xs) && (xs.length === 1 || xs.length === channels) && xs.every((x) => typeof x === "number" && Number.isFinite(x) && (!positive || x > 0));
  if (!o || typeof o !== "object" || !ok(o.mean, false) || !ok(o.std, true)) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot use the input normalization of ${where} as it must be { mean, std } with 1 or ${channels} numbers each, std > 0: current value is ${JSON.stringify(n)?.slice(0, 200)}`);
  }
  return { mean: o.mean!.slice(), std: o.std!.slice() };
}
