/**
 * Owner of shaders/train/gemm.wgsl: C = op(A)·op(B) (+ bias) (ReLU), the dense layer's forward
 * (NN), input gradient (NT) and weight gradient (TN). The text is also the f16 GEMM's
 * (gemm_f16.ts) with other element types: see gemmSource.
 */
import code from "../../../shaders/train/gemm.wgsl" with { type: "text" };
import { Kernel } from "../../gpu/kernel.ts";
import type { Dispatch } from "../program.ts";
import { uniforms } from "../program.ts";
import type { DType, Tensor } from "../tensor.ts";
import { expectDType, expectRank, expectShape, invalid, tileSize } from "./_check.ts";

export const gemmKernel = new Kernel({
  name: "train/gemm",
  code,
  bindings: ["uniform", "read-only-storage", "read-only-storage", "read-only-storage", "storage"],
});

const WG = 16, MAX_R = 8;

/**
 * gemm.wgsl with A and B of type `operand` and the sums in `acc`: its two `alias … = f32;`
 * lines rewritten (WGSL's override constants cannot choose a type), and `enable f16;` first
 * when either is f16.
 */
export function gemmSource(operand: "f32" | "f16", acc: "f32" | "f16"): string {
  let text = code;
  for (const [alias, type] of [["Operand", operand], ["Acc", acc]]) {
    const line = `alias ${alias} = f32;`;
    if (!text.includes(line)) throw new Error(`shaders/train/gemm.wgsl lacks the line '${line}' that gemmSource rewrites`);
    text = text.replace(line, `alias ${alias} = ${type};`);
  }
  return operand === "f16" || acc === "f16" ? `enable f16;\n${text}` : text;
}

export interface GemmOptions {
  /** A is stored [K, M] (default: [M, K]). */
  transA?: boolean;
  /** B is stored [N, K] (default: [K, N]). */
  transB?: boolean;
  /** Adds bias[N] to every row. */
  bias?: Tensor;
  /** Applies max(0, ·) after the bias. */
  relu?: boolean;
}

/** Plans C[M,N] = op(A)·op(B) (+ bias) (ReLU). */
export function gemm(a: Tensor, b: Tensor, c: Tensor, o: GemmOptions = {}): Dispatch {
  const g = gemmGeometry("gemm", "f32", a, b, c, o);
  return {
    kernel: gemmKernel,
    bindings: [uniforms([g.M, g.N, g.K]), a, b, o.bias ?? null, c],
    workgroups: g.workgroups,
    constants: g.constants,
  };
}

/**
 * Checks the operands of gemm.wgsl (A and B of `operands` type, C and bias f32) and returns its
 * sizes, grid and override constants.
 */
export function gemmGeometry(op: string, operands: DType, a: Tensor, b: Tensor, c: Tensor, o: GemmOptions): {
  M: number;
  N: number;
  K: number;
  workgroups: [number, number, number];
  constants: Record<string, number>;
} {
  expectRank(op, "a", a, 2);
  expectRank(op, "b", b, 2);
  expectRank(op, "c", c, 2);
  expectDType(op, "a", a, operands);
  expectDType(op, "b", b, operands);
  expectDType(op, "c", c, "f32");
  const [M, K] = o.transA ? [a.shape[1], a.shape[0]] : [a.shape[0], a.shape[1]];
  const [Kb, N] = o.transB ? [b.shape[1], b.shape[0]] : [b.shape[0], b.shape[1]];
  if (Kb !== K) {
    invalid(`Cannot run ${op} as the inner sizes differ: op(a) is [${M}, ${K}], op(b) is [${Kb}, ${N}] (transA ${!!o.transA}, transB ${!!o.transB})`);
  }
  expectShape(op, "c", c, [M, N]);
  if (o.bias) {
    expectShape(op, "bias", o.bias, [N]);
    expectDType(op, "bias", o.bias, "f32");
  }
  // Narrow outputs (a 10-class head) use fewer columns per invocation instead of idle lanes.
  const rn = tileSize(N, MAX_R, WG);
  const rm = tileSize(M, MAX_R);
  return {
    M, N, K,
    workgroups: [Math.ceil(N / (WG * rn)), Math.ceil(M / rm), 1],
    constants: { TRANS_A: o.transA ? 1 : 0, TRANS_B: o.transB ? 1 : 0, BIAS: o.bias ? 1 : 0, RELU: o.relu ? 1 : 0, WG, RM: rm, RN: rn },
  };
}
