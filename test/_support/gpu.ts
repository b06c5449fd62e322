/** GPU helpers for tests: one device per test file, poisoned outputs, f32 comparison. */
import { requestDevice } from "../../src/gpu/device.ts";
import type { GpuBackend } from "../../runtime-adapters/index.ts";
import { afterAll } from "./harness.ts";

const devices = new Map<string, Promise<GPUDevice>>();
/**
 * One device per backend (and feature list) per test file; the default backend when none is
 * named. `features` are enabled where the adapter has them: check `device.features`.
 */
export function testDevice(backend?: GpuBackend, features: GPUFeatureName[] = []): Promise<GPUDevice> {
  const key = `${backend ?? "default"} ${features.join(",")}`;
  let device = devices.get(key);
  if (!device) {
    devices.set(key, (device = requestDevice({ backend, features })));
    afterAll(async () => (await device!).destroy());
  }
  return device;
}

/** An output buffer filled with NaN first, so a kernel that skips elements cannot pass. */
export function poisonedBuffer(d: GPUDevice, bytes: number): GPUBuffer {
  const b = d.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
  new Float32Array(b.getMappedRange()).fill(NaN);
  b.unmap();
  return b;
}

/**
 * Throws with seed, index and max difference when `got` and `want` differ by more than `tol`
 * (one bound for all, or one per element).
 */
export function assertClose(got: Float32Array, want: ArrayLike<number>, tol: number | ArrayLike<number>, seed: number): void {
  if (got.length !== want.length) throw new Error(`length ${got.length} ≠ ${want.length} (seed ${seed})`);
  const bound = typeof tol === "number" ? () => tol : (i: number) => tol[i];
  let worst = -1, worstDiff = 0;
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= bound(i)) && (worst < 0 || !(d <= worstDiff))) {
      worst = i;
      worstDiff = d;
    }
  }
  if (worst >= 0) {
    throw new Error(`max diff ${worstDiff} > ${bound(worst)} at ${worst}: got ${got[worst]}, want ${want[worst]} (seed ${seed}; rerun with CASSETTE_SEED=${seed})`);
  }
}
