/**
 * The layers of a Sequential model, as plain specs (they are saved in weight files), and how
 * each one plans its dispatches for a batch: forward in training mode, forward in eval mode,
 * backward. Dense and conv layers fuse their bias and ReLU into one kernel; their backward
 * starts with relu_bwd on the layer's own output.
 */
import { CassetteError } from "../errors.ts";
import type { Dispatch } from "./program.ts";
import type { InitKind } from "./init.ts";
import { createTensor, Tensor } from "./tensor.ts";
import { gemm } from "./ops/gemm.ts";
import { conv2dFwd } from "./ops/conv2d_fwd.ts";
import { conv2dBwdData } from "./ops/conv2d_bwd_data.ts";
import { conv2dBwdFilter, filterSplits } from "./ops/conv2d_bwd_filter.ts";
import { sumAxes } from "./ops/sum_axes.ts";
import { relu } from "./ops/relu.ts";
import { reluBwd } from "./ops/relu_bwd.ts";
import { maxpoolFwd } from "./ops/maxpool_fwd.ts";
import { maxpoolBwd } from "./ops/maxpool_bwd.ts";
import { avgpoolFwd } from "./ops/avgpool_fwd.ts";
import { avgpoolBwd } from "./ops/avgpool_bwd.ts";
import { batchnormStats } from "./ops/batchnorm_stats.ts";
import { batchnormApply } from "./ops/batchnorm_apply.ts";
import { batchnormBwdReduce } from "./ops/batchnorm_bwd_reduce.ts";
import { batchnormBwdData } from "./ops/batchnorm_bwd_data.ts";

/** One layer of a sequential model as a plain value; the helpers `dense`, `conv2d`, `maxPool`, `globalAvgPool`, `batchNorm` and `reluLayer` make them. */
export type LayerSpec =
  | { kind: "dense"; units: number; relu?: boolean }
  | { kind: "conv2d"; filters: number; kernel: number; padding?: number; relu?: boolean }
  | { kind: "maxpool"; size: number }
  | { kind: "avgpool" }
  | { kind: "batchnorm"; relu?: boolean; momentum?: number; eps?: number }
  | { kind: "relu" };

/** A sequential model as a plain value: what MODELS names and what weight files carry. */
export interface ModelSpec {
  /** Per-sample input shape, [C, H, W] for images. */
  input: number[];
  /** Layers in order; the last one must output `classes` values (the logits). */
  layers: LayerSpec[];
}

/** A dense layer of `units` outputs (inputs of any shape are flattened). */
export const dense = (units: number, o: { relu?: boolean } = {}): LayerSpec => ({ kind: "dense", units, relu: o.relu });
/** A k×k convolution, stride 1, `padding` zeros per side (default (k−1)/2: same size). */
export const conv2d = (filters: number, kernel: number, o: { padding?: number; relu?: boolean } = {}): LayerSpec => ({
  kind: "conv2d", filters, kernel, padding: o.padding, relu: o.relu,
});
/** Non-overlapping max pooling (stride = size). */
export const maxPool = (size = 2): LayerSpec => ({ kind: "maxpool", size });
/** Global average pooling: [C, H, W] → [C]. */
export const globalAvgPool = (): LayerSpec => ({ kind: "avgpool" });
/** Batch norm over channels (axis 1), torch's defaults: momentum 0.1, eps 1e-5. */
export const batchNorm = (o: { relu?: boolean; momentum?: number; eps?: number } = {}): LayerSpec => ({ kind: "batchnorm", ...o });
/** A ReLU on its own (dense, conv2d and batchNorm take `relu: true` instead). */
export const reluLayer = (): LayerSpec => ({ kind: "relu" });

export interface ParamSpec {
  name: string;
  shape: number[];
  init: InitKind;
  fanIn: number;
  fanOut: number;
}

