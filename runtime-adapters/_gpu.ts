/** Shared by the adapters: turn a `GPU` object into an adapter, with errors that say why. */
import { CassetteError } from "../src/errors.ts";
import type { GpuBackend, GpuRequest } from "./runtime.ts";

export async function adapterFrom(gpu: GPU | undefined, backend: GpuBackend, req: GpuRequest, hint: string): Promise<GPUAdapter> {
  if (!gpu) {
    throw new CassetteError("ERR_NO_GPU_ADAPTER", `Cannot get a WebGPU adapter as the ${backend} backend offers no navigator.gpu: ${hint}`);
  }
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: req.powerPreference });
  } catch (cause) {
    throw new CassetteError("ERR_NO_GPU_ADAPTER", `Cannot get a WebGPU adapter from the ${backend} backend: ${String(cause)}`, { cause });
  }
  if (!adapter) {
    throw new CassetteError(
      "ERR_NO_GPU_ADAPTER",
      `Cannot get a WebGPU adapter from the ${backend} backend as it found no usable GPU driver. ` +
        "On a machine without a GPU, install Mesa's lavapipe (mesa-vulkan-drivers ≥ 23, from bookworm-backports: bash tools/setup.sh); " +
        `check VK_ICD_FILENAMES (now ${envOr("VK_ICD_FILENAMES")}).`,
    );
  }
  // Dawn answers with its "null" backend when no driver loads (seen with bun-webgpu 0.1.5 and
  // VK_ICD_FILENAMES pointing nowhere): it accepts every command and computes nothing, so a
  // loader on it would train on garbage. Treat it as no adapter.
  const info = (adapter as { info?: GPUAdapterInfo }).info;
  if (info && /null-backend/i.test(`${info.device} ${info.description}`)) {
    throw new CassetteError(
      "ERR_NO_GPU_ADAPTER",
      `Cannot use the ${backend} backend's adapter as it is Dawn's null backend (no GPU driver loaded). ` +
        `Install Mesa's lavapipe (bash tools/setup.sh); check VK_ICD_FILENAMES (now ${envOr("VK_ICD_FILENAMES")}).`,
    );
  }
  return adapter;
}

/** The version of the `webgpu` package (Dawn for Node and Deno) that package.json pins as an optional peer. */
export const WEBGPU_PACKAGE = "webgpu@0.6.2";

/**
 * The `webgpu` package did not load. It is an optional peer dependency (its binaries for every
 * platform weigh ~130 MB, more than the rest of an install): where it is missing, the error
 * says how to add it.
 */
export function dawnMissing(runtime: string, cause: unknown): CassetteError {
  const text = String((cause as Error)?.message ?? cause);
  const missing = (cause as { code?: string })?.code === "ERR_MODULE_NOT_FOUND" || /Cannot find (package|module)|not found|Could not find/i.test(text);
  return new CassetteError(
    "ERR_NO_GPU_ADAPTER",
    missing
      ? `Cannot use WebGPU under ${runtime} as the 'webgpu' package (Dawn) is not installed: cassette lists it as an optional peer dependency. Install it with: npm install ${WEBGPU_PACKAGE}`
      : `Cannot load the 'webgpu' package (Dawn) under ${runtime}: ${text}`,
    { cause },
  );
}

function envOr(name: string): string {
  return (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[name] ?? "unset";
}

export function unknownBackend(runtime: string, backend: string, offered: readonly string[]): never {
  throw new CassetteError(
    "ERR_INVALID_OPTION",
    `Cannot use GPU backend '${backend}' in ${runtime}: offered backends are ${offered.join(", ")}`,
  );
}
