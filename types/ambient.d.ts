// What tsconfig.types.json's program (build.ts emits the package's declarations from it) needs
// beyond its libs, @types/node and @webgpu/types to check clean: .wgsl text imports and the
// runtime-specific modules and globals of runtime-adapters/. None of them reaches a public
// declaration (each adapter is typed by the Runtime interface, runtime-adapters/runtime.ts);
// test/dist/package_checks.test.ts checks this program with tsc. Not part of the package.

/** WGSL sources imported as text (esbuild's text loader; Deno's raw imports). */
declare module "*.wgsl" {
  const text: string;
  export default text;
}

/** Bun's built-in SQLite (runtime-adapters/bun.ts); Bun's own types are not installed. */
declare module "bun:sqlite";

/** Deno's npm: specifier for the N-API WebGPU binding (runtime-adapters/deno.ts): the same package as `webgpu`. */
declare module "npm:webgpu@*" {
  export * from "webgpu";
}

/**
 * The part of Deno's namespace runtime-adapters/deno.ts uses, as Deno declares it. Deno's own
 * lib types (`deno types`) conflict with lib.dom, so they are not loaded here; a use of another
 * member fails this program's check (test/dist/package_checks.test.ts) until it is added.
 */
declare namespace Deno {
  const version: { deno: string };
  const args: string[];
  const env: { get(key: string): string | undefined };
  function readFile(path: string | URL): Promise<Uint8Array>;
  function writeFile(path: string | URL, data: Uint8Array): Promise<void>;
  function cwd(): string;
  function exit(code?: number): never;
  function execPath(): string;
  // The Dawn-notice filter (withoutDawnNotices): permissions, FFI to libc, a temporary file, stderr.
  const permissions: { querySync?(desc: { name: "ffi" | "read" | "write" }): { state: "granted" | "denied" | "prompt" } };
  const build: { os: string };
  interface DynamicLibrary<S> {
    symbols: { [K in keyof S]: (...args: any[]) => number };
    close(): void;
  }
  function dlopen<S>(path: string, symbols: S): DynamicLibrary<S>;
  function makeTempFileSync(options?: { prefix?: string }): string;
  function removeSync(path: string): void;
  function readTextFileSync(path: string): string;
  const stderr: { writeSync(data: Uint8Array): number };
}
