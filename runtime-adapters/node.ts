/** Node ≥ 22: Dawn through the `webgpu` N-API package, node:sqlite, worker_threads. */
import { readFile, writeFile } from "node:fs/promises";
import { Worker as NodeWorker, parentPort } from "node:worker_threads";
import process from "node:process";
import { adapterFrom, dawnMissing, unknownBackend } from "./_gpu.ts";
import { cpuTimes, threadCpuMs, replaceFile, nodeSqlite } from "./_shared.ts";
import type { GpuRequest, Runtime, WorkerHandle } from "./runtime.ts";

let dawn: Promise<GPU> | undefined;
function dawnGpu(): Promise<GPU> {
  // One Dawn instance per process: each instance owns a Vulkan instance and its threads.
  dawn ??= import("webgpu").then(({ create, globals }) => {
    Object.assign(globalThis, globals); // GPUBufferUsage and friends, as in a browser
    return create([]) as GPU;
  }, (cause) => {
    dawn = undefined; // installed meanwhile: the next request tries again
    throw dawnMissing("Node", cause);
  });
  return dawn;
}

const hooks = new URL("./node_hooks.mjs", import.meta.url).pathname;

export const node: Runtime = {
  name: "node",
  version: process.versions.node,
  gpuBackends: ["dawn"],
  async requestAdapter(req: GpuRequest = {}) {
    const backend = req.backend ?? "dawn";
    if (backend !== "dawn") unknownBackend("node", backend, this.gpuBackends);
    return adapterFrom(await dawnGpu(), "dawn", req, "the webgpu package did not load");
  },
  openSqlite: nodeSqlite,
  spawnWorker(url: URL): WorkerHandle {
    const w = new NodeWorker(url); // inherits execArgv, so the .wgsl hook and flags apply
    const h: WorkerHandle = {
      postMessage: (m, t) => w.postMessage(m, t as any),
      onmessage: null,
      onerror: null,
      terminate: () => void w.terminate(),
    };
    w.on("message", (data) => h.onmessage?.({ data }));
    w.on("error", (e) => h.onerror?.(e));
    return h;
  },
  workerScope() {
    const port = parentPort!;
    return {
      postMessage: (m, t) => port.postMessage(m, t as any),
      onMessage: (fn) => void port.on("message", fn),
    };
  },
  readFile: async (p) => new Uint8Array(await readFile(p)),
  writeFile: (p, d) => writeFile(p, d),
  replaceFile,
  now: () => performance.now(),
  cpuTimes,
  threadCpuMs,
  args: () => process.argv.slice(2),
  cwd: () => process.cwd(),
  env: (n) => process.env[n],
  exit: (c) => process.exit(c),
  scriptCommand: (script, args = []) => [
    process.execPath, "--import", hooks, "--disable-warning=ExperimentalWarning", script, ...args,
  ],
};
