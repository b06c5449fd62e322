import { test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { adamwRef, sgdRef } from "../reference/train/optim.ts";
import { sgd, sgdParams } from "../../src/train/ops/sgd.ts";
import { adamw, adamwParams } from "../../src/train/ops/adamw.ts";
import { uploadBuffer } from "../../src/gpu/buffers.ts";
import { free, randomArray, read, runOnce, upload } from "./_helpers.ts";

test("sgd (momentum, weight decay) matches the reference over three steps", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const n = randomInt(next, 1, 3000);
  const w0 = randomArray(next, n), lr = 0.05, momentum = 0.9, wd = 1e-3;
  const W = upload(device, w0, [n]), V = upload(device, new Float32Array(n), [n]);
  const w = Float64Array.from(w0), v = new Float64Array(n);
  const params = uploadBuffer(device, new Uint8Array(sgdParams(n, lr, momentum, wd)), GPUBufferUsage.UNIFORM);
  for (let step = 0; step < 3; step++) {
    const g = randomArray(next, n);
    const Gt = upload(device, g, [n]);
    await runOnce(device, [sgd(params, W, Gt, V)]);
    sgdRef(w, g, v, lr, momentum, wd);
    free(Gt);
  }
  assertClose(await read(device, W), Float32Array.from(w), 1e-5, seed);
  assertClose(await read(device, V), Float32Array.from(v), 1e-5, seed);
  free(W, V);
  params.destroy();
});

test("adamw (bias correction per step, decoupled weight decay) matches the reference over three steps", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  const n = randomInt(next, 1, 3000);
  const h = { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 };
  const w0 = randomArray(next, n);
  const W = upload(device, w0, [n]), M = upload(device, new Float32Array(n), [n]), V = upload(device, new Float32Array(n), [n]);
  const w = Float64Array.from(w0), m = new Float64Array(n), v = new Float64Array(n);
  const params = device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  for (let t = 1; t <= 3; t++) {
    const g = randomArray(next, n);
    const Gt = upload(device, g, [n]);
    device.queue.writeBuffer(params, 0, adamwParams(n, h, t));
    await runOnce(device, [adamw(params, W, Gt, M, V)]);
    adamwRef(w, g, m, v, t, h);
    free(Gt);
  }
  assertClose(await read(device, W), Float32Array.from(w), 1e-5, seed);
  assertClose(await read(device, M), Float32Array.from(m), 1e-6, seed);
  assertClose(await read(device, V), Float32Array.from(v), 1e-6, seed);
  free(W, M, V);
  params.destroy();
});
