/** Bun: Dawn through `bun-webgpu` (bun:ffi), bun:sqlite, web Workers. */
import { constants, Database } from "bun:sqlite";
import { adapterFrom, unknownBackend } from "./_gpu.ts";
import { immutableUri, toPath, webWorker, webWorkerScope } from "./_shared.ts";
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
    if (!desc.requiredLimits) return request(desc);
    const limits: Record<string, number> = { ...(desc.requiredLimits as Record<string, number>) };
    for (const k in adapter.limits) {
      const v = (adapter.limits as unknown as Record<string, unknown>)[k];
      if (v === 0 && !(k in limits)) limits[k] = 0;
    }
    return request({ ...desc, requiredLimits: limits });
  };
  return adapter;
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
  now: () => performance.now(),
  args: () => Bun.argv.slice(2),
  cwd: () => process.cwd(),
  env: (n) => Bun.env[n],
  exit: (c) => process.exit(c),
  scriptCommand: (script, args = []) => [process.execPath, script, ...args],
};
