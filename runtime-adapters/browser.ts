/**
 * A web page (or a module worker it starts): the browser's own `navigator.gpu`, module
 * workers, `fetch`. No file system, no SQLite, no process: what needs them is refused with a
 * named error that says so. The browser graph reaches this file through `index.browser.ts`
 * (ARCHITECTURE.md, "The browser graph"), never through index.ts's detection.
 */
import { CassetteError } from "../src/errors.ts";
import { unknownBackend } from "./_gpu.ts";
import { webWorker, webWorkerScope } from "./_web.ts";
import type { GpuRequest, Runtime } from "./runtime.ts";

/**
 * How to get `navigator.gpu`, for the error of a page that has none. It exists only in a
 * secure context (https://, or http:// on localhost and 127.0.0.1), and where the browser ships
 * WebGPU: https://developer.mozilla.org/en-US/docs/Web/API/WebGPU_API#browser_compatibility.
 */
export const ENABLE_WEBGPU =
  "open the page over https:// or from localhost/127.0.0.1 (navigator.gpu exists only in a secure context) in a browser with WebGPU: " +
  "Chrome or Edge ≥ 113 on Windows, macOS and ChromeOS; on Linux start Chromium with --enable-unsafe-webgpu (and --enable-features=Vulkan for a hardware GPU); " +
  "Firefox ≥ 141 on Windows; Safari ≥ 26";

function refused(what: string): never {
  throw new CassetteError("ERR_UNSUPPORTED", `Cannot ${what} in a browser: a page has no file system (serve the data over http(s):// or s3://, as WebDataset shards: cassette export --format webdataset)`);
}

function fetchUrl(p: string | URL): string {
  return typeof p === "string" ? new URL(p, (globalThis as { location?: { href: string } }).location?.href).href : p.href;
}

export const browser: Runtime = {
  name: "browser",
  version: (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? "unknown",
  gpuBackends: ["builtin"],
  async requestAdapter(req: GpuRequest = {}) {
    const backend = req.backend ?? "builtin";
    if (backend !== "builtin") unknownBackend("a browser", backend, this.gpuBackends);
    const gpu = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
    if (!gpu) {
      throw new CassetteError("ERR_NO_GPU_ADAPTER", `Cannot get a WebGPU adapter as this page has no navigator.gpu: ${ENABLE_WEBGPU}`);
    }
    let adapter: GPUAdapter | null;
    try {
      adapter = await gpu.requestAdapter({ powerPreference: req.powerPreference });
    } catch (cause) {
      throw new CassetteError("ERR_NO_GPU_ADAPTER", `Cannot get a WebGPU adapter from this browser: ${String(cause)}`, { cause });
    }
    // Chromium on Linux without --enable-unsafe-webgpu, or started with --disable-gpu, or a
    // GPU on its blocklist: navigator.gpu is there, and answers null.
    if (!adapter) {
      throw new CassetteError("ERR_NO_GPU_ADAPTER", `Cannot get a WebGPU adapter as this browser answered none (WebGPU is off, or this GPU is on its blocklist: chrome://gpu says which): ${ENABLE_WEBGPU}`);
    }
    return adapter;
  },
  openSqlite: () => refused("open a SQLite file"),
  spawnWorker: webWorker,
  workerScope: webWorkerScope,
  // A page reads what it is given by URL (the decoders' transforms, a model's weights).
  async readFile(p) {
    const url = fetchUrl(p);
    const res = await fetch(url);
    if (!res.ok) throw new CassetteError("ERR_BAD_RESPONSE", `Cannot read ${url}: the server answered ${res.status} ${res.statusText}`);
    return new Uint8Array(await res.arrayBuffer());
  },
  writeFile: () => refused("write a file"),
  replaceFile: () => refused("write a file"),
  now: () => performance.now(),
  // A page is told neither the machine's CPU times nor a thread's: the scalers go by their
  // workers' own use (src/decode/scaler.ts), as where a runtime does not say.
  cpuTimes: () => ({ cores: Math.max(1, (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1), idleMs: 0, totalMs: 0 }),
  threadCpuMs: () => Number.NaN,
  args: () => [],
  cwd: () => "/",
  env: () => undefined,
  exit: (code) => {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot exit (code ${code}) in a browser: a page has no process`);
  },
  scriptCommand: () => refused("run a script as a command"),
};
