/**
 * Optimizers over a model's parameter buffer: every parameter sits in one TensorArena buffer
 * and every gradient at the same offset in another, so one dispatch updates them all.
 * Weight decay applies to every parameter (biases and batch-norm scales included), as torch's
 * defaults do when no parameter groups are given.
 */
import { CassetteError } from "../errors.ts";
import { readBuffer } from "../gpu/buffers.ts";
import type { Dispatch } from "./program.ts";
import { Tensor, TENSOR_USAGE } from "./tensor.ts";
import { adamw, adamwParams } from "./ops/adamw.ts";
import type { AdamWHyper } from "./ops/adamw.ts";
import { sgd, sgdParams } from "./ops/sgd.ts";

/** The optimizer of a model and its hyper-parameters: AdamW, Adam or SGD (with momentum), learning rate required. */
export type OptimizerSpec =
  | { kind: "adamw"; lr: number; beta1?: number; beta2?: number; eps?: number; weightDecay?: number }
  | { kind: "adam"; lr: number; beta1?: number; beta2?: number; eps?: number }
  | { kind: "sgd"; lr: number; momentum?: number; weightDecay?: number };

/** A model's optimizer on the GPU (`Sequential.optimizer`): its spec, learning rate and step count; the model runs its update with each training step. */
export class Optimizer {
  /** The optimizer's kind and hyper-parameters. */
  readonly spec: OptimizerSpec;
  readonly #device: GPUDevice;
  readonly #uniform: GPUBuffer;
  readonly #state: GPUBuffer[];
  readonly #dispatch: Dispatch;
  readonly #count: number;
  #lr: number;
  /** Steps taken (AdamW's bias correction needs it). */
  step = 0;

  /**
   * Made by the model for its parameter and gradient buffers.
   * @ignore
   */
  constructor(device: GPUDevice, spec: OptimizerSpec, params: Tensor, grads: Tensor) {
    if (!(spec.lr > 0) || !Number.isFinite(spec.lr)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot create the ${spec.kind} optimizer as 'lr' must be a finite number > 0: current value is ${spec.lr}`);
    }
    if (!["adamw", "adam", "sgd"].includes(spec.kind)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot create an optimizer of kind '${spec.kind}': use adamw, adam or sgd`);
    }
    this.spec = spec;
    this.#device = device;
    this.#lr = spec.lr;
    this.#count = params.size;
    const state = (label: string) => device.createBuffer({ label, size: params.bytes, usage: TENSOR_USAGE });
    if (spec.kind === "sgd") {
      this.#uniform = device.createBuffer({ label: "sgd/params", size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      this.#state = [state("sgd/velocity")];
      this.#dispatch = sgd(this.#uniform, params, grads, new Tensor(this.#state[0], params.shape));
    } else {
      this.#uniform = device.createBuffer({ label: "adamw/params", size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      this.#state = [state("adamw/m"), state("adamw/v")];
      this.#dispatch = adamw(this.#uniform, params, grads, new Tensor(this.#state[0], params.shape), new Tensor(this.#state[1], params.shape));
    }
  }

  /** The learning rate of the next steps. */
  get lr(): number {
    return this.#lr;
  }

  /** Changes the learning rate from the next step on (schedules). */
  set lr(v: number) {
    this.#lr = v;
  }

  /**
   * The update dispatch; it reads the uniform that `beforeStep` writes. Internal: for the model.
   * @ignore
   */
  get dispatch(): Dispatch {
    return this.#dispatch;
  }

  /** Writes this step's hyper-parameters (queue order puts them before the step's dispatch). */
  beforeStep(): void {
    this.step++;
    const s = this.spec;
    if (s.kind === "sgd") {
      this.#device.queue.writeBuffer(this.#uniform, 0, sgdParams(this.#count, this.#lr, s.momentum ?? 0.9, s.weightDecay ?? 0));
    } else {
      const h: AdamWHyper = {
        lr: this.#lr,
        beta1: s.beta1 ?? 0.9,
        beta2: s.beta2 ?? 0.999,
        eps: s.eps ?? (s.kind === "adam" ? 1e-7 : 1e-8),
        weightDecay: s.kind === "adamw" ? (s.weightDecay ?? 0.01) : 0,
      };
      this.#device.queue.writeBuffer(this.#uniform, 0, adamwParams(this.#count, h, this.step));
    }
  }

  /** Names of the state tensors (`readState` order): Adam's moments, or SGD's velocity. */
  get stateNames(): string[] {
    return this.spec.kind === "sgd" ? ["optimizer/velocity"] : ["optimizer/m", "optimizer/v"];
  }

  /** The state a resumed run needs to take the next step exactly as this one would: its tensors and the step count. Call after the model's flush. */
  async readState(): Promise<{ step: number; lr: number; tensors: Float32Array<ArrayBuffer>[] }> {
    const tensors = await Promise.all(this.#state.map(async (b) => new Float32Array(await readBuffer(this.#device, b))));
    return { step: this.step, lr: this.#lr, tensors };
  }

  /** Restores what `readState` gave (from a checkpoint). */
  writeState(s: { step: number; lr: number; tensors: Float32Array<ArrayBuffer>[] }, where: string): void {
    if (s.tensors.length !== this.#state.length || s.tensors.some((t, i) => t.byteLength !== this.#state[i].size)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot restore the ${this.spec.kind} optimizer from ${where} as it holds ${s.tensors.length} tensors of ${s.tensors.map((t) => t.length)} values: this one has ${this.#state.length} of ${this.#count}`);
    }
    if (!Number.isInteger(s.step) || s.step < 0) throw new CassetteError("ERR_INVALID_OPTION", `Cannot restore the optimizer from ${where} as its step must be an integer ≥ 0: current value is ${s.step}`);
    s.tensors.forEach((t, i) => this.#device.queue.writeBuffer(this.#state[i], 0, t));
    this.step = s.step;
    this.#lr = s.lr;
  }

  /** Frees the optimizer's GPU buffers (the model's `destroy` does). */
  destroy(): void {
    this.#uniform.destroy();
    for (const b of this.#state) b.destroy();
  }
}
