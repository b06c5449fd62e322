/**
 * MixUp and CutMix (src/decode/mix.ts, src/gpu/mix.ts): the GPU's and the CPU's mixed tensors
 * and targets against the reference of torchvision's definitions (test/reference/mix.ts), on
 * fresh random batches and draws, at λ = 0 and 1, and the draws' distribution.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, poisonedBuffer, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { mixRef, targetsRef } from "../reference/mix.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import type { PreprocessOptions } from "../../src/gpu/preprocess.ts";
import { cpuTensor } from "../../src/decode/tensor.ts";
import { drawMix, type BatchMixPlan, mixTensor } from "../../src/decode/mix.ts";
import { CassetteError } from "../../src/errors.ts";

const image = (next: () => number, w: number, h: number) => ({ data: randomBytes(next, w * h * 3), width: w, height: h, channels: 3 });

test("a mixed batch on the GPU and on the CPU is the reference's, images and targets, MixUp and CutMix, both layouts", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const kinds = new Set<string>();
  for (let round = 0; round < 6; round++) {
    const n = randomInt(next, 2, 6), classes = randomInt(next, 2, 5);
    const base: PreprocessOptions = { width: randomInt(next, 3, 16), height: randomInt(next, 3, 16), layout: next() < 0.5 ? "nchw" : "nhwc", seed: randomInt(next, 0, 99), mean: [0.5, 0.4, 0.3], std: [0.2, 0.3, 0.4] };
    const both = { mixup: { alpha: 0.2 + next() }, cutmix: { alpha: 0.2 + next() } };
    const mix = round % 3 === 0 ? { cutmix: both.cutmix } : round % 3 === 1 ? { mixup: both.mixup } : both;
    const mixed: PreprocessOptions = { ...base, augment: { mix } };
    const images = Array.from({ length: n }, () => image(next, randomInt(next, 4, 30), randomInt(next, 4, 30)));
    const ids = images.map((_, i) => `mix-${seed}-${round}-${i}`);
    const labels = Array.from({ length: n }, () => randomInt(next, 0, classes - 1));
    const run = { epoch: round, ids, labels, classes };
    const plain = cpuTensor(images, base, { ids });
    const want = mixRef(drawMix(mixed.augment!.mix!, mixed.seed!, round, ids, mixed.width, mixed.height), plain.data, plain.shape, plain.layout);
    const cpu = cpuTensor(images, mixed, run);
    kinds.add(cpu.mix!.kind);
    assertClose(cpu.data, want, 1e-5, seed);
    assertClose(cpu.targets!, targetsRef(cpu.mix!, labels, classes), 1e-6, seed);
    const pre = await createPreprocessor(device, mixed);
    const bytes = plain.data.length * 4;
    const out = poisonedBuffer(device, bytes);
    try {
      const batch = await pre.run(images, { ...run, output: out });
      assert.equal(batch.mix, cpu.mix);
      assert.equal(Array.from(batch.targets!), Array.from(cpu.targets!));
      assertClose(new Float32Array(await readBuffer(device, out, bytes)), want, 1e-4, seed);
    } finally {
      out.destroy();
      pre.destroy();
    }
  }
  assert.equal([...kinds].sort(), ["cutmix", "mixup"]);
});

test("λ at its edges: MixUp with λ = 1 leaves the batch, λ = 0 gives each image its neighbour; CutMix's box at λ = 1 is empty", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const shape: [number, number, number, number] = [3, 3, 5, 4];
  const x = Float32Array.from({ length: 3 * 3 * 5 * 4 }, () => next());
  const run = (plan: BatchMixPlan) => {
    const y = x.slice();
    mixTensor(plan, y, shape, "nchw");
    return y;
  };
  assert.equal(Array.from(run({ kind: "mixup", lambda: 1, weight: 1 })), Array.from(x));
  const per = 60;
  assert.equal(Array.from(run({ kind: "mixup", lambda: 0, weight: 0 })), [...x.slice(2 * per), ...x.slice(0, 2 * per)]);
  assert.equal(Array.from(run({ kind: "cutmix", lambda: 1, weight: 1, box: { x1: 2, y1: 3, x2: 2, y2: 3 } })), Array.from(x));
  // A box over the whole image is λ = 0: each image its neighbour.
  assert.equal(Array.from(run({ kind: "cutmix", lambda: 0, weight: 1, box: { x1: 0, y1: 0, x2: 4, y2: 5 } })), [...x.slice(2 * per), ...x.slice(0, 2 * per)]);
});

test("draws: Beta(α, α) for λ, CutMix's λ the share of pixels kept, each batch one op at cutmixShare, the same draw for the same batch", () => {
  const seed = freshSeed();
  const n = 4000;
  for (const alpha of [0.2, 1, 4]) {
    let sum = 0, sq = 0;
    for (let i = 0; i < n; i++) {
      const l = drawMix({ mixup: { alpha } }, seed, 0, [`b${i}`, "x"], 8, 8).lambda;
      assert.ok(l >= 0 && l <= 1);
      sum += l;
      sq += l * l;
    }
    const mean = sum / n, variance = sq / n - mean * mean, want = 1 / (4 * (2 * alpha + 1));
    assert.ok(Math.abs(mean - 0.5) < 0.03, `α ${alpha}: mean ${mean} (seed ${seed})`);
    assert.ok(Math.abs(variance - want) < 0.2 * want, `α ${alpha}: variance ${variance}, Beta's ${want} (seed ${seed})`);
  }
  let cut = 0;
  for (let i = 0; i < n; i++) {
    const p = drawMix({ mixup: {}, cutmix: {}, cutmixShare: 0.3 }, seed, 1, [i, 1], 20, 10);
    if (p.kind !== "cutmix") continue;
    cut++;
    const b = p.box!;
    assert.ok(b.x1 >= 0 && b.y1 >= 0 && b.x2 <= 20 && b.y2 <= 10 && b.x1 <= b.x2 && b.y1 <= b.y2, JSON.stringify(b));
    assert.ok(Math.abs(p.lambda - (1 - ((b.x2 - b.x1) * (b.y2 - b.y1)) / 200)) < 1e-12);
  }
  assert.ok(Math.abs(cut / n - 0.3) < 0.03, `cutmix share ${cut / n} (seed ${seed})`);
  assert.equal(drawMix({ mixup: {} }, seed, 2, ["a", "b"], 8, 8), drawMix({ mixup: {} }, seed, 2, ["a", "b"], 8, 8));
  assert.is(drawMix({ mixup: {} }, seed, 2, ["a"], 8, 8).kind, "none", "a batch of one is left");
});

test("a mixed run without labels, or with masks, is refused by name", async () => {
  const device = await testDevice();
  const pre = await createPreprocessor(device, { width: 4, height: 4, augment: { mix: { mixup: {} } } });
  const img = image(rng(1), 6, 6);
  try {
    for (const [run, re] of [
      [{ ids: ["a", "b"] }, /Cannot mix a batch \(augment\.mix\) as 'labels' must give one class per image/],
      [{ ids: ["a", "b"], labels: [0, 1], classes: 2, masks: [img, img] }, /Cannot mix a batch that has masks/],
    ] as const) {
      try {
        await pre.run([img, img], run);
        assert.unreachable("should throw");
      } catch (e) {
        assert.instance(e, CassetteError);
        assert.match((e as Error).message, re);
      }
    }
  } finally {
    pre.destroy();
  }
});