/** Per-sample output shape of a layer, and its parameters and non-trained state (batch norm's running stats). */
export function describe(spec: LayerSpec, input: readonly number[], index: number): { output: number[]; params: ParamSpec[]; state: ParamSpec[] } {
  const where = `layer ${index} (${spec.kind})`;
  const bad = (what: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot build ${where} as ${what}`);
  };
  const positive = (name: string, v: number) => (Number.isInteger(v) && v > 0) || bad(`'${name}' must be a positive integer: current value is ${v}`);
  const name = (p: string) => `${index}.${spec.kind}.${p}`;
  switch (spec.kind) {
    case "dense": {
      positive("units", spec.units);
      const fanIn = input.reduce((a, b) => a * b, 1);
      return {
        output: [spec.units],
        params: [
          { name: name("weight"), shape: [fanIn, spec.units], init: spec.relu ? "he" : "glorot", fanIn, fanOut: spec.units },
          { name: name("bias"), shape: [spec.units], init: "zeros", fanIn, fanOut: spec.units },
        ],
        state: [],
      };
    }
    case "conv2d": {
      positive("filters", spec.filters);
      positive("kernel", spec.kernel);
      if (input.length !== 3) bad(`its input must be [C, H, W]: current shape is [${input}]`);
      const [C, H, W] = input, k = spec.kernel, P = spec.padding ?? Math.floor((k - 1) / 2);
      const OH = H + 2 * P - k + 1, OW = W + 2 * P - k + 1;
      if (OH < 1 || OW < 1) bad(`a ${k}×${k} kernel with padding ${P} does not fit its ${H}×${W} input`);
      const fanIn = C * k * k, fanOut = spec.filters * k * k;
      return {
        output: [spec.filters, OH, OW],
        params: [
          { name: name("weight"), shape: [spec.filters, C, k, k], init: spec.relu ? "he" : "glorot", fanIn, fanOut },
          { name: name("bias"), shape: [spec.filters], init: "zeros", fanIn, fanOut },
        ],
        state: [],
      };
    }
    case "maxpool": {
      positive("size", spec.size);
      if (input.length !== 3 || input[1] < spec.size || input[2] < spec.size) bad(`its input must be [C, H, W] with H, W ≥ ${spec.size}: current shape is [${input}]`);
      return { output: [input[0], Math.floor(input[1] / spec.size), Math.floor(input[2] / spec.size)], params: [], state: [] };
    }
    case "avgpool":
      if (input.length !== 3) bad(`its input must be [C, H, W]: current shape is [${input}]`);
      return { output: [input[0]], params: [], state: [] };
    case "batchnorm": {
      if (input.length !== 1 && input.length !== 3) bad(`its input must be [C] or [C, H, W]: current shape is [${input}]`);
      const C = input[0];
      return {
        output: [...input],
        params: [
          { name: name("gamma"), shape: [C], init: "ones", fanIn: C, fanOut: C },
          { name: name("beta"), shape: [C], init: "zeros", fanIn: C, fanOut: C },
        ],
        // [mean | var], starting as torch's: mean 0, var 1.
        state: [{ name: name("running"), shape: [2 * C], init: "running-stats", fanIn: C, fanOut: C }],
      };
    }
    case "relu":
      return { output: [...input], params: [], state: [] };
    default:
      return bad(`its kind '${(spec as { kind: string }).kind}' is unknown: use dense, conv2d, maxpool, avgpool, batchnorm or relu`);
  }
}

/** The layer ends in a ReLU fused into its own kernel (its backward starts with relu_bwd). */
export function fusesRelu(spec: LayerSpec): boolean {
  return (spec.kind === "dense" || spec.kind === "conv2d" || spec.kind === "batchnorm") && !!spec.relu;
}

/** What one layer contributes to a batch's programs. */
export interface LayerPlan {
  y: Tensor;
  train: Dispatch[];
  eval: Dispatch[];
  /**
   * Backward from dy; dx is null for the first layer (no input gradient needed). `dyGated`:
   * the next layer already applied this layer's fused ReLU backward (see `gatesInputRelu`).
   */
  backward(dy: Tensor, dx: Tensor | null, dyGated?: boolean): Dispatch[];
  /**
   * This layer's dx is already zero wherever its input (a fused ReLU's output) is ≤ 0, so the
   * previous layer skips its relu_bwd pass (max pooling does it while routing gradients).
   */
  gatesInputRelu?: boolean;
  /** Buffers this plan made (freed with the plan). */
  owned: Tensor[];
}

export interface PlanContext {
  device: GPUDevice;
  batch: number;
  /** The input [B, …per-sample shape]. */
  x: Tensor;
  output: number[];
  params: Tensor[];
  grads: Tensor[];
  state: Tensor[];
  /** The input is the output of a ReLU fused into the previous layer. */
  inputRelu?: boolean;
}

/** A layer's dispatches for a batch: its output and the buffers every kind makes (LayerKit), then the kind's own plan. */
export function planLayer(spec: LayerSpec, ctx: PlanContext): LayerPlan {
  const kit = layerKit(spec, ctx);
  switch (spec.kind) {
    case "dense":
      return planDense(spec, ctx, kit);
    case "conv2d":
      return planConv2d(spec, ctx, kit);
    case "maxpool":
      return planMaxpool(spec, ctx, kit);
    case "avgpool": {
      const fwd = [avgpoolFwd(ctx.x, kit.y)];
      return { y: kit.y, owned: kit.owned, train: fwd, eval: fwd, backward: (dy, dx) => (dx ? [avgpoolBwd(dy, dx)] : []) };
    }
    case "relu": {
      const fwd = [relu(ctx.x, kit.y)];
      return { y: kit.y, owned: kit.owned, train: fwd, eval: fwd, backward: (dy, dx) => (dx ? [reluBwd(kit.y, dy, dx)] : []) };
    }
    case "batchnorm":
      return planBatchnorm(spec, ctx, kit);
  }
}

/** What every kind's plan uses: its output `y`, the buffers it made (freed with the plan), and a fused ReLU's backward. */
interface LayerKit {
  y: Tensor;
  owned: Tensor[];
  /** A buffer of this plan, labelled `${kind}/${label}`. */
  make(shape: number[], label: string): Tensor;
  /** dy before a fused ReLU → dy of the pre-activation (nothing to do unless `fused` and not already `gated`). */
  throughRelu(fused: boolean | undefined, dy: Tensor, gated?: boolean): [Dispatch[], Tensor];
}

function layerKit(spec: LayerSpec, ctx: PlanContext): LayerKit {
  const owned: Tensor[] = [];
  const make = (shape: number[], label: string) => {
    const t = createTensor(ctx.device, shape, `${spec.kind}/${label}`);
    owned.push(t);
    return t;
  };
  const y = make([ctx.batch, ...ctx.output], "y");
  let scratch: Tensor | undefined;
  const throughRelu = (fused: boolean | undefined, dy: Tensor, gated = false): [Dispatch[], Tensor] => {
    if (!fused || gated) return [[], dy];
    const g = scratch ??= make(y.shape as number[], "dpre");
    return [[reluBwd(y, dy, g)], g];
  };
  return { y, owned, make, throughRelu };
}

function planDense(spec: Extract<LayerSpec, { kind: "dense" }>, ctx: PlanContext, { y, owned, throughRelu }: LayerKit): LayerPlan {
  const { batch: B, x } = ctx;
  const [W, b] = ctx.params, [dW, db] = ctx.grads;
  const x2 = x.reshape([B, x.size / B]);
  const fwd = [gemm(x2, W, y, { bias: b, relu: spec.relu })];
  return {
    y, owned, train: fwd, eval: fwd,
    backward(dy, dx, gated) {
      const [pre, g] = throughRelu(spec.relu, dy, gated);
      const out = [...pre, gemm(x2, g, dW, { transA: true }), sumAxes(g.reshape([B, spec.units, 1]), db)];
      if (dx) out.push(gemm(g, W, dx.reshape([B, x2.shape[1]]), { transB: true }));
      return out;
    },
  };
}

function planConv2d(spec: Extract<LayerSpec, { kind: "conv2d" }>, ctx: PlanContext, { y, owned, make, throughRelu }: LayerKit): LayerPlan {
  const { batch: B, x } = ctx;
  const [W, b] = ctx.params, [dW, db] = ctx.grads;
  const padding = spec.padding ?? Math.floor((spec.kernel - 1) / 2);
  const fwd = [conv2dFwd(x, W, y, { padding, bias: b, relu: spec.relu })];
  const splits = filterSplits(B, W.shape);
  const part = splits > 1 ? make([splits, W.size], "dw-splits") : undefined;
  return {
    y, owned, train: fwd, eval: fwd,
    backward(dy, dx, gated) {
      const [pre, g] = throughRelu(spec.relu, dy, gated);
      const out = [...pre, ...conv2dBwdFilter(g, x, dW, { padding, splits, scratch: part })];
      out.push(sumAxes(g.reshape([B, spec.filters, y.size / (B * spec.filters)]), db));
      if (dx) out.push(conv2dBwdData(g, W, dx, { padding }));
      return out;
    },
  };
}

function planMaxpool(spec: Extract<LayerSpec, { kind: "maxpool" }>, ctx: PlanContext, { y, owned, make }: LayerKit): LayerPlan {
  const x = ctx.x;
  const arg = make(y.shape as number[], "arg");
  const fwd = [maxpoolFwd(x, y, arg, spec.size)];
  const gate = ctx.inputRelu ? x : undefined;
  return {
    y, owned, train: fwd, eval: fwd, gatesInputRelu: !!gate,
    backward: (dy, dx) => (dx ? [maxpoolBwd(dy, arg, dx, spec.size, gate)] : []),
  };
}

function planBatchnorm(spec: Extract<LayerSpec, { kind: "batchnorm" }>, ctx: PlanContext, { y, owned, make, throughRelu }: LayerKit): LayerPlan {
  const x = ctx.x;
  const [gamma, beta] = ctx.params, [dgamma, dbeta] = ctx.grads, [running] = ctx.state;
  const eps = spec.eps ?? 1e-5;
  const stats = make([running.size], "stats");
  return {
    y, owned,
    train: [batchnormStats(x, stats, running, spec.momentum ?? 0.1), batchnormApply(x, stats, gamma, beta, y, { eps, relu: spec.relu })],
    eval: [batchnormApply(x, running, gamma, beta, y, { eps, relu: spec.relu })],
    backward(dy, dx, gated) {
      const [pre, g] = throughRelu(spec.relu, dy, gated);
      const out = [...pre, batchnormBwdReduce(x, g, stats, dgamma, dbeta, { eps })];
      if (dx) out.push(batchnormBwdData(x, g, stats, gamma, dgamma, dbeta, dx, { eps }));
      return out;
    },
  };
}

/** Reads a Tensor as the layer input of another per-sample shape (flatten is free). */
export function asShape(t: Tensor, shape: number[]): Tensor {
  return t.shape.join() === shape.join() ? t : t.reshape(shape);
}
