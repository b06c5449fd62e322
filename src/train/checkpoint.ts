/**
 * A training run's checkpoint: one file, `DIR/checkpoint.cstw`, in the weights container
 * (weights.ts) with format "cassette-checkpoint":
 *
 *   header: the model spec; the tensors (the model's parameters and state, then the optimizer's
 *           moments or velocity); the optimizer (kind, step, learning rate); the run (its
 *           options, the epoch in progress, the steps taken, the Loader's state, the epochs
 *           finished and what the epoch in progress trained so far)
 *   body:   every tensor's f32 values
 *
 * One file renamed over the last (write-then-rename) is what makes a checkpoint atomic: a
 * run killed at any instant leaves the previous checkpoint or the new one, never a mix of a
 * new model and an old loader state. `DIR/weights.cstw` beside it holds the model's weights
 * alone (what `model.load` and `cassette predict` take), written after the checkpoint.
 *
 * No generator state is stored beyond the seed: every random choice in training is a pure
 * function of (seed, epoch, sample): the plan (plan/epoch.ts), the GPU preprocessor's crops
 * and flips (src/gpu/pack.ts), the initial weights (init.ts).
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import type { LoaderState } from "../loader.ts";
import type { EpochCarry, EpochReport } from "./fit.ts";
import { type Sequential, writeAtomically } from "./model.ts";
import type { OptimizerSpec } from "./optim.ts";
import { decodeWeights, encodeWeights, type WeightHeader } from "./weights.ts";

export const CHECKPOINT_FILE = "checkpoint.cstw";
export const WEIGHTS_FILE = "weights.cstw";

/** What a run keeps beside the tensors. */
export interface RunState {
  /** The run's options as given (train.ts: its flags), so that the folder alone resumes it. */
  options: Record<string, unknown>;
  /** The epoch in progress (0-based): the one `loader` continues. */
  epoch: number;
  /** Training steps taken in all. */
  step: number;
  /** The Loader's state: where the epoch in progress stands. */
  loader: LoaderState;
  /** Whole epochs before `epoch`. */
  reports: EpochReport[];
  /** What `epoch` trained so far (none at an epoch's end). */
  partial?: EpochCarry;
  /** The run's seed: every random choice of training follows from it. */
  seed: number;
  /** When it was written (ISO 8601). */
  time: string;
}

/** The header of a checkpoint file: the weights' header, the optimizer's state and the run's. */
export interface CheckpointHeader extends WeightHeader {
  /** Tells a checkpoint from a weights file. */
  format: "cassette-checkpoint";
  /** The optimizer's spec, step and learning rate, and how many tensors it keeps. */
  optimizer: { spec: OptimizerSpec; step: number; lr: number; tensors: number };
  /** What the run keeps beside the tensors. */
  run: RunState;
}

/** A checkpoint as `readCheckpoint` reads it back: the run's state, the optimizer's and the model's tensors. */
export interface Checkpoint {
  /** The file it was read from. */
  path: string;
  /** What the run keeps beside the tensors. */
  run: RunState;
  /** The optimizer's spec, step and learning rate, and how many tensors it keeps. */
  optimizer: CheckpointHeader["optimizer"];
  /** The model's tensors (weights.ts header and values). */
  weights: { header: Pick<WeightHeader, "model" | "tensors">; values: Float32Array<ArrayBuffer>[] };
  /** The optimizer's tensors (Adam's moments, or SGD's velocity), in order. */
  optimizerState: Float32Array<ArrayBuffer>[];
}

/** Writes the model, its optimizer and `run` into `dir` (made if absent), atomically. */
export async function saveCheckpoint(dir: string, model: Sequential, run: RunState): Promise<void> {
  const w = await model.weights();
  const opt = await model.optimizer.readState();
  const header: CheckpointHeader = {
    format: "cassette-checkpoint",
    version: 1,
    model: w.header.model,
    tensors: [...w.header.tensors, ...model.optimizer.stateNames.map((name, i) => ({ name, shape: [opt.tensors[i].length], dtype: "f32" as const }))],
    optimizer: { spec: model.optimizer.spec, step: opt.step, lr: opt.lr, tensors: opt.tensors.length },
    run,
  };
  await mkdir(dir, { recursive: true });
  await writeAtomically(join(dir, CHECKPOINT_FILE), encodeWeights(header, [...w.values, ...opt.tensors]));
  await writeAtomically(join(dir, WEIGHTS_FILE), encodeWeights(w.header, w.values));
}

/** Reads `dir`'s checkpoint; a folder without one, or a file that is not one, is named. */
export async function readCheckpoint(dir: string): Promise<Checkpoint> {
  const path = join(dir, CHECKPOINT_FILE);
  let bytes: Uint8Array;
  try {
    bytes = await runtime.readFile(path);
  } catch (e) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume from ${dir} as it holds no checkpoint (${CHECKPOINT_FILE}): ${(e as Error).message}`, { cause: e });
  }
  const { header, values } = decodeWeights(bytes, path, "cassette-checkpoint");
  const h = header as CheckpointHeader;
  const bad = (why: string): never => {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot resume from ${path} as ${why}`);
  };
  if (typeof h.run !== "object" || h.run === null || typeof h.optimizer !== "object" || h.optimizer === null) bad("its header has no run or optimizer state");
  const k = h.tensors.length - h.optimizer.tensors;
  if (!(k > 0)) bad(`it lists ${h.tensors.length} tensors, ${h.optimizer.tensors} of them the optimizer's`);
  return {
    path,
    run: h.run,
    optimizer: h.optimizer,
    weights: { header: { model: h.model, tensors: h.tensors.slice(0, k) }, values: values.slice(0, k) },
    optimizerState: values.slice(k),
  };
}

/** Puts a checkpoint's weights and optimizer state into `model` (built from the same spec and optimizer kind). */
export async function restoreCheckpoint(model: Sequential, c: Checkpoint): Promise<void> {
  if (c.optimizer.spec.kind !== model.optimizer.spec.kind) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume from ${c.path} as its optimizer is ${c.optimizer.spec.kind}: this model's is ${model.optimizer.spec.kind}`);
  }
  await model.setWeights(c.weights.header, c.weights.values, c.path);
  model.optimizer.writeState({ step: c.optimizer.step, lr: c.optimizer.lr, tensors: c.optimizerState }, c.path);
}
