/**
 * Deno: two WebGPU backends, Deno's built-in `navigator.gpu` (wgpu) and Dawn through the
 * `webgpu` N-API package; node:sqlite; web Workers. The default backend is the faster one
 * measured on our kernels (README, "WebGPU backends"; bench/gpu_backend.bench.ts).
 */
import { adapterFrom, dawnMissing, unknownBackend } from "./_gpu.ts";
import { cpuTimes, threadCpuMs, replaceFile, nodeSqlite, webWorker, webWorkerScope } from "./_shared.ts";
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

/**
 * NOTE [ Dawn's limit notices ]
 * Dawn (in the webgpu package's dawn.node) prints, from native code straight to the process's
 * stderr, two lines each time an adapter is requested on a Vulkan driver with large limits
 * (lavapipe, the CPU driver), e.g.
 *   Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 1000000 to 16 to fit dynamic offset allocation limit.
 * They tell the user nothing to act on. No JS hook sees them, so while the adapter is requested
 * file descriptor 2 points at a temporary file (libc's dup/dup2 through Deno's FFI), and then
 * every line but those two notices is written to stderr. Without FFI permission (or on
 * Windows) nothing is filtered. Node has no FFI: there they still print.
 */
const DAWN_NOTICES = /^Warning: maxDynamic(Uniform|Storage)BuffersPerPipelineLayout artificially reduced from \d+ to \d+ to fit dynamic offset allocation limit\.\n/gm;

/** Whether fd 2 is pointed elsewhere now: a second request meanwhile is not filtered (nesting would lose stderr). */
let filtering = false;

async function withoutDawnNotices<T>(request: () => Promise<T>): Promise<T> {
  const granted = (name: "ffi" | "read" | "write") => Deno.permissions.querySync?.({ name }).state === "granted";
  if (filtering || Deno.build.os === "windows" || !granted("ffi") || !granted("read") || !granted("write")) return request();
  let libc: Deno.DynamicLibrary<{ open: { parameters: ["buffer", "i32"]; result: "i32" }; dup: { parameters: ["i32"]; result: "i32" }; dup2: { parameters: ["i32", "i32"]; result: "i32" }; close: { parameters: ["i32"]; result: "i32" } }>;
  try {
    libc = Deno.dlopen(Deno.build.os === "darwin" ? "libSystem.dylib" : "libc.so.6", {
      open: { parameters: ["buffer", "i32"], result: "i32" },
      dup: { parameters: ["i32"], result: "i32" },
      dup2: { parameters: ["i32", "i32"], result: "i32" },
      close: { parameters: ["i32"], result: "i32" },
    });
  } catch {
    return request();
  }
  const path = Deno.makeTempFileSync({ prefix: "cassette-dawn-" });
  const O_WRONLY = 1; // the same on Linux and macOS; the file exists already
  const fd = libc.symbols.open(new TextEncoder().encode(`${path}\0`), O_WRONLY);
  const saved = fd >= 0 ? libc.symbols.dup(2) : -1;
  if (saved < 0 || libc.symbols.dup2(fd, 2) < 0) {
    if (fd >= 0) libc.symbols.close(fd);
    if (saved >= 0) libc.symbols.close(saved);
    libc.close();
    Deno.removeSync(path);
    return request();
  }
  filtering = true;
  try {
    return await request();
  } finally {
    filtering = false;
    libc.symbols.dup2(saved, 2);
    libc.symbols.close(saved);
    libc.symbols.close(fd);
    libc.close();
    const text = Deno.readTextFileSync(path);
    Deno.removeSync(path);
    // Everything else as it was written (a progress line's \r included), the notices' lines out.
    const kept = text.replace(DAWN_NOTICES, "");
    if (kept) Deno.stderr.writeSync(new TextEncoder().encode(kept));
  }
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
      return withoutDawnNotices(() => adapterFrom(gpu, "dawn", req, "the webgpu package did not load"));
    }
    unknownBackend("deno", backend, backends);
  },
  openSqlite: nodeSqlite,
  spawnWorker: webWorker,
  workerScope: webWorkerScope,
  readFile: (p) => Deno.readFile(p),
  writeFile: (p, d) => Deno.writeFile(p, d),
  replaceFile,
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
