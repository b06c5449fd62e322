import { test } from "../_support/harness.ts";
import * as assert from "uvu/assert";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { conv2dRef, convOut } from "../reference/train/conv2d.ts";
import type { ConvShape } from "../reference/train/conv2d.ts";
import { dot, numericGrad, someIndices } from "../reference/train/finite_diff.ts";
import { conv2dFwd } from "../../src/train/ops/conv2d_fwd.ts";
import { conv2dBwdData } from "../../src/train/ops/conv2d_bwd_data.ts";
import { conv2dBwdFilter, filterSplits } from "../../src/train/ops/conv2d_bwd_filter.ts";
import { CassetteError } from "../../src/errors.ts";
import { createTensor } from "../../src/train/tensor.ts";
import { free, poisoned, randomArray, read, runOnce, upload } from "./_helpers.ts";

function randomShape(next: () => number, big: boolean): ConvShape {
  const k = randomInt(next, 1, 3) * 2 - 1; // 1, 3 or 5
  const H = randomInt(next, k, big ? 20 : 8), W = randomInt(next, k, big ? 20 : 8);
  return {
    N: randomInt(next, 1, big ? 5 : 2), C: randomInt(next, 1, big ? 12 : 5), H, W,
    K: randomInt(next, 1, big ? 20 : 10), KH: k, KW: k, P: randomInt(next, 0, (k - 1) / 2),
  };
}

test("conv2d_fwd matches the CPU reference on random shapes, paddings, bias and ReLU", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 4; round++) {
    const s = randomShape(next, true);
    const { OH, OW } = convOut(s);
    const x = randomArray(next, s.N * s.C * s.H * s.W), w = randomArray(next, s.K * s.C * s.KH * s.KW), b = randomArray(next, s.K);
    const X = upload(device, x, [s.N, s.C, s.H, s.W]), Wt = upload(device, w, [s.K, s.C, s.KH, s.KW]), B = upload(device, b, [s.K]);
    const Y = poisoned(device, [s.N, s.K, OH, OW]);
    const withBias = round % 2 === 1, relu = round >= 2;
    await runOnce(device, [conv2dFwd(X, Wt, Y, { padding: s.P, bias: withBias ? B : undefined, relu })]);
    const want = conv2dRef(x, w, s, withBias ? b : undefined, relu);
    assertClose(await read(device, Y), Float32Array.from(want), 1e-5 * s.C * s.KH * s.KW, seed);
    free(X, Wt, B, Y);
  }
});

test("conv2d backward (data, and filter with and without batch splits) matches central differences of the forward", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 4; round++) {
    const s = randomShape(next, false);
    if (round === 3) s.N = Math.max(s.N, 2);
    const { OH, OW } = convOut(s);
    const x = randomArray(next, s.N * s.C * s.H * s.W), w = randomArray(next, s.K * s.C * s.KH * s.KW);
    const dy = randomArray(next, s.N * s.K * OH * OW);
    const X = upload(device, x, [s.N, s.C, s.H, s.W]), Wt = upload(device, w, [s.K, s.C, s.KH, s.KW]);
    const DY = upload(device, dy, [s.N, s.K, OH, OW]);
    const DX = poisoned(device, [s.N, s.C, s.H, s.W]), DW = poisoned(device, [s.K, s.C, s.KH, s.KW]);
    const splits = round === 3 ? s.N : 1;
    const scratch = splits > 1 ? createTensor(device, [splits, s.K * s.C * s.KH * s.KW]) : undefined;
    await runOnce(device, [
      conv2dBwdData(DY, Wt, DX, { padding: s.P }),
      ...conv2dBwdFilter(DY, X, DW, { padding: s.P, splits, scratch }),
    ]);
    const xi = someIndices(next, x.length, 60), wi = someIndices(next, w.length, 60);
    const gx = numericGrad((v) => dot(conv2dRef(v, w, s), dy), x, xi);
    const gw = numericGrad((v) => dot(conv2dRef(x, v, s), dy), w, wi);
    const gotX = await read(device, DX), gotW = await read(device, DW);
    assertClose(Float32Array.from(xi, (i) => gotX[i]), Float32Array.from(gx), 1e-5 * s.K * s.KH * s.KW, seed);
    assertClose(Float32Array.from(wi, (i) => gotW[i]), Float32Array.from(gw), 1e-5 * s.N * OH * OW, seed);
    // Every element was written (the poison is gone), not only the sampled ones.
    assert.ok(gotX.every(Number.isFinite) && gotW.every(Number.isFinite), `NaN left in a gradient (seed ${seed})`);
    free(X, Wt, DY, DX, DW, scratch);
  }
});

test("filterSplits splits the batch only when the weights give few workgroups", () => {
  assert.is(filterSplits(128, [32, 16, 3, 3]), 8); // 144 taps × 32 channels: 8 workgroups
  assert.is(filterSplits(128, [16, 1, 3, 3]), 32); // 9 taps: capped at 32 splits
  assert.is(filterSplits(1, [16, 1, 3, 3]), 1);
  assert.is(filterSplits(128, [256, 256, 3, 3]), 1);
});

test("conv2d names a channel mismatch and a kernel larger than the input", async () => {
  const device = await testDevice();
  const X = createTensor(device, [1, 3, 4, 4]), W = createTensor(device, [8, 2, 3, 3]), Y = createTensor(device, [1, 8, 4, 4]);
  const W5 = createTensor(device, [8, 3, 7, 7]);
  try {
    assert.throws(() => conv2dFwd(X, W, Y, { padding: 1 }), (e: Error) => e instanceof CassetteError && /'w' must have 3 input channels/.test(e.message));
    assert.throws(() => conv2dFwd(X, W5, Y, { padding: 1 }), (e: Error) => /7×7 kernel with padding 1 does not fit the 4×4 input/.test(e.message));
  } finally {
    free(X, W, Y, W5);
  }
});
