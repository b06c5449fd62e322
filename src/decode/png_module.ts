/**
 * Loads the AssemblyScript PNG decoder (wasm/png, built by build.ts) into a typed instance, as
 * wasm_module.ts does for JPEG, its module from wasm_bytes.ts. One compile per thread, then one
 * instance per decoder.
 */
import { CassetteError } from "../errors.ts";
import { compileWasm } from "./wasm_bytes.ts";

/** wasm/png/index.ts's abiVersion() that this host is written for. */
const ABI_VERSION = 1;

/** The flat numeric exports of wasm/png/index.ts. */
export interface PngExports {
  memory: WebAssembly.Memory;
  alloc(bytes: number): number;
  reset(): void;
  abiVersion(): number;
  /** 0 or an error code; flags: 1 grey, 2 keep 16-bit samples. */
  decode(src: number, len: number, maxPixels: number, flags: number): number;
  errorCode(): number;
  errorOffset(): number;
  errorExpected(): number;
  errorActual(): number;
  errorChunk(): number;
  outPtr(): number;
  outLen(): number;
  outChannels(): number;
  outBitDepth(): number;
  width(): number;
  height(): number;
  bitDepth(): number;
  colorType(): number;
  interlaced(): number;
  crc32(p: number, len: number): number;
  adler32(p: number, len: number): number;
}

let compiled: Promise<WebAssembly.Module> | undefined;

/** A fresh PNG decoder instance with its own memory. */
export async function instantiatePngWasm(): Promise<PngExports> {
  compiled ??= compileWasm("png");
  const instance = await WebAssembly.instantiate(await compiled, {
    env: {
      abort(_msg: number, _file: number, line: number, col: number) {
        throw new Error(`wasm/png aborted at line ${line}:${col}`);
      },
    },
  });
  const w = instance.exports as unknown as PngExports;
  const abi = w.abiVersion();
  if (abi !== ABI_VERSION) {
    throw new CassetteError("ERR_RUNTIME", `Cannot load the PNG decoder as wasm/build/png.wasm has interface version ${abi}, not ${ABI_VERSION}: rebuild it with 'bun build.ts'`);
  }
  return w;
}
