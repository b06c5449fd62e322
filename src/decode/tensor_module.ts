/**
 * The CPU tensor's resampler (wasm/tensor, built by build.ts), one instance per thread, made
 * on first use. Compiled synchronously from the base64 module build.ts generates: it is under
 * 2 kB, within what a page's main thread may compile that way (browsers refuse synchronous
 * compiles of larger modules there), so cpuTensor stays a plain function on every runtime.
 */
import bytes from "../../wasm/build/tensor_wasm.ts";
import { CassetteError } from "../errors.ts";
import { decodeBase64 } from "../util/base64.ts";

/** Bumped with wasm/tensor/index.ts's abiVersion. */
const ABI_VERSION = 1;

export interface TensorExports {
  memory: WebAssembly.Memory;
  alloc(bytes: number): number;
  reset(): void;
  abiVersion(): number;
  across(src: number, stride: number, ic: number, rows: number, lo: number, count: number, start: number, w: number, W: number, out: number): void;
  down(across: number, W: number, lo: number, count: number, start: number, w: number, H: number, rowLo: number, dst: number, C: number, nhwc: number, grey: number, norm: number, acc: number): void;
}

let instance: TensorExports | undefined;

/** This thread's resampler. */
export function tensorWasm(): TensorExports {
  if (instance) return instance;
  const made = new WebAssembly.Instance(new WebAssembly.Module(decodeBase64(bytes)), {
    env: {
      abort(_msg: number, _file: number, line: number, col: number) {
        throw new Error(`wasm/tensor aborted at line ${line}:${col}`);
      },
    },
  }).exports as unknown as TensorExports;
  const abi = made.abiVersion();
  if (abi !== ABI_VERSION) {
    throw new CassetteError("ERR_RUNTIME", `Cannot load the CPU tensor's resampler as wasm/build/tensor.wasm has interface version ${abi}, not ${ABI_VERSION}: rebuild it with 'bun build.ts'`);
  }
  return (instance = made);
}
