/** Helpers for the training-kernel tests: tensors from arrays, poisoned outputs, one-off runs. */
import { poisonedBuffer } from "../_support/gpu.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { Program } from "../../src/train/program.ts";
import type { Dispatch } from "../../src/train/program.ts";
import { Tensor, tensorFrom } from "../../src/train/tensor.ts";

/** Uniform values in [-1, 1). */
export function randomArray(next: () => number, n: number, scale = 1): Float32Array {
  return Float32Array.from({ length: n }, () => (2 * next() - 1) * scale);
}

export function upload(device: GPUDevice, data: Float32Array | Uint32Array, shape: number[]): Tensor {
  return tensorFrom(device, data, shape);
}

/** An output tensor filled with NaN, so a kernel that skips an element cannot pass. */
export function poisoned(device: GPUDevice, shape: number[]): Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  return new Tensor(poisonedBuffer(device, size * 4), shape);
}

export async function read(device: GPUDevice, t: Tensor): Promise<Float32Array> {
  if (t.offset === 0) return new Float32Array(await readBuffer(device, t.buffer, t.bytes));
  const all = new Float32Array(await readBuffer(device, t.buffer, t.offset + t.bytes));
  return all.slice(t.offset / 4, t.offset / 4 + t.size);
}

/** Builds, runs and frees a program of these dispatches. */
export async function runOnce(device: GPUDevice, dispatches: Dispatch[]): Promise<void> {
  const p = await Program.build(device, dispatches, "test");
  await p.run(device);
  p.destroy();
}

/** Destroys the buffers of these tensors. */
export function free(...ts: (Tensor | undefined)[]): void {
  for (const t of ts) t?.buffer.destroy();
}
