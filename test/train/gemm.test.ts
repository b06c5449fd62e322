import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { gemmRef } from "../reference/train/gemm.ts";
import { gemm } from "../../src/train/ops/gemm.ts";
import { CassetteError } from "../../src/errors.ts";
import { free, poisoned, randomArray, read, runOnce, upload } from "./_helpers.ts";

test("gemm matches the CPU reference for every transpose, with and without bias and ReLU, on random sizes", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  // Four rounds cover every transpose, each with other epilogues (each variant is a pipeline
  // compile: seconds on lavapipe).
  for (let round = 0; round < 4; round++) {
    const transA = (round & 1) === 1, transB = (round & 2) === 2, withBias = round !== 1;
    const M = randomInt(next, 1, 70), N = randomInt(next, 1, 150), K = randomInt(next, 1, 90);
    const a = randomArray(next, M * K), b = randomArray(next, K * N), bias = randomArray(next, N);
    const A = upload(device, a, transA ? [K, M] : [M, K]);
    const B = upload(device, b, transB ? [N, K] : [K, N]);
    const Bias = upload(device, bias, [N]);
    const C = poisoned(device, [M, N]);
    const relu = round === 0 || round === 3;
    await runOnce(device, [gemm(A, B, C, { transA, transB, bias: withBias ? Bias : undefined, relu })]);
    const want = gemmRef(a, b, M, N, K, { transA, transB, bias: withBias ? bias : undefined, relu });
    // f32 sums of K products of values in [-1, 1]: error grows like √K ulps of the sum's size.
    assertClose(await read(device, C), Float32Array.from(want), 1e-5 * K, seed);
    free(A, B, Bias, C);
  }
});

test("gemm names the operands whose inner sizes differ", async () => {
  const device = await testDevice();
  const A = upload(device, new Float32Array(6), [2, 3]), B = upload(device, new Float32Array(8), [4, 2]);
  const C = upload(device, new Float32Array(4), [2, 2]);
  try {
    gemm(A, B, C);
    assert.unreachable("should throw");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.match((e as Error).message, /inner sizes differ: op\(a\) is \[2, 3\], op\(b\) is \[4, 2\]/);
  } finally {
    free(A, B, C);
  }
});
