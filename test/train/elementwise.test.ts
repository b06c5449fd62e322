import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { biasAddRef, gatherRowsRef, reluRef, sumAxesRef } from "../reference/train/elementwise.ts";
import { dot, numericGrad, someIndices } from "../reference/train/finite_diff.ts";
import { relu } from "../../src/train/ops/relu.ts";
import { reluBwd } from "../../src/train/ops/relu_bwd.ts";
import { biasAdd } from "../../src/train/ops/bias_add.ts";
import { sumAxes } from "../../src/train/ops/sum_axes.ts";
import { gatherRows } from "../../src/train/ops/gather_rows.ts";
import { gatherU8 } from "../../src/train/ops/gather_u8.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { free, poisoned, randomArray, read, runOnce, upload } from "./_helpers.ts";

test("relu matches the reference and relu_bwd matches central differences away from the kink", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const n = randomInt(next, 1, 5000);
  // Keep |x| ≥ 0.01 so that x ± h never crosses 0, where ReLU has no derivative.
  const x = Float32Array.from(randomArray(next, n), (v) => (v >= 0 ? v + 0.01 : v - 0.01));
  const dy = randomArray(next, n);
  const X = upload(device, x, [n]), DY = upload(device, dy, [n]);
  const Y = poisoned(device, [n]), DX = poisoned(device, [n]);
  await runOnce(device, [relu(X, Y), reluBwd(Y, DY, DX)]);
  assertClose(await read(device, Y), Float32Array.from(reluRef(x)), 0, seed);
  const idx = someIndices(next, n, 200);
  const want = numericGrad((v) => dot(reluRef(v), dy), x, idx);
  const got = await read(device, DX);
  assertClose(Float32Array.from(idx, (i) => got[i]), Float32Array.from(want), 1e-6, seed);
  free(X, DY, Y, DX);
});

test("bias_add matches the reference, and sum_axes (its gradient) matches central differences", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (const rank of [2, 4]) {
    const N = randomInt(next, 1, 9), C = randomInt(next, 1, 40), I = rank === 2 ? 1 : randomInt(next, 1, 60);
    const shape = rank === 2 ? [N, C] : [N, C, I, 1];
    const y = randomArray(next, N * C * I), b = randomArray(next, C), dy = randomArray(next, N * C * I);
    const Y = upload(device, y, shape), B = upload(device, b, [C]), DY = upload(device, dy, [N, C, I]), DB = poisoned(device, [C]);
    await runOnce(device, [biasAdd(B, Y), sumAxes(DY, DB)]);
    assertClose(await read(device, Y), Float32Array.from(biasAddRef(y, b, C, I)), 1e-6, seed);
    const want = numericGrad((v) => dot(biasAddRef(y, v, C, I), dy), b, someIndices(next, C, C));
    assertClose(await read(device, DB), Float32Array.from(want), 1e-5 * N * I, seed);
    assertClose(await read(device, DB), Float32Array.from(sumAxesRef(dy, N, C, I)), 1e-5 * N * I, seed);
    free(Y, B, DY, DB);
  }
});

test("sum_axes matches the reference in both of its modes: few terms per output added serially, many as a workgroup tree", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  // Serial: O·I ≤ 256 (the split sums of conv2d_bwd_filter, dense bias gradients), J past one
  // workgroup of 64 and not a multiple of it. Tree: O·I > 256 (conv bias gradients), I wrapping
  // around the 64-lane stride unevenly.
  const cases = [
    { O: randomInt(next, 1, 16), J: randomInt(next, 65, 300), I: 1 },
    { O: randomInt(next, 2, 8), J: randomInt(next, 1, 70), I: randomInt(next, 2, 32) },
    { O: randomInt(next, 3, 12), J: randomInt(next, 1, 40), I: randomInt(next, 90, 200) },
    { O: randomInt(next, 300, 600), J: randomInt(next, 1, 20), I: 1 },
  ];
  for (const { O, J, I } of cases) {
    const src = randomArray(next, O * J * I);
    const S = upload(device, src, [O, J, I]), OUT = poisoned(device, [J]);
    await runOnce(device, [sumAxes(S, OUT)]);
    assertClose(await read(device, OUT), Float32Array.from(sumAxesRef(src, O, J, I)), 1e-6 * O * I, seed);
    free(S, OUT);
  }
});

test("gather_rows copies the indexed rows bit for bit, f32 and u32", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const R = randomInt(next, 1, 50), L = randomInt(next, 1, 100), B = randomInt(next, 1, 70);
  const src = randomArray(next, R * L);
  src[0] = -0; // sign of zero survives: a bit copy, not arithmetic
  const index = Uint32Array.from({ length: B }, () => randomInt(next, 0, R - 1));
  index[0] = 0;
  const labels = Uint32Array.from({ length: R }, () => randomInt(next, 0, 2 ** 31));
  const S = upload(device, src, [R, L]), I = upload(device, index, [B]), O = poisoned(device, [B, L]);
  const SL = upload(device, labels, [R]), OL = poisoned(device, [B]);
  await runOnce(device, [gatherRows(S, I, O), gatherRows(SL, I, OL)]);
  const got = new Uint32Array((await read(device, O)).buffer);
  assert.equal([...got], [...new Uint32Array(gatherRowsRef(src, L, index).buffer)], `seed ${seed}`);
  assert.equal([...new Uint32Array(await readBuffer(device, OL.buffer))], [...gatherRowsRef(labels, 1, index)], `seed ${seed}`);
  free(S, I, O, SL, OL);
});

test("gather_u8 gathers byte rows of any length and normalizes them like the CPU", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const R = randomInt(next, 1, 40), L = randomInt(next, 1, 33), B = randomInt(next, 1, 50); // L not a multiple of 4
  const bytes = Uint8Array.from({ length: R * L }, () => randomInt(next, 0, 255));
  bytes[0] = 255;
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  const index = Uint32Array.from({ length: B }, () => randomInt(next, 0, R - 1));
  const mean = next(), std = 0.1 + next();
  const S = upload(device, new Uint32Array(padded.buffer), [padded.length / 4]), I = upload(device, index, [B]), O = poisoned(device, [B, L]);
  await runOnce(device, [gatherU8(S, I, O, { mean, std })]);
  const want = new Float32Array(B * L);
  for (let b = 0; b < B; b++) for (let j = 0; j < L; j++) want[b * L + j] = (bytes[index[b] * L + j] / 255 - mean) / std;
  assertClose(await read(device, O), want, 1e-5, seed);
  free(S, I, O);
});
