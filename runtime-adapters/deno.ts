/**
 * Deno: two WebGPU backends, Deno's built-in `navigator.gpu` (wgpu) and Dawn through the
 * `webgpu` N-API package; node:sqlite; web Workers. The default backend is the faster one
 * measured on our kernels (README, "WebGPU backends"; bench/gpu_backend.bench.ts).
 */
import { adapterFrom, dawnMissing, unknownBackend } from "./_gpu.ts";
import { cpuTimes, threadCpuMs, nodeSqlite, webWorker, webWorkerScope } from "./_shared.ts";
import type { GpuBackend, GpuRequest, Runtime } from "./runtime.ts";

let dawn: Promise<GPU> | undefined;
function dawnGpu(): Promise<GPU> {
  // An npm: specifier, so the import resolves from any Deno project that imports cassette,
  // not only from this repository's package.json (the version is the one package.json pins).
  dawn ??= import("npm:webgpu@0.6.2").then(({ create, globals }) => {
    for (const [k, v] of Object.entries(globals)) if (!(k in globalThis)) (globalThis as any)[k] = v;
    return create([]) as GPU;
  }, (cause) => {
    dawn = undefined;
    throw dawnMissing("Deno", cause);
  });
  return dawn;
}

// Dawn first: measured with our kernels (bench/gpu_backend.bench.ts, bench/RESULTS.md), the
// built-in wgpu moves a large batch 1.3× faster but each awaited submit costs ~12 ms (Dawn:
// ~0.25 ms) and a chain of 100 small dispatches runs 3.2× slower: a training step and the
// loader's per-batch handoff are made of exactly those.
const backends: GpuBackend[] = ["dawn", "builtin"];

export const deno: Runtime = {
  name: "deno",
  version: Deno.version.deno,
  gpuBackends: backends,
  async requestAdapter(req: GpuRequest = {}) {
    const backend = req.backend ?? backends[0];
    if (backend === "builtin") {
      return adapterFrom(
        (navigator as Navigator).gpu,
        "builtin",
        req,
        "run deno with --unstable-webgpu (cassette's deno.json sets it)",
      );
    }
    if (backend === "dawn") {
      let gpu: GPU;
      try {
        gpu = await dawnGpu();
      } catch (e) {
        // Dawn is an optional peer: without it, the default falls back to Deno's own WebGPU.
        if (req.backend === undefined && (navigator as Navigator).gpu) return adapterFrom((navigator as Navigator).gpu, "builtin", req, "");
        throw e;
      }
      return adapterFrom(gpu, "dawn", req, "the webgpu package did not load");
    }
    unknownBackend("deno", backend, backends);
  },
  openSqlite: nodeSqlite,
  spawnWorker: webWorker,
  workerScope: webWorkerScope,
  readFile: (p) => Deno.readFile(p),
  writeFile: (p, d) => Deno.writeFile(p, d),
  now: () => performance.now(),
  cpuTimes,
  threadCpuMs,
  args: () => [...Deno.args],
  cwd: () => Deno.cwd(),
  env: (n) => Deno.env.get(n),
  exit: (c) => Deno.exit(c),
  // deno.json (found from the cwd) carries the unstable flags and nodeModulesDir.
  scriptCommand: (script, args = []) => [Deno.execPath(), "run", "-A", script, ...args],
};
