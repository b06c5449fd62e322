import * as assert from "uvu/assert";
import { afterAll, test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { sequentialForwardRef } from "../reference/train/sequential.ts";
import { batchNorm, conv2d, dense, globalAvgPool, maxPool } from "../../src/train/layers.ts";
import type { LayerSpec } from "../../src/train/layers.ts";
import { createModel } from "../../src/train/model.ts";
import type { ModelSpec } from "../../src/train/model.ts";
import { decodeWeights } from "../../src/train/weights.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { randomArray, upload } from "./_helpers.ts";
import { mkdirSync, rmSync } from "node:fs";

const TMP = `.tmp/train-predict-step-${runtime.name}`;
mkdirSync(TMP, { recursive: true });
afterAll(() => rmSync(TMP, { recursive: true, force: true }));

const SPECS: Record<string, ModelSpec> = {
  dense: { input: [1, 3, 4], layers: [dense(7, { relu: true }), dense(5)] },
  "conv+bn": {
    input: [2, 6, 6],
    layers: [conv2d(6, 3), batchNorm({ relu: true }), maxPool(2), conv2d(5, 1), globalAvgPool(), dense(8), batchNorm(), dense(4)],
  },
};

/** Row-wise softmax in f64. */
function softmaxRef(z: Float64Array, n: number, c: number): Float64Array {
  const out = new Float64Array(n * c);
  for (let r = 0; r < n; r++) {
    const row = z.subarray(r * c, r * c + c);
    const top = Math.max(...row);
    const sum = row.reduce((a, v) => a + Math.exp(v - top), 0);
    for (let k = 0; k < c; k++) out[r * c + k] = Math.exp(row[k] - top) / sum;
  }
  return out;
}

/** The first index of the row's largest value (the order softmax_xent's argmax breaks ties in). */
function argmax(v: ArrayLike<number>, row: number, c: number): number {
  let best = 0;
  for (let k = 1; k < c; k++) if (v[row * c + k] > v[row * c + best]) best = k;
  return best;
}

for (const [name, spec] of Object.entries(SPECS)) {
  test(`predictStep of a ${name} model equals an f64 CPU eval forward + softmax, and its argmax gives evaluate's accuracy`, async () => {
    const device = await testDevice();
    const seed = freshSeed();
    const next = rng(seed);
    const per = spec.input.reduce((a, b) => a * b, 1);
    const model = createModel(device, spec, { seed, optimizer: { kind: "adam", lr: 0.05 } });
    const C = model.classes;
    const bufs: GPUBuffer[] = [];
    const batch = (n: number) => {
      const x = randomArray(next, n * per);
      const X = upload(device, x, [n * per]);
      bufs.push(X.buffer);
      return { x, n, X: X.buffer, labels: Uint32Array.from({ length: n }, () => randomInt(next, 0, C - 1)) };
    };
    try {
      // A few steps move the weights and the batch-norm running statistics off their start.
      const t = batch(8);
      for (let s = 0; s < 3; s++) await model.trainStep({ x: t.X, labels: t.labels, n: t.n });
      const path = `${TMP}/${name}.bin`;
      await model.save(path);
      const { header, values } = decodeWeights(await runtime.readFile(path), path);
      const nParams = model.parameters.length;
      const params = values.slice(0, nParams), state = values.slice(nParams);
      assert.is(header.tensors.length, values.length);

      // Batches of several sizes, submitted before any answer is awaited.
      const bs = [batch(randomInt(next, 5, 40)), batch(randomInt(next, 1, 4)), batch(randomInt(next, 5, 40))];
      const got = await Promise.all(bs.map((b) => model.predictStep({ x: b.X, labels: b.labels, n: b.n })));
      let hits = 0, total = 0;
      bs.forEach((b, i) => {
        const p = got[i];
        assert.is(p.length, b.n * C, `batch ${i}: n × classes values`);
        const want = softmaxRef(sequentialForwardRef(spec.layers as LayerSpec[], spec.input, params, b.x, b.n, state), b.n, C);
        for (let j = 0; j < p.length; j++) {
          assert.ok(Math.abs(p[j] - want[j]) <= 2e-5, `batch ${i} [${Math.floor(j / C)}, ${j % C}]: ${p[j]} vs ${want[j]} (seed ${seed})`);
        }
        for (let r = 0; r < b.n; r++) {
          const sum = p.subarray(r * C, r * C + C).reduce((a, v) => a + v, 0);
          assert.ok(Math.abs(sum - 1) < 1e-5, `row ${r} sums to ${sum}`);
          // Where the reference's top two are apart, the argmax must agree.
          const top = argmax(want, r, C);
          const second = Math.max(...Array.from({ length: C }, (_, k) => (k === top ? -1 : want[r * C + k])));
          if (want[r * C + top] - second > 1e-4) assert.is(argmax(p, r, C), top, `batch ${i} row ${r} argmax (seed ${seed})`);
          if (argmax(p, r, C) === b.labels[r]) hits++;
          total++;
        }
      });
      // evaluate's accuracy (softmax_xent's argmax on the GPU) is the share of rows whose predicted class is the label.
      const m = await model.evaluate(bs.map((b) => ({ x: b.X, labels: b.labels, n: b.n })));
      assert.is(m.samples, total);
      assert.is(m.accuracy, hits / total, `evaluate ${m.accuracy} vs predictStep ${hits}/${total} (seed ${seed})`);
      // Predicting reads no labels and adds nothing to the evaluation sums.
      const again = await model.predictStep({ x: bs[0].X, labels: new Int32Array(bs[0].n).fill(-1), n: bs[0].n });
      assert.equal([...again], [...got[0]], "the same batch gives the same probabilities");
      const m2 = await model.evaluate(bs.map((b) => ({ x: b.X, labels: b.labels, n: b.n })));
      assert.equal(m2, m);
    } finally {
      for (const b of bufs) b.destroy();
      await model.destroy();
    }
  });
}
