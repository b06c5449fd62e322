/**
 * Where a training step's time goes: every dispatch of a model's step (forward, loss,
 * backward, optimizer), as the model plans it, timed on its own, a few runs each after one
 * warm-up, with the model's initial weights on a random batch. Prints each kernel's share.
 *
 *   bun bench/train/step_profile.ts [--model cnn] [--batch 128] [--runs 5]
 */
import { deviceInfo, requestDevice } from "../../src/gpu/device.ts";
import { createModel } from "../../src/train/model.ts";
import { Program } from "../../src/train/program.ts";
import { benchArgs } from "../_lib/args.ts";

const args = benchArgs({ program: "bench/train/step_profile.ts", usage: "usage: bun bench/train/step_profile.ts [--model cnn] [--batch 128] [--runs 5]", valued: ["model", "batch", "runs"] });
const name = args.str("model", "cnn"), B = args.int("batch", 128), runs = args.int("runs", 5);
const device = await requestDevice();
console.log(`${deviceInfo(device)!.runtime}; adapter: ${deviceInfo(device)!.adapter}; model ${name}, batch ${B}`);

const model = createModel(device, name);
// One real step first: it plans the batch and loads random pixels and labels into its input.
const size = B * model.spec.input.reduce((a, b) => a * b, 1);
const x = device.createBuffer({ size: size * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
device.queue.writeBuffer(x, 0, Float32Array.from({ length: size }, () => Math.random() * 2 - 1));
await model.trainStep({ x, labels: Uint32Array.from({ length: B }, () => Math.floor(Math.random() * model.classes)), n: B });
await model.flush();
const steps = await model._stepDispatches(B);

const time = async (p: Program) => {
  await p.run(device);
  let best = Infinity;
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    await p.run(device);
    best = Math.min(best, performance.now() - t0);
  }
  return best;
};
const rows: { label: string; ms: number }[] = [];
for (const [i, d] of steps.entries()) rows.push({ label: `${String(i).padStart(2)} ${d.kernel.spec.name}`, ms: await time(await Program.build(device, [d])) });
const whole = await time(await Program.build(device, steps));
const sum = rows.reduce((a, r) => a + r.ms, 0);
for (const r of rows) console.log(`${r.label.padEnd(40)} ${r.ms.toFixed(2).padStart(8)} ms ${(100 * r.ms / sum).toFixed(1).padStart(5)} %`);
console.log(`sum of dispatches ${sum.toFixed(1)} ms; the whole step (one pass) ${whole.toFixed(1)} ms = ${(B / whole * 1000).toFixed(0)} img/s`);
await model.destroy();
x.destroy();
device.destroy();
