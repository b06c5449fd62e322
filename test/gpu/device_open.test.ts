/**
 * Opening devices over and over, as every test file and every train.ts run does. Under Bun,
 * bun-webgpu 0.1.5 handed Dawn the addresses of descriptor buffers nothing kept alive, so a
 * garbage collection during requestDevice made 2 or 3 opens in 100 fail here with "Unexpected
 * chained struct of type SType::16384 found on Limits chain" (runtime-adapters/bun.ts,
 * keepingPackedBuffers).
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const OPENS = 100;

/** Starts a collection that runs on while the next request is packed; only Bun offers one without flags. */
function collectSoon(): void {
  (globalThis as { Bun?: { gc(sync: boolean): void } }).Bun?.gc(false);
}

for (const backend of runtime.gpuBackends) {
  test(`${OPENS} devices open and close in a row, each asking for the adapter's storage limits, a collection started before each (${backend})`, async () => {
    const failures = new Map<string, number>();
    for (let i = 0; i < OPENS; i++) {
      const adapter = await runtime.requestAdapter({ backend });
      // The limits src/gpu/device.ts asks for.
      const requiredLimits = {
        maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxBufferSize: adapter.limits.maxBufferSize,
        maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
      };
      collectSoon();
      let device: GPUDevice;
      try {
        device = await adapter.requestDevice({ requiredLimits });
      } catch (e) {
        const why = String(e).split("\n")[0];
        failures.set(why, (failures.get(why) ?? 0) + 1);
        continue;
      }
      for (const [k, v] of Object.entries(requiredLimits)) {
        assert.is(device.limits[k as keyof typeof requiredLimits], v, `open ${i + 1}: the device has the ${k} it asked for`);
      }
      device.destroy();
    }
    assert.equal(Object.fromEntries(failures), {}, `failed opens of ${OPENS}, by message`);
  });
}
