/**
 * What cassette needs from a JavaScript runtime. One implementation per runtime (deno.ts,
 * bun.ts, node.ts, browser.ts); `index.ts` picks one of the first three once, and the browser
 * graph has `index.browser.ts` in its place (ARCHITECTURE.md, "The browser graph"). Nothing outside this folder asks which
 * runtime it runs on: it asks `runtime` for what it needs.
 */

/** Which WebGPU implementation gives the device. */
export type GpuBackend =
  /** Google's Dawn: `webgpu` (N-API) in Node and Deno, `bun-webgpu` (bun:ffi) in Bun. */
  | "dawn"
  /** The runtime's own `navigator.gpu` (wgpu in Deno). */
  | "builtin";

export interface GpuRequest {
  /** Default: the runtime's fastest measured backend (see README, "WebGPU backends"). */
  backend?: GpuBackend;
  powerPreference?: GPURequestAdapterOptions["powerPreference"];
  requiredFeatures?: GPUFeatureName[];
  requiredLimits?: Record<string, number>;
}

/** A prepared SQLite statement; parameters are positional (`?`). */
export interface SqliteStatement {
  run(...params: SqliteValue[]): { changes: number };
  all(...params: SqliteValue[]): Record<string, SqliteValue>[];
  get(...params: SqliteValue[]): Record<string, SqliteValue> | undefined;
}
export type SqliteValue = string | number | bigint | Uint8Array | null;

/** The part of an embedded SQLite database cassette uses, the same on every runtime. */
export interface SqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
}

/** A module worker with the web `Worker` surface, on every runtime. */
export interface WorkerHandle {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((err: Error) => void) | null;
  terminate(): void;
}

/** The worker side of a `WorkerHandle`. */
export interface WorkerScope {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  onMessage(handler: (data: unknown) => void): void;
}

export interface Runtime {
  readonly name: "deno" | "bun" | "node" | "browser";
  readonly version: string;
  /** Backends this runtime offers, the default first. */
  readonly gpuBackends: readonly GpuBackend[];
  /** Adapter + device, or a CassetteError (ERR_NO_GPU_ADAPTER / ERR_GPU_DEVICE). */
  requestAdapter(req?: GpuRequest): Promise<GPUAdapter>;
  /**
   * Opens (making it when absent) the SQLite file at `path`; with `immutable`, reads it only,
   * as a file nothing changes while it is open (SQLite's `immutable=1`: no locks, no -wal or
   * -shm files), which is how a WAL file on read-only media can be read at all.
   */
  openSqlite(path: string, options?: { immutable?: boolean }): SqliteDatabase;
  spawnWorker(url: URL): WorkerHandle;
  /** Only meaningful inside a worker started by `spawnWorker`. */
  workerScope(): WorkerScope;
  readFile(path: string | URL): Promise<Uint8Array>;
  writeFile(path: string | URL, data: Uint8Array): Promise<void>;
  /** Writes `data` beside `path` and renames it over it: a run killed mid-write keeps the last whole file. */
  replaceFile(path: string | URL, data: Uint8Array): Promise<void>;
  /** Monotonic milliseconds (never goes back when the wall clock is set). */
  now(): number;
  /** CPU time of the whole machine so far, summed over its cores (zeros where the runtime does not say). */
  cpuTimes(): { cores: number; idleMs: number; totalMs: number };
  /** The calling thread's CPU time so far in ms, or NaN where the OS does not say (Linux does). */
  threadCpuMs(): number;
  /** Command-line arguments after the script. */
  args(): string[];
  cwd(): string;
  env(name: string): string | undefined;
  exit(code: number): never;
  /** argv that runs `script` in this same runtime with cassette's flags (tests, workers). */
  scriptCommand(script: string, args?: string[]): string[];
}
