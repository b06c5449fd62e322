import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { softmaxXentRef } from "../reference/train/softmax_xent.ts";
import { numericGrad, someIndices } from "../reference/train/finite_diff.ts";
import { packLabels, softmaxXent } from "../../src/train/ops/softmax_xent.ts";
import { createTensor } from "../../src/train/tensor.ts";
import { free, poisoned, randomArray, read, runOnce, upload } from "./_helpers.ts";

test("softmax_xent: loss, hits and rows match the reference, the gradient matches central differences of the mean loss", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 3; round++) {
    const B = randomInt(next, 1, 150), C = randomInt(next, 2, 40);
    const z = randomArray(next, B * C, 8); // logits up to ±8: exp would overflow without the max shift at ±100
    z[0] = 90;
    const labels = Uint32Array.from({ length: B }, () => randomInt(next, 0, C - 1));
    const Z = upload(device, z, [B, C]), L = upload(device, packLabels(labels, B), [2 * B + 1]);
    const DZ = poisoned(device, [B, C]), STATS = createTensor(device, [3]);
    // Run twice: the stats are running sums.
    await runOnce(device, [softmaxXent(Z, L, DZ, STATS), softmaxXent(Z, L, DZ, STATS)]);
    const ref = softmaxXentRef(z, labels, B, C);
    const [loss, hits, rows] = await read(device, STATS);
    assert.ok(Math.abs(loss - 2 * ref.loss) <= 1e-5 * B * Math.max(1, ref.loss / B), `loss ${loss} vs ${2 * ref.loss} (seed ${seed})`);
    assert.is(hits, 2 * ref.hits, `seed ${seed}`);
    assert.is(rows, 2 * B);
    assertClose(await read(device, DZ), Float32Array.from(ref.dz), 1e-6, seed);
    const idx = someIndices(next, z.length, 100);
    const want = numericGrad((v) => softmaxXentRef(v, labels, B, C).loss / B, z, idx);
    const got = await read(device, DZ);
    assertClose(Float32Array.from(idx, (i) => got[i]), Float32Array.from(want), 1e-6, seed);
    free(Z, L, DZ, STATS);
  }
});

test("softmax_xent with mixed targets (MixUp, CutMix): loss and gradient as the reference's λ·onehot(label) + (1 − λ)·onehot(the row before's), λ = 1 the plain loss bit for bit", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (const lambda of [next(), 0, 1]) {
    const B = randomInt(next, 2, 100), C = randomInt(next, 2, 30);
    const z = randomArray(next, B * C, 8);
    const labels = Uint32Array.from({ length: B }, () => randomInt(next, 0, C - 1));
    const others = Uint32Array.from({ length: B }, (_, i) => labels[(i + B - 1) % B]);
    const Z = upload(device, z, [B, C]), L = upload(device, packLabels(labels, B, lambda), [2 * B + 1]);
    const DZ = poisoned(device, [B, C]), STATS = createTensor(device, [3]);
    await runOnce(device, [softmaxXent(Z, L, DZ, STATS)]);
    const ref = softmaxXentRef(z, labels, B, C, { others, lambda });
    const [loss, hits] = await read(device, STATS);
    assert.ok(Math.abs(loss - ref.loss) <= 1e-5 * B * Math.max(1, ref.loss / B), `λ ${lambda}: loss ${loss} vs ${ref.loss} (seed ${seed})`);
    assert.is(hits, ref.hits);
    const got = await read(device, DZ);
    assertClose(got, Float32Array.from(ref.dz), 1e-6, seed);
    const idx = someIndices(next, z.length, 60);
    const want = numericGrad((v) => softmaxXentRef(v, labels, B, C, { others, lambda }).loss / B, z, idx);
    assertClose(Float32Array.from(idx, (i) => got[i]), Float32Array.from(want), 1e-6, seed);
    if (lambda === 1) {
      // The unmixed layout (each row its own other label) gives the same values exactly.
      const L1 = upload(device, packLabels(labels, B), [2 * B + 1]), DZ1 = poisoned(device, [B, C]), S1 = createTensor(device, [3]);
      await runOnce(device, [softmaxXent(Z, L1, DZ1, S1)]);
      assert.equal(Array.from(await read(device, DZ1)), Array.from(got));
      free(L1, DZ1, S1);
    }
    free(Z, L, DZ, STATS);
  }
});
