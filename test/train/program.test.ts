import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { Program, uniforms } from "../../src/train/program.ts";
import { createTensor, TensorArena } from "../../src/train/tensor.ts";
import { reluKernel } from "../../src/train/ops/relu.ts";
import { tileSize } from "../../src/train/ops/_check.ts";
import { CassetteError } from "../../src/errors.ts";
import { read } from "./_helpers.ts";

test("a TensorArena packs tensors at aligned, non-overlapping offsets of one buffer, zero-filled", async () => {
  const device = await testDevice();
  const arena = new TensorArena(device);
  const shapes = [[3, 5], [1], [7, 2, 2], [64]];
  for (const s of shapes) arena.reserve(s);
  const { buffer, tensors } = arena.allocate(device);
  const align = device.limits.minStorageBufferOffsetAlignment;
  tensors.forEach((t, i) => {
    assert.is(t.offset % align, 0);
    assert.equal(t.shape, shapes[i]);
    if (i > 0) assert.ok(t.offset >= tensors[i - 1].offset + tensors[i - 1].bytes);
  });
  assert.ok((await read(device, tensors[2])).every((v) => v === 0));
  buffer.destroy();
});

test("Program and Tensor errors name the kernel, binding count and shapes", async () => {
  const device = await testDevice();
  const t = createTensor(device, [2, 3]);
  try {
    assert.throws(() => t.reshape([4, 2]), (e: Error) => e instanceof CassetteError && /reshape \[2,3\] \(6 values\) to \[4,2\] \(8 values\)/.test(e.message));
    assert.throws(() => createTensor(device, [2, 0]), (e: Error) => /positive integer: current shape is \[2,0\]/.test(e.message));
    try {
      await Program.build(device, [{ kernel: reluKernel, bindings: [uniforms([6]), t], workgroups: [1, 1, 1] }]);
      assert.unreachable("should throw");
    } catch (e) {
      assert.match((e as Error).message, /kernel train\/relu as it takes 3 bindings: got 2/);
    }
  } finally {
    t.buffer.destroy();
  }
});

test("tileSize: the fewest workgroups that cover n, then the smallest tile that fills them", () => {
  assert.equal([1, 2, 3, 5, 8, 9, 100].map((n) => tileSize(n)), [1, 2, 3, 5, 8, 5, 8]);
  // 144 conv taps (16 channels × 3×3) on 16 lanes: 2 groups of 5 taps a lane, not 8 and 1.
  assert.equal([tileSize(144, 8, 16), tileSize(10, 8, 16), tileSize(256, 8, 16)], [5, 1, 8]);
  for (let n = 1; n <= 300; n++) {
    for (const lanes of [1, 16]) {
      const t = tileSize(n, 8, lanes), groups = Math.ceil(n / (lanes * t));
      assert.ok(t >= 1 && t <= 8, `n ${n}, lanes ${lanes}: tile ${t}`);
      assert.is(groups, Math.ceil(n / (lanes * 8)), `n ${n}, lanes ${lanes}: no more groups than the largest tile needs`);
      assert.ok(groups * lanes * (t - 1) < n, `n ${n}, lanes ${lanes}: tile ${t} is not the smallest`);
    }
  }
});
