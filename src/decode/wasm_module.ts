/**
 * Loads the AssemblyScript decoder (wasm/jpeg, built by build.ts) into a typed instance.
 * The bytes come from a generated module, so loading needs no file access and works the same
 * from source, from the bundle, and inside workers. One compile per thread, then instances.
 */
import base64 from "../../wasm/build/jpeg_wasm.ts";

/** The flat numeric exports of wasm/jpeg/index.ts. */
export interface JpegExports {
  memory: WebAssembly.Memory;
  alloc(bytes: number): number;
  reset(): void;
  idct8x8(src: number, dst: number, stride: number): void;
}

let compiled: Promise<WebAssembly.Module> | undefined;

/** A fresh decoder instance with its own memory. */
export async function instantiateJpegWasm(): Promise<JpegExports> {
  compiled ??= WebAssembly.compile(decodeBase64(base64));
  const instance = await WebAssembly.instantiate(await compiled, {
    env: {
      abort(_msg: number, _file: number, line: number, col: number) {
        throw new Error(`wasm/jpeg aborted at line ${line}:${col}`);
      },
    },
  });
  return instance.exports as unknown as JpegExports;
}

function decodeBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
