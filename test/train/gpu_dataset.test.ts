import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { GpuDataset } from "../../src/train/gpu_dataset.ts";
import { epochPermutation } from "../../src/train/shuffle.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { CassetteError } from "../../src/errors.ts";

test("GpuDataset serves every sample exactly once per epoch, image with its label, in a new order each epoch", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const count = randomInt(next, 20, 90), B = randomInt(next, 3, 16), per = 6;
  // Sample i's pixels all hold i (mod 256) and its label is i: the pairing is checkable.
  const images = Uint8Array.from({ length: count * per }, (_, k) => Math.floor(k / per) % 256);
  const labels = Uint32Array.from({ length: count }, (_, i) => i);
  const data = new GpuDataset(device, images, labels, { shape: [1, 2, 3], normalize: { mean: 0, std: 1 / 255 } });
  try {
    const orders: number[][] = [];
    for (const epoch of [0, 1]) {
      const seen: number[] = [];
      for await (const b of data.batches(epoch, { batch: B, seed })) {
        const x = new Float32Array(await readBuffer(device, b.x, b.n * per * 4));
        const y = new Uint32Array(await readBuffer(device, b.labels as GPUBuffer, b.n * 4));
        for (let i = 0; i < b.n; i++) {
          for (let j = 0; j < per; j++) assert.is(x[i * per + j], y[i] % 256, `sample ${y[i]} carries another sample's pixels (seed ${seed})`);
          seen.push(y[i]);
        }
      }
      assert.equal([...seen].sort((a, b) => a - b), [...labels], `epoch ${epoch}: each sample once (seed ${seed})`);
      assert.equal(seen, [...epochPermutation(count, seed, epoch)]);
      orders.push(seen);
    }
    assert.not.equal(orders[0], orders[1]);
    let batches = 0;
    for await (const b of data.batches(0, { batch: B, dropLast: true, shuffle: false })) batches++, assert.is(b.n, B);
    assert.is(batches, Math.floor(count / B));
  } finally {
    await data.destroy();
  }
});

test("GpuDataset refuses mismatched counts and byte images without normalization", async () => {
  const device = await testDevice();
  assert.throws(() => new GpuDataset(device, new Float32Array(10), [0, 1], { shape: [1, 2, 2] }), (e: Error) => e instanceof CassetteError && /2 labels with 10 image values: samples of shape \[1,2,2\] need 8/.test(e.message));
  assert.throws(() => new GpuDataset(device, new Uint8Array(8), [0, 1], { shape: [1, 2, 2] }), (e: Error) => /'normalize'/.test(e.message));
});
