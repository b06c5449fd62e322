import * as assert from "uvu/assert";
import { afterAll, test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { sequentialForwardRef, sequentialLossRef } from "../reference/train/sequential.ts";
import { numericGrad, someIndices } from "../reference/train/finite_diff.ts";
import { batchNorm, conv2d, dense, globalAvgPool, maxPool, reluLayer } from "../../src/train/layers.ts";
import type { LayerSpec } from "../../src/train/layers.ts";
import { createModel } from "../../src/train/model.ts";
import type { ModelSpec } from "../../src/train/model.ts";
import { CassetteError } from "../../src/errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { randomArray, upload } from "./_helpers.ts";
import { mkdirSync, rmSync } from "node:fs";

const TMP = `.tmp/train-model-${runtime.name}`;
mkdirSync(TMP, { recursive: true });
afterAll(() => rmSync(TMP, { recursive: true, force: true }));

const SPECS: Record<string, ModelSpec> = {
  dense: { input: [1, 3, 4], layers: [dense(7, { relu: true }), dense(5)] },
  conv: {
    input: [2, 7, 6],
    layers: [conv2d(5, 3, { relu: true }), maxPool(2), conv2d(4, 3, { padding: 0 }), reluLayer(), dense(3)],
  },
  "conv+bn+avgpool": {
    input: [2, 6, 6],
    layers: [conv2d(6, 3), batchNorm({ relu: true }), conv2d(5, 1), globalAvgPool(), dense(8), batchNorm(), dense(4)],
  },
};

for (const [name, spec] of Object.entries(SPECS)) {
  test(`a ${name} model's gradients (every layer's backward, composed) match central differences of an f64 CPU forward`, async () => {
    const device = await testDevice();
    const seed = freshSeed();
    const next = rng(seed);
    const B = randomInt(next, 3, 6);
    const model = createModel(device, spec, { seed, optimizer: { kind: "sgd", lr: 1e-3, momentum: 0 } });
    const per = spec.input.reduce((a, b) => a * b, 1);
    const params: Float64Array[] = (await model.readParameters()).map((p) => Float64Array.from(p));
    // Inputs whose forward stays clear of every ReLU and max-pool kink by more than f32 can
    // blur, so that the f32 forward on the GPU and the f64 reference take the same branches.
    let x = randomArray(next, B * per), draws = 1;
    for (const kinks = { margin: 0 }; ; x = randomArray(next, B * per), draws++) {
      kinks.margin = Infinity;
      sequentialForwardRef(spec.layers as LayerSpec[], spec.input, params, x, B, undefined, kinks);
      if (kinks.margin > 1e-4) break;
      assert.ok(draws < 50, `no input of 50 clear of the kinks (seed ${seed})`);
    }
    const classes = model.classes;
    const labels = Uint32Array.from({ length: B }, () => randomInt(next, 0, classes - 1));
    const X = upload(device, x, [B * per]);
    try {
      await model.trainStep({ x: X.buffer, labels, n: B });
      const grads = await model.readGradients();
      const train = await model.takeTrainMetrics();
      const loss = sequentialLossRef(spec.layers as LayerSpec[], spec.input, params, x, labels, B);
      assert.ok(Math.abs(train.loss - loss) < 1e-4, `loss ${train.loss} vs reference ${loss} (seed ${seed})`);
      const checks = params.map((p, k) => {
        const idx = someIndices(next, p.length, 12);
        const want = numericGrad((v) => {
          const ps = params.slice();
          ps[k] = v;
          return sequentialLossRef(spec.layers as LayerSpec[], spec.input, ps, x, labels, B);
        }, p, idx, 1e-6);
        return { k, idx, want };
      });
      // f32 rounding is relative to the terms summed, whose size is the model's gradients': a
      // bias before a batch norm has a true gradient of 0 (the norm takes the batch's mean out),
      // and on the GPU the rounding of that cancelling sum (scaled by 1/σ) is what is left:
      // 1.02e-4 against weights' gradients of 0.84 (seed 1988687233).
      const scale = Math.max(...checks.flatMap((c) => Array.from(c.want, Math.abs)));
      for (const { k, idx, want } of checks) {
        idx.forEach((i, j) => {
          const got = grads[k][i];
          assert.ok(Math.abs(got - want[j]) <= 1e-4 + 1e-3 * Math.abs(want[j]) + 2e-4 * scale, `${model.parameters[k].name}[${i}]: ${got} vs ${want[j]} (seed ${seed})`);
        });
      }
    } finally {
      X.buffer.destroy();
      await model.destroy();
    }
  });
}

test("training reduces the loss, and the same seed gives the same weights", async () => {
  const device = await testDevice();
  const spec = SPECS.conv;
  const B = 16, per = 2 * 7 * 6;
  const next = rng(7);
  const x = randomArray(next, B * per);
  const labels = Uint32Array.from({ length: B }, (_, i) => i % 3);
  const X = upload(device, x, [B * per]);
  const a = createModel(device, spec, { seed: 3, optimizer: { kind: "adam", lr: 0.01 } });
  const b = createModel(device, spec, { seed: 3 });
  const c = createModel(device, spec, { seed: 4 });
  try {
    const [pa, pb, pc] = [await a.readParameters(), await b.readParameters(), await c.readParameters()];
    assert.equal(pa.map((p) => [...p]), pb.map((p) => [...p]));
    assert.not.equal([...pa[0]], [...pc[0]]);
    const losses: number[] = [];
    for (let s = 0; s < 100; s++) {
      if (s === 99) await a.takeTrainMetrics(); // the last step's loss alone
      await a.trainStep({ x: X.buffer, labels, n: B });
      if (s === 0) {
        const peek = await a.trainMetrics();
        assert.equal(await a.trainMetrics(), peek, "reading the sums does not reset them");
        assert.is(peek.samples, B);
      }
      if (s === 0 || s === 99) losses.push((await a.takeTrainMetrics()).loss);
    }
    assert.ok(losses[1] < losses[0] * 0.5, `loss ${losses[0]} → ${losses[1]}`);
    const m = await a.evaluate([{ x: X.buffer, labels, n: B }]);
    assert.is(m.samples, B);
    assert.ok(m.accuracy >= 0.9, `accuracy after memorizing 16 samples: ${m.accuracy}`);
  } finally {
    X.buffer.destroy();
    for (const m of [a, b, c]) await m.destroy();
  }
});

test("stepLoss: each step's own loss (its forward, before its update), over batches of several sizes and more steps than one history buffer holds", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const spec = SPECS.dense; // no batch norm: evaluation runs the training step's forward
  const per = spec.input.reduce((a, b) => a * b, 1);
  const model = createModel(device, spec, { seed, optimizer: { kind: "adam", lr: 0.05 } });
  const batches = Array.from({ length: 6 }, (_, k) => {
    const n = k === 5 ? 3 : randomInt(next, 4, 9); // the last one short, as an epoch's last batch
    const X = upload(device, randomArray(next, n * per), [n * per]);
    return { x: X.buffer, labels: Uint32Array.from({ length: n }, () => randomInt(next, 0, model.classes - 1)), n };
  });
  try {
    // The loss each step's forward sees is what evaluating the same weights on its batch gives.
    const want: number[] = [];
    for (const b of batches) {
      want.push((await model.evaluate([b])).loss);
      await model.trainStep(b);
    }
    const m = await model.takeTrainMetrics();
    assert.is(m.stepLoss.length, batches.length);
    m.stepLoss.forEach((l, k) => assert.ok(Math.abs(l - want[k]) <= 1e-5 + 1e-4 * want[k], `step ${k + 1}: ${l} vs ${want[k]} (seed ${seed})`));
    assert.ok(new Set(want).size === want.length, "the steps' losses differ: the weights changed between them");
    // Across 1024-step history buffers; the next take starts afresh.
    for (let s = 0; s < 1030; s++) await model.trainStep(batches[s % 2]);
    const long = await model.takeTrainMetrics();
    assert.is(long.stepLoss.length, 1030);
    const rows = (k: number) => batches[k % 2].n;
    const mean = long.stepLoss.reduce((a, l, k) => a + l * rows(k), 0) / long.stepLoss.reduce((a, _, k) => a + rows(k), 0);
    assert.ok(Math.abs(mean - long.loss) <= 1e-3 * long.loss + 1e-6, `the steps' losses, weighted by batch size, average to the epoch's: ${mean} vs ${long.loss}`);
    assert.ok(long.stepLoss.every(Number.isFinite));
    assert.equal((await model.takeTrainMetrics()).stepLoss, [], "no steps since the last take");
  } finally {
    for (const b of batches) b.x.destroy();
    await model.destroy();
  }
});

