import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, poisonedBuffer, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { normalizeRef } from "../reference/normalize.ts";
import { readBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { encodeNormalize } from "../../src/gpu/normalize.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../../src/errors.ts";
import { grid } from "../../src/gpu/kernel.ts";

for (const backend of runtime.gpuBackends) {
test(`normalize_u8 matches the CPU reference on random bytes of random sizes and channels (${backend})`, async () => {
  const device = await testDevice(backend);
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 4; round++) {
    const channels = randomInt(next, 1, 4);
    const count = randomInt(next, 1, 70_000); // odd sizes exercise the 4-bytes-per-word tail
    const bytes = randomBytes(next, count);
    const mean = Array.from({ length: channels }, () => next());
    const std = Array.from({ length: channels }, () => 0.1 + next());
    const src = uploadBuffer(device, bytes);
    const dst = poisonedBuffer(device, count * 4);
    const enc = device.createCommandEncoder();
    const params = await encodeNormalize(device, enc, src, dst, count, { channels, mean, std });
    device.queue.submit([enc.finish()]);
    const got = new Float32Array(await readBuffer(device, dst, count * 4));
    // f32 math on both sides of a divide: a few ulps of values up to ~10.
    assertClose(got, normalizeRef(bytes, channels, mean, std), 1e-5, seed);
    for (const b of [src, dst, params]) b.destroy();
  }
});
}

test("a kernel refuses a buffer larger than the device's binding limit, naming the binding", async () => {
  const device = await testDevice();
  const limit = device.limits.maxStorageBufferBindingSize;
  const src = uploadBuffer(device, new Uint8Array(8));
  const big = device.createBuffer({ size: limit + 256, usage: GPUBufferUsage.STORAGE });
  try {
    await encodeNormalize(device, device.createCommandEncoder(), src, big, 8, { channels: 1, mean: [0], std: [1] });
    assert.unreachable("should throw");
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
    assert.match((e as Error).message, new RegExp(`binding 2 .*${limit}`));
  } finally {
    src.destroy();
    big.destroy();
  }
});

test("grid spreads workgroups over y only past 65535 in x", () => {
  assert.equal(grid(1, 256), [1, 1, 1]);
  assert.equal(grid(65535 * 256, 256), [65535, 1, 1]);
  assert.equal(grid(65535 * 256 + 1, 256), [65535, 2, 1]);
  assert.equal(grid(0, 64), [1, 1, 1]);
});

test("normalize_u8 rejects a std of zero with a clear error", async () => {
  const device = await testDevice();
  const enc = device.createCommandEncoder();
  const b = uploadBuffer(device, new Uint8Array(4));
  try {
    await encodeNormalize(device, enc, b, b, 4, { channels: 1, mean: [0], std: [0] });
    assert.unreachable("should throw");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.is((e as CassetteError).code, "ERR_INVALID_OPTION");
    assert.match((e as Error).message, /std/);
  } finally {
    b.destroy();
  }
});

test("requestDevice enables the asked features the adapter has, and only those", async () => {
  const { requestDevice } = await import("../../src/gpu/device.ts");
  const adapter = await runtime.requestAdapter();
  const asked: GPUFeatureName[] = ["shader-f16", "timestamp-query", "texture-compression-astc"];
  const d = await requestDevice({ features: asked });
  try {
    for (const f of asked) assert.is(d.features.has(f), adapter.features.has(f), f);
    assert.not.ok(d.features.has("texture-compression-astc"), "lavapipe has no ASTC: it must not be granted");
  } finally {
    d.destroy();
  }
});
