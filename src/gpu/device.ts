/**
 * A WebGPU device on any runtime: the runtime adapter picks the implementation, this file
 * asks for the limits cassette's kernels need and turns failures into CassetteErrors.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import type { GpuBackend } from "../../runtime-adapters/index.ts";
export type { GpuBackend };
import { CassetteError } from "../errors.ts";

/** How `requestDevice` opens a GPU device: the backend, power preference and optional features. */
export interface DeviceOptions {
  /**
   * "dawn" or "builtin" (Deno only); default: $CASSETTE_GPU_BACKEND, else the runtime's
   * faster backend (runtime.gpuBackends[0]).
   */
  backend?: GpuBackend;
  /** Which adapter to ask for, where the machine has several. */
  powerPreference?: "low-power" | "high-performance";
  /**
   * Features to enable when the adapter has them (e.g. "shader-f16", "timestamp-query");
   * the device's `features` says which were granted.
   */
  features?: GPUFeatureName[];
}

/** What was opened, for logs and benchmark reports. */
export interface DeviceInfo {
  /** The runtime and its version, e.g. "bun 1.4.5". */
  runtime: string;
  /** The WebGPU implementation in use: "dawn", or "builtin" (the runtime's own navigator.gpu). */
  backend: GpuBackend;
  /** The adapter's vendor, architecture, device and description as it reports them ("unknown" when it says nothing). */
  adapter: string;
  /**
   * Whether the adapter is a CPU driver (lavapipe/llvmpipe, SwiftShader, WARP): work sized for
   * a GPU would take minutes there, so callers such as train.ts pick smaller defaults.
   */
  cpu: boolean;
}

/** Adapter names of the software rasterizers that run "GPU" work on the CPU. */
const CPU_ADAPTER = /llvmpipe|lavapipe|swiftshader|software|microsoft basic render|warp/i;

const infos = new WeakMap<GPUDevice, DeviceInfo>();

/**
 * Opens a GPU device. Throws CassetteError `ERR_NO_GPU_ADAPTER` when no adapter exists.
 *
 * @example
 * ```ts
 * import { requestDevice, deviceInfo } from "cassette";
 * const device = await requestDevice();
 * const info = deviceInfo(device)!; // e.g. { runtime: "bun", backend: "dawn", adapter: "llvmpipe …", cpu: true } here
 * console.log(typeof info.adapter, typeof info.cpu); // string boolean
 * device.destroy();
 * ```
 */
export async function requestDevice(options: DeviceOptions = {}): Promise<GPUDevice> {
  const backend = options.backend ?? (runtime.env("CASSETTE_GPU_BACKEND") as GpuBackend | undefined) ?? runtime.gpuBackends[0];
  const adapter = await runtime.requestAdapter({ backend, powerPreference: options.powerPreference });
  // Ask for the adapter's own storage limits: default limits (128 MiB buffers) are too small
  // for a batch of large images, and lavapipe offers far more.
  const want = ["maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize"] as const;
  const requiredLimits: Record<string, number> = {};
  for (const k of want) requiredLimits[k] = adapter.limits[k];
  let device: GPUDevice;
  try {
    const requiredFeatures = (options.features ?? []).filter((f) => adapter.features.has(f));
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
  } catch (cause) {
    throw new CassetteError("ERR_GPU_DEVICE", `Cannot open a device on the ${backend} adapter: ${String(cause)}`, { cause });
  }
  const info = (adapter as { info?: GPUAdapterInfo }).info;
  const name = [info?.vendor, info?.architecture, info?.device, info?.description].filter(Boolean).join(" ") || "unknown";
  infos.set(device, {
    runtime: `${runtime.name} ${runtime.version}`,
    backend,
    adapter: name,
    cpu: CPU_ADAPTER.test(name) || isFallback(adapter),
  });
  return device;
}

// bun-webgpu 0.1.5's getter throws "Not implemented" (met on an H100, where the adapter's name
// alone does not say CPU): unknown is not a fallback.
function isFallback(adapter: GPUAdapter): boolean {
  try {
    return (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter === true;
  } catch {
    return false;
  }
}

/** Runtime, backend and adapter name of a device opened by `requestDevice`. */
export function deviceInfo(device: GPUDevice): DeviceInfo | undefined {
  return infos.get(device);
}

/** How long an implementation's error waits for `device.lost` to tell whether the device went. */
const LOST_WAIT_MS = 2000;

/**
 * `e` named as device loss (ERR_GPU_DEVICE) when `device` is lost, else `e` itself. A lost
 * device fails its work with the implementation's own errors (a mapAsync rejected, a
 * getMappedRange refused: "OperationError"), which do not say why; its `lost` promise does. It
 * settles some time after the loss, so such an error waits for it (up to LOST_WAIT_MS; our
 * own CassetteErrors are passed on at once). A
 * page loses its device when the GPU resets or its driver updates, when the browser reclaims
 * it (a tab long in the background), or on `device.destroy()`.
 */
export async function deviceLost(device: GPUDevice, e: unknown, doing: string): Promise<unknown> {
  // Our own named errors (a sample's, an option's) are not the device's: no wait for them.
  if (e instanceof CassetteError) return e;
  // The implementation's error (a failed map, an OperationError) can come before `lost`
  // settles, later on a busy machine: wait for it a while, on this rare path only.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const info = await Promise.race([device.lost, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), LOST_WAIT_MS)))]);
  clearTimeout(timer);
  if (!info) return e;
  const why = info.reason === "destroyed" ? "destroyed: device.destroy() was called" : `${info.reason ?? "unknown"}`;
  return new CassetteError(
    "ERR_GPU_DEVICE",
    `Cannot ${doing} as the GPU device was lost (${why}${info.message ? `; ${info.message}` : ""}): request a new device (requestDevice), make the model and preprocessor on it again, and go on from the last checkpoint`,
    { cause: e },
  );
}