test("save then load restores parameters and batch-norm statistics exactly; a different model is refused by tensor name", async () => {
  const device = await testDevice();
  const spec = SPECS["conv+bn+avgpool"];
  const B = 4, per = 2 * 6 * 6;
  const X = upload(device, randomArray(rng(1), B * per), [B * per]);
  const labels = new Uint32Array([0, 1, 2, 3]);
  const a = createModel(device, spec, { seed: 1 }), b = createModel(device, spec, { seed: 2 });
  const other = createModel(device, SPECS.conv);
  const path = `${TMP}/weights.bin`;
  try {
    for (let s = 0; s < 3; s++) await a.trainStep({ x: X.buffer, labels, n: B }); // moves the running statistics
    await a.save(path);
    await b.load(path);
    assert.equal((await b.readParameters()).map((p) => [...p]), (await a.readParameters()).map((p) => [...p]));
    const [ea, eb] = [await a.evaluate([{ x: X.buffer, labels, n: B }]), await b.evaluate([{ x: X.buffer, labels, n: B }])];
    assert.is(eb.loss, ea.loss, "eval mode reads the running statistics: they must have been loaded too");
    try {
      await other.load(path);
      assert.unreachable("should throw");
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.match((e as Error).message, /tensor|tensors/);
    }
    await runtime.writeFile(`${TMP}/bad.bin`, new Uint8Array([1, 2, 3]));
    try {
      await a.load(`${TMP}/bad.bin`);
      assert.unreachable("should throw");
    } catch (e) {
      assert.is((e as CassetteError).code, "ERR_MALFORMED_INPUT");
    }
  } finally {
    X.buffer.destroy();
    for (const m of [a, b, other]) await m.destroy();
  }
});

