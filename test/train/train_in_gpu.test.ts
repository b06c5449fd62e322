import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { trainInGpu } from "../../src/train/train_in_gpu.ts";

test("trainInGpu trains on every sample each epoch by default, the short last batch included; dropLast: true leaves it out", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const B = randomInt(next, 4, 12), count = B * randomInt(next, 2, 4) + randomInt(next, 1, B - 1);
  const images = Float32Array.from({ length: count * 16 }, () => next());
  const labels = Uint32Array.from({ length: count }, () => randomInt(next, 0, 1));
  const train = { images, labels, count, shape: [1, 4, 4] };
  const model = { input: [1, 4, 4], layers: [{ kind: "dense" as const, units: 2 }] };
  const kept = await trainInGpu(device, { model, train, epochs: 2, batch: B, seed });
  for (const e of kept.epochs) {
    assert.is(e.samples, count, `every sample trains (${count} in batches of ${B}, seed ${seed})`);
    assert.is(e.stepLoss.length, Math.ceil(count / B));
  }
  const dropped = await trainInGpu(device, { model, train, epochs: 1, batch: B, seed, dropLast: true });
  assert.is(dropped.epochs[0].samples, count - (count % B));
  assert.is(dropped.epochs[0].stepLoss.length, Math.floor(count / B));
});
