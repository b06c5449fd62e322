import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { avgpoolRef, maxpoolRef } from "../reference/train/pool.ts";
import { dot, numericGrad, someIndices } from "../reference/train/finite_diff.ts";
import { maxpoolFwd } from "../../src/train/ops/maxpool_fwd.ts";
import { maxpoolBwd } from "../../src/train/ops/maxpool_bwd.ts";
import { avgpoolFwd } from "../../src/train/ops/avgpool_fwd.ts";
import { avgpoolBwd } from "../../src/train/ops/avgpool_bwd.ts";
import { CassetteError } from "../../src/errors.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createTensor } from "../../src/train/tensor.ts";
import { free, poisoned, randomArray, read, runOnce, upload } from "./_helpers.ts";

/** Distinct values at least 0.01 apart, shuffled: no window has a near tie that x ± h could flip. */
function spacedValues(next: () => number, n: number): Float32Array {
  const v = Float32Array.from({ length: n }, (_, i) => (i - n / 2) * 0.01);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [v[i], v[j]] = [v[j], v[i]];
  }
  return v;
}

test("maxpool_fwd matches the reference (values and winners) and maxpool_bwd matches central differences, odd sizes included", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 3; round++) {
    const S = randomInt(next, 1, 3);
    const N = randomInt(next, 1, 3), C = randomInt(next, 1, 6), H = randomInt(next, S, 13), W = randomInt(next, S, 13);
    const OH = Math.floor(H / S), OW = Math.floor(W / S);
    const x = spacedValues(next, N * C * H * W), dy = randomArray(next, N * C * OH * OW);
    const X = upload(device, x, [N, C, H, W]), DY = upload(device, dy, [N, C, OH, OW]);
    const Y = poisoned(device, [N, C, OH, OW]), ARG = poisoned(device, [N, C, OH, OW]), DX = poisoned(device, [N, C, H, W]);
    await runOnce(device, [maxpoolFwd(X, Y, ARG, S), maxpoolBwd(DY, ARG, DX, S)]);
    const ref = maxpoolRef(x, N, C, H, W, S);
    assertClose(await read(device, Y), Float32Array.from(ref.y), 0, seed);
    assert.equal([...new Uint32Array(await readBuffer(device, ARG.buffer))], [...ref.arg], `seed ${seed}`);
    const want = numericGrad((v) => dot(maxpoolRef(v, N, C, H, W, S).y, dy), x, someIndices(next, x.length, x.length), 1e-3);
    assertClose(await read(device, DX), Float32Array.from(want), 1e-5, seed);
    free(X, DY, Y, ARG, DX);
  }
});

test("maxpool_bwd with a ReLU gate also zeroes the gradient where its input is ≤ 0 (the fused ReLU's backward)", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const S = randomInt(next, 1, 3);
  const N = randomInt(next, 1, 3), C = randomInt(next, 1, 6), H = randomInt(next, S, 13), W = randomInt(next, 2 * S, 13);
  const OH = Math.floor(H / S), OW = Math.floor(W / S);
  // x is a ReLU's output: about half of it exactly 0. The first window is all 0 (its winner is
  // gated), the second has a clear positive winner (passed through).
  const x = spacedValues(next, N * C * H * W).map((v) => Math.max(v, 0));
  for (let dh = 0; dh < S; dh++) for (let dw = 0; dw < S; dw++) x[dh * W + dw] = 0;
  x[S] = 100;
  const dy = randomArray(next, N * C * OH * OW);
  const X = upload(device, x, [N, C, H, W]), DY = upload(device, dy, [N, C, OH, OW]);
  const Y = poisoned(device, [N, C, OH, OW]), ARG = poisoned(device, [N, C, OH, OW]), DX = poisoned(device, [N, C, H, W]);
  await runOnce(device, [maxpoolFwd(X, Y, ARG, S), maxpoolBwd(DY, ARG, DX, S, X)]);
  const ref = maxpoolRef(x, N, C, H, W, S);
  const want = new Float32Array(x.length);
  ref.arg.forEach((i, o) => {
    if (x[i] > 0) want[i] = dy[o];
  });
  assert.equal([ref.arg[0], ref.arg[1]], [0, S], `seed ${seed}`);
  assertClose(await read(device, DX), want, 0, seed);
  free(X, DY, Y, ARG, DX);
});

test("maxpool_fwd takes the first of tied values, as the reference", async () => {
  const device = await testDevice();
  const X = upload(device, new Float32Array([1, 1, 1, 1, 0, 2, 2, 0]), [1, 2, 2, 2]);
  const Y = poisoned(device, [1, 2, 1, 1]), ARG = poisoned(device, [1, 2, 1, 1]);
  await runOnce(device, [maxpoolFwd(X, Y, ARG, 2)]);
  assert.equal([...new Uint32Array(await readBuffer(device, ARG.buffer))], [0, 5]);
  free(X, Y, ARG);
});

test("avgpool_fwd matches the reference and avgpool_bwd matches central differences", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const N = randomInt(next, 1, 5), C = randomInt(next, 1, 30), H = randomInt(next, 1, 9), W = randomInt(next, 1, 9);
  const x = randomArray(next, N * C * H * W), dy = randomArray(next, N * C);
  const X = upload(device, x, [N, C, H, W]), DY = upload(device, dy, [N, C]);
  const Y = poisoned(device, [N, C]), DX = poisoned(device, [N, C, H, W]);
  await runOnce(device, [avgpoolFwd(X, Y), avgpoolBwd(DY, DX)]);
  assertClose(await read(device, Y), Float32Array.from(avgpoolRef(x, N * C, H * W)), 1e-6, seed);
  const idx = someIndices(next, x.length, 300);
  const want = numericGrad((v) => dot(avgpoolRef(v, N * C, H * W), dy), x, idx);
  const got = await read(device, DX);
  assertClose(Float32Array.from(idx, (i) => got[i]), Float32Array.from(want), 1e-6, seed);
  free(X, DY, Y, DX);
});

test("maxpool names a window larger than the input", async () => {
  const device = await testDevice();
  const X = createTensor(device, [1, 1, 3, 5]), Y = createTensor(device, [1, 1, 1, 1]);
  try {
    assert.throws(() => maxpoolFwd(X, Y, Y, 4), (e: Error) => e instanceof CassetteError && /'size' must be an integer in 1…3 for a 3×5 input: current value is 4/.test(e.message));
  } finally {
    free(X, Y);
  }
});
