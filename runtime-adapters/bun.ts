/** Bun: Dawn through `bun-webgpu` (bun:ffi), bun:sqlite, web Workers. */
import { constants, Database } from "bun:sqlite";
import { adapterFrom, unknownBackend } from "./_gpu.ts";
import { cpuTimes, threadCpuMs, replaceFile, immutableUri, toPath, webWorker, webWorkerScope } from "./_shared.ts";
import type { GpuRequest, Runtime, SqliteValue } from "./runtime.ts";

declare const Bun: any;

let dawn: Promise<GPU | undefined> | undefined;
function dawnGpu(): Promise<GPU | undefined> {
  // Not the N-API `webgpu` package: it segfaults Bun 1.4.5 once an awaited dispatch runs for
  // more than a few tens of ms (tools/repro/bun_napi_dawn_crash.mjs). bun-webgpu does not.
  dawn ??= import("bun-webgpu").then(({ setupGlobals }) => {
    setupGlobals();
    return (globalThis.navigator as Navigator | undefined)?.gpu;
  });
  return dawn;
}

/**
 * bun-webgpu 0.1.5 fills limits missing from `requiredLimits` with browser defaults and then
 * checks them against the adapter, so asking for any limit fails on lavapipe, whose adapter
 * reports 0 for the per-stage vertex/fragment storage limits ("Value must be between 0 and 0,
 * got 8"). Filling those from the adapter's own values gives what the spec means.
 */
function withCompleteLimits(adapter: GPUAdapter): GPUAdapter {
  const request = adapter.requestDevice.bind(adapter);
  adapter.requestDevice = (desc: GPUDeviceDescriptor = {}) => {
    if (!desc.requiredLimits) return keepingPackedBuffers(() => request(desc)).then(compilingSafely);
    const limits: Record<string, number> = { ...(desc.requiredLimits as Record<string, number>) };
    for (const k in adapter.limits) {
      const v = (adapter.limits as unknown as Record<string, unknown>)[k];
      if (v === 0 && !(k in limits)) limits[k] = 0;
    }
    return keepingPackedBuffers(() => request({ ...desc, requiredLimits: limits })).then(compilingSafely);
  };
  return adapter;
}

/**
 * The same for what a compile packs: bun-webgpu 0.1.5 encodes a shader's code, a pipeline's
 * entry point and its constants' names with a TextEncoder and hands Dawn the bytes' address
 * only (node_modules/bun-webgpu/index.js, the "char*" packer: `ptr(encoder.encode(val))`), so
 * a collection in between freed the code Dawn parsed: "Error while parsing WGSL: :1:1 error:
 * null character found" (1 compile in ~150 after `Bun.gc(false)`, test/gpu/shader_compile.test.ts;
 * once in a CI run's model test).
 */
function compilingSafely(device: GPUDevice): GPUDevice {
  const d = device as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const name of ["createShaderModule", "createComputePipeline", "createComputePipelineAsync"]) {
    const call = d[name].bind(device);
    d[name] = (...args: unknown[]) => keepingPackedBuffers(() => call(...args));
  }
  return device;
}

/**
 * bun-webgpu 0.1.5 packs a device descriptor into ArrayBuffers (the descriptor itself and,
 * behind pointers, its required limits and features) and passes Dawn only their addresses
 * (`ptr()`): nothing keeps those buffers reachable. A garbage collection between packing and
 * `wgpuAdapterRequestDevice` frees them, and Dawn reads the allocator's free-list link as
 * `nextInChain`: "Unexpected chained struct of type SType::16384 found on Limits chain" (16384 is
 * lavapipe's maxTextureDimension1D at offset 8 of the freed limits struct the link points to) or
 * "SType::0 … on DeviceDescriptor chain": reported for 1 train.ts run in 20, and 2 or 3 opens in
 * 100 right after `Bun.gc(false)` (test/gpu/device_open.test.ts). Packing and the FFI call happen synchronously
 * inside `requestDevice`, so every ArrayBuffer constructed during that call is held here until
 * Dawn has answered.
 */
function keepingPackedBuffers<T>(call: () => T): T {
  const Native = globalThis.ArrayBuffer;
  const encode = TextEncoder.prototype.encode;
  const kept: unknown[] = [];
  // Strings are packed through a TextEncoder: its outputs are held too.
  TextEncoder.prototype.encode = function (this: TextEncoder, input?: string) {
    const bytes = encode.call(this, input);
    kept.push(bytes);
    return bytes;
  };
  // A Proxy, not a subclass: `x instanceof ArrayBuffer` stays true for buffers made before.
  globalThis.ArrayBuffer = new Proxy(Native, {
    construct(target, args) {
      const b = Reflect.construct(target, args) as ArrayBuffer;
      kept.push(b);
      return b;
    },
  });
  let answer: T;
  try {
    answer = call();
  } finally {
    globalThis.ArrayBuffer = Native;
    TextEncoder.prototype.encode = encode;
  }
  // A promise's packing may be read until it settles: `kept` stays reachable until then.
  if (answer instanceof Promise) return answer.finally(() => void kept.length) as T;
  void kept.length;
  return answer;
}

export const bun: Runtime = {
  name: "bun",
  version: Bun.version,
  gpuBackends: ["dawn"],
  async requestAdapter(req: GpuRequest = {}) {
    const backend = req.backend ?? "dawn";
    if (backend !== "dawn") unknownBackend("bun", backend, this.gpuBackends);
    const adapter = await adapterFrom(await dawnGpu(), "dawn", req, "bun-webgpu did not set navigator.gpu");
    return withCompleteLimits(adapter);
  },
  openSqlite(path, options = {}) {
    // A URI needs its flag, which bun:sqlite's options object has no name for; positional `?`
    // parameters, all a read uses, bind the same without `strict`.
    const db = options.immutable
      ? new Database(immutableUri(path), constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI)
      : new Database(path, { create: true, strict: true });
    return {
      exec: (sql) => void db.exec(sql),
      prepare(sql) {
        // query(), not prepare(): one statement per distinct SQL, which close() can finalize. A
        // statement left unfinalized keeps bun:sqlite's close() from closing at all, so the
        // write-ahead log was never folded into the file until the process exited.
        const st = db.query(sql);
        return {
          run: (...p: SqliteValue[]) => ({ changes: st.run(...p).changes }),
          all: (...p: SqliteValue[]) => st.all(...p),
          get: (...p: SqliteValue[]) => st.get(...p) ?? undefined,
        };
      },
      close: () => db.close(),
    };
  },
  spawnWorker: webWorker,
  workerScope: webWorkerScope,
  readFile: async (p) => await Bun.file(toPath(p)).bytes(),
  writeFile: async (p, d) => void (await Bun.write(toPath(p), d)),
  replaceFile,
  now: () => performance.now(),
  cpuTimes,
  threadCpuMs,
  args: () => Bun.argv.slice(2),
  cwd: () => process.cwd(),
  env: (n) => Bun.env[n],
  exit: (c) => process.exit(c),
  scriptCommand: (script, args = []) => [process.execPath, script, ...args],
};