test("model errors name the layer, shape or option that is wrong", async () => {
  const device = await testDevice();
  const throwsWith = (f: () => unknown, re: RegExp) =>
    assert.throws(f, (e: Error) => e instanceof CassetteError && re.test(e.message), String(re));
  throwsWith(() => createModel(device, "resnet-9000"), /model 'resnet-9000': use one of mlp, cnn, cnn-bn/);
  throwsWith(() => createModel(device, { input: [1, 4, 4], layers: [conv2d(4, 5, { padding: 0 }), dense(2)] }), /layer 0 \(conv2d\).*5×5 kernel/);
  throwsWith(() => createModel(device, { input: [1, 4, 4], layers: [dense(2), maxPool(2)] }), /layer 1 \(maxpool\).*\[C, H, W\]/);
  throwsWith(() => createModel(device, { input: [1, 4, 4], layers: [conv2d(2, 3)] }), /last layer must output class scores/);
  throwsWith(() => createModel(device, "mlp", { optimizer: { kind: "sgd", lr: -1 } }), /'lr' must be a finite number > 0: current value is -1/);
  const m = createModel(device, "mlp");
  const small = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  try {
    await m.trainStep({ x: small, labels: new Uint32Array(2), n: 2 });
    assert.unreachable("should throw");
  } catch (e) {
    assert.match((e as Error).message, /batch of 2 samples of \[1,28,28\] as 'x' holds 16 bytes/);
  } finally {
    small.destroy();
    await m.destroy();
  }
});
