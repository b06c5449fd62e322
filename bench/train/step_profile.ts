/**
 * Where a training step's time goes: every dispatch of a model's step (forward, loss, backward;
 * the optimizer is one dispatch over all parameters and is left out) timed on its own, a few
 * runs each after one warm-up, on random inputs. Prints each kernel's share of the step.
 *
 *   bun bench/train/step_profile.ts [--model cnn] [--batch 128] [--runs 5]
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { deviceInfo, requestDevice } from "../../src/gpu/device.ts";
import { describe, fusesRelu, planLayer } from "../../src/train/layers.ts";
import { modelSpec } from "../../src/train/models.ts";
import { Program } from "../../src/train/program.ts";
import type { Dispatch } from "../../src/train/program.ts";
import { softmaxXent } from "../../src/train/ops/softmax_xent.ts";
import { createTensor } from "../../src/train/tensor.ts";
import type { Tensor } from "../../src/train/tensor.ts";

const args = runtime.args();
const opt = (name: string, def: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const name = opt("--model", "cnn"), B = Number(opt("--batch", "128")), runs = Number(opt("--runs", "5"));
const device = await requestDevice();
console.log(`${deviceInfo(device)!.runtime}; adapter: ${deviceInfo(device)!.adapter}; model ${name}, batch ${B}`);

const spec = modelSpec(name);
const random = (t: Tensor, scale = 1) => {
  const v = new Float32Array(t.size).map(() => (Math.random() * 2 - 1) * scale);
  device.queue.writeBuffer(t.buffer, t.offset, v);
};
let shape = spec.input;
let x = createTensor(device, [B, ...shape], "input");
random(x);
const labelled: [string, Dispatch][] = [];
const plans = spec.layers.map((l, i) => {
  const d = describe(l, shape, i);
  const params = d.params.map((p) => createTensor(device, p.shape, p.name));
  const grads = d.params.map((p) => createTensor(device, p.shape, `${p.name}/grad`));
  const state = d.state.map((s) => createTensor(device, s.shape, s.name));
  params.forEach((p) => random(p, 0.1));
  const plan = planLayer(l, { device, batch: B, x, output: d.output, params, grads, state, inputRelu: i > 0 && fusesRelu(spec.layers[i - 1]) });
  for (const f of plan.train) labelled.push([`${i} ${l.kind} fwd ${f.kernel.spec.name}`, f]);
  shape = d.output;
  const input = x;
  x = plan.y;
  return { plan, input, kind: l.kind };
});
const labels = createTensor(device, [B], "labels", "u32");
device.queue.writeBuffer(labels.buffer, 0, new Uint32Array(B).map(() => Math.floor(Math.random() * 10)));
let dy = createTensor(device, x.shape, "dlogits");
labelled.push(["loss softmax_xent", softmaxXent(x, labels, dy, createTensor(device, [3], "stats"))]);
for (let i = plans.length - 1; i >= 0; i--) {
  const dx = i > 0 ? createTensor(device, plans[i].input.shape, `d${i}`) : null;
  for (const b of plans[i].plan.backward(dy, dx, !!plans[i + 1]?.plan.gatesInputRelu)) labelled.push([`${i} ${plans[i].kind} bwd ${b.kernel.spec.name}`, b]);
  if (dx) dy = dx;
}
const rows: { label: string; ms: number }[] = [];
for (const [label, d] of labelled) {
  const p = await Program.build(device, [d]);
  await p.run(device);
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    await p.run(device);
    times.push(performance.now() - t0);
  }
  rows.push({ label, ms: times.sort((a, b) => a - b)[0] });
}
const whole = await Program.build(device, labelled.map(([, d]) => d));
await whole.run(device);
let best = Infinity;
for (let r = 0; r < runs; r++) {
  const t0 = performance.now();
  await whole.run(device);
  best = Math.min(best, performance.now() - t0);
}
const sum = rows.reduce((a, r) => a + r.ms, 0);
for (const r of rows) console.log(`${r.label.padEnd(52)} ${r.ms.toFixed(2).padStart(8)} ms ${(100 * r.ms / sum).toFixed(1).padStart(5)} %`);
console.log(`sum of dispatches ${sum.toFixed(1)} ms; the whole step (one pass, no optimizer) ${best.toFixed(1)} ms = ${(B / best * 1000).toFixed(0)} img/s`);
device.destroy();
