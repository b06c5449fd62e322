/**
 * Compiling shaders over and over, as every Program does. Under Bun, bun-webgpu 0.1.5 encodes a
 * shader's code (and a pipeline's entry point and constant names) into a buffer it hands Dawn
 * only by address, so a garbage collection between packing and the call freed the code Dawn
 * then read: "Error while parsing WGSL: :1:1 error: null character found" (a CI run's
 * test/train/model.test.ts, 2026-11-28). runtime-adapters/bun.ts keeps what such a call packs
 * alive until Dawn has it (keepingPackedBuffers); this checks it under collections started
 * right before each compile.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";

const COMPILES = 150;

/** Starts a collection that runs on while the next call packs; only Bun offers one without flags. */
function collectSoon(): void {
  (globalThis as { Bun?: { gc(sync: boolean): void } }).Bun?.gc(false);
}

test(`${COMPILES} shader modules and pipelines compiled in a row, a collection started before each: every one valid`, async () => {
  const device = await testDevice();
  const failures = new Map<string, number>();
  for (let i = 0; i < COMPILES; i++) {
    // A long comment: the code's buffer is a large allocation of its own, as a real kernel's is.
    const code = `// kernel ${i} ${"·".repeat(2000 + i)}\noverride SCALE: f32 = 1.0;\n@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n` +
      `@compute @workgroup_size(1) fn main_${i}() { x[0] = x[0] * SCALE; }\n`;
    collectSoon();
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ label: `compile-${i}`, code });
    collectSoon();
    device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: `main_${i}`, constants: { SCALE: 2 } } });
    const error = await device.popErrorScope();
    if (error) {
      const why = error.message.split("\n")[0];
      failures.set(why, (failures.get(why) ?? 0) + 1);
    }
  }
  assert.equal(Object.fromEntries(failures), {}, `failed compiles of ${COMPILES}, by message`);
});
