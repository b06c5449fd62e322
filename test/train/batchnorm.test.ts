import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { batchnormApplyRef, batchnormStatsRef, batchnormTrainRef } from "../reference/train/batchnorm.ts";
import { dot, numericGrad, someIndices } from "../reference/train/finite_diff.ts";
import { batchnormStats } from "../../src/train/ops/batchnorm_stats.ts";
import { batchnormApply } from "../../src/train/ops/batchnorm_apply.ts";
import { batchnormBwdReduce } from "../../src/train/ops/batchnorm_bwd_reduce.ts";
import { batchnormBwdData } from "../../src/train/ops/batchnorm_bwd_data.ts";
import { free, poisoned, randomArray, read, runOnce, upload } from "./_helpers.ts";

const EPS = 1e-5;

test("batch norm: training-mode stats, output and running estimates match the reference; eval mode uses the running ones", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (const rank of [2, 4]) {
    const N = randomInt(next, 2, 9), C = randomInt(next, 1, 20), I = rank === 2 ? 1 : randomInt(next, 1, 50);
    const shape = rank === 2 ? [N, C] : [N, C, I, 1];
    const x = Float32Array.from(randomArray(next, N * C * I), (v) => 3 + 2 * v); // off-centre: the mean matters
    const gamma = randomArray(next, C), beta = randomArray(next, C);
    const running = Float32Array.from({ length: 2 * C }, (_, i) => (i < C ? next() : 1 + next()));
    const X = upload(device, x, shape), G = upload(device, gamma, [C]), Bt = upload(device, beta, [C]);
    const R = upload(device, running, [2 * C]), STATS = poisoned(device, [2 * C]);
    const Y = poisoned(device, shape), YE = poisoned(device, shape);
    const momentum = 0.1;
    await runOnce(device, [
      batchnormStats(X, STATS, R, momentum),
      batchnormApply(X, STATS, G, Bt, Y, { eps: EPS, relu: true }),
      batchnormApply(X, R, G, Bt, YE, { eps: EPS }),
    ]);
    const { mean, variance } = batchnormStatsRef(x, N, C, I);
    assertClose(await read(device, STATS), Float32Array.from([...mean, ...variance]), 1e-5, seed);
    const M = N * I;
    const wantRunning = Float32Array.from({ length: 2 * C }, (_, i) =>
      i < C ? running[i] + momentum * (mean[i] - running[i]) : running[i] + momentum * ((variance[i - C] * M) / Math.max(M - 1, 1) - running[i]),
    );
    assertClose(await read(device, R), wantRunning, 1e-5, seed);
    assertClose(await read(device, Y), Float32Array.from(batchnormApplyRef(x, C, I, mean, variance, gamma, beta, EPS, true)), 1e-4, seed);
    const rm = wantRunning.subarray(0, C), rv = wantRunning.subarray(C);
    assertClose(await read(device, YE), Float32Array.from(batchnormApplyRef(x, C, I, rm, rv, gamma, beta, EPS)), 1e-4, seed);
    free(X, G, Bt, R, STATS, Y, YE);
  }
});

test("batch norm backward (x, gamma, beta) matches central differences of the training-mode forward", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (const rank of [2, 4]) {
    const N = randomInt(next, 2, 6), C = randomInt(next, 1, 6), I = rank === 2 ? 1 : randomInt(next, 1, 12);
    const shape = rank === 2 ? [N, C] : [N, C, I, 1];
    const x = randomArray(next, N * C * I), dy = randomArray(next, N * C * I);
    const gamma = randomArray(next, C), beta = randomArray(next, C);
    const X = upload(device, x, shape), DY = upload(device, dy, shape), G = upload(device, gamma, [C]), Bt = upload(device, beta, [C]);
    const R = upload(device, new Float32Array(2 * C), [2 * C]), STATS = poisoned(device, [2 * C]);
    const DG = poisoned(device, [C]), DB = poisoned(device, [C]), DX = poisoned(device, shape);
    await runOnce(device, [
      batchnormStats(X, STATS, R, 0.1),
      batchnormBwdReduce(X, DY, STATS, DG, DB, { eps: EPS }),
      batchnormBwdData(X, DY, STATS, G, DG, DB, DX, { eps: EPS }),
    ]);
    const L = (xv: ArrayLike<number>, g: ArrayLike<number>, b: ArrayLike<number>) => dot(batchnormTrainRef(xv, N, C, I, g, b, EPS), dy);
    const all = (n: number) => someIndices(next, n, n);
    // The reference forward is f64: a small step keeps the differences exact where a batch of
    // two makes the normalization sharply curved (a step of 1e-3 was off by 0.6 % there).
    const gx = numericGrad((v) => L(v, gamma, beta), x, all(x.length), 1e-5);
    const gg = numericGrad((v) => L(x, v, beta), gamma, all(C), 1e-5);
    const gb = numericGrad((v) => L(x, gamma, v), beta, all(C), 1e-5);
    // Normalizing by a batch variance of small samples amplifies f32 rounding: a looser bound.
    assertClose(await read(device, DX), Float32Array.from(gx), 2e-3, seed);
    assertClose(await read(device, DG), Float32Array.from(gg), 1e-4 * N * I, seed);
    assertClose(await read(device, DB), Float32Array.from(gb), 1e-4 * N * I, seed);
    assert.ok(true);
    free(X, DY, G, Bt, R, STATS, DG, DB, DX);
  }
});
