/**
 * Loads the AssemblyScript decoder (wasm/jpeg, built by build.ts) into a typed instance.
 * The module comes from wasm_bytes.ts (a generated base64 module; in a page, the .wasm file
 * beside the bundle). One compile per thread, then instances.
 */
import { CassetteError } from "../errors.ts";
import { compileWasm } from "./wasm_bytes.ts";

/** wasm/jpeg/index.ts's abiVersion() that this host is written for. */
const ABI_VERSION = 6;

/** The flat numeric exports of wasm/jpeg/index.ts. */
export interface JpegExports {
  memory: WebAssembly.Memory;
  alloc(bytes: number): number;
  reset(): void;
  /** Test entry: IDCT of 64 i16 (natural order) with a u16 table into n×n bytes; `last` picks the path (0 DC, ≤ 9 low, 63 any). */
  idctTest(blk: number, quant: number, dst: number, stride: number, n: number, last: number): void;
  errorCode(): number;
  errorOffset(): number;
  /** The build's interface version (wasm/jpeg/index.ts); absent before version 2. */
  abiVersion?(): number;
  /** 0 or an error code; mode 0 = pixels, 1 = coefficients, 2 = grey pixels; scaleLog2 0…3; a region of the file's pixels (rw 0: the whole image). */
  decode(src: number, len: number, scaleLog2: number, maxPixels: number, mode: number, rx: number, ry: number, rw: number, rh: number): number;
  /** Markers up to the first SOS; 0 or an error code. */
  inspect(src: number, len: number): number;
  /** 0 gray, 1 YCbCr, 2 RGB, 3 CMYK, 4 YCCK. */
  colorSpace(): number;
  outWidth(): number;
  outHeight(): number;
  outChannels(): number;
  frameWidth(): number;
  frameHeight(): number;
  frameComponents(): number;
  frameMarker(): number;
  framePrecision(): number;
  frameRestartInterval(): number;
  frameOrientation(): number;
  frameAdobeTransform(): number;
  frameJfif(): number;
  compId(c: number): number;
  compH(c: number): number;
  compV(c: number): number;
  compTq(c: number): number;
  compBlocksW(c: number): number;
  compBlocksH(c: number): number;
  compCoefficients(c: number): number;
  compQuant(c: number): number;
  /** With a region: the block window of component c its pixels read, [x0, x1) × [y0, y1). */
  compBlockX0(c: number): number;
  compBlockX1(c: number): number;
  compBlockY0(c: number): number;
  compBlockY1(c: number): number;
  /** With a region: its first column and row in the output's pixels. */
  outX(): number;
  outY(): number;
  // After inspect(): the first scan and the tables in force at it (abi 6).
  scanStart(): number;
  scanComponents(): number;
  scanComponent(i: number): number;
  scanSs(): number;
  scanSe(): number;
  scanAh(): number;
  scanAl(): number;
  compTd(c: number): number;
  compTa(c: number): number;
  huffmanDefined(): number;
  /** Slot s (DC 0–3, AC 4–7): n as i32, 16 counts, n symbols. */
  huffmanSource(s: number): number;
  quantDefined(): number;
  /** Table t: 64 u16, natural order. */
  quantTable(t: number): number;
  /** The scan from byte `start` without its stuffing, ≤ `most` intervals: their count, or a refusal (< 0; wasm/jpeg/unstuff.ts). */
  unstuff(start: number, most: number): number;
  unstuffedData(): number;
  unstuffedCuts(): number;
  unstuffedLength(): number;
  unstuffedMarker(): number;
}

let compiled: Promise<WebAssembly.Module> | undefined;

/**
 * Takes decoded pixels during decode(): `n` whole rows from output row `y0`, at `ptr` in the
 * instance's memory, valid only until it returns (the module reuses the strip).
 */
export type RowSink = (ptr: number, y0: number, n: number) => void;

/** A fresh decoder instance with its own memory; `rows` receives its pixels. */
export async function instantiateJpegWasm(rows: RowSink = noSink): Promise<JpegExports> {
  compiled ??= compileWasm("jpeg");
  const instance = await WebAssembly.instantiate(await compiled, {
    env: {
      rows,
      abort(_msg: number, _file: number, line: number, col: number) {
        throw new Error(`wasm/jpeg aborted at line ${line}:${col}`);
      },
    },
  });
  const w = instance.exports as unknown as JpegExports;
  // A wasm/build left from an older checkout (or an old GPU kit) would misread newer modes.
  const abi = w.abiVersion?.() ?? 1;
  if (abi !== ABI_VERSION) {
    throw new CassetteError("ERR_RUNTIME", `Cannot load the JPEG decoder as wasm/build/jpeg.wasm has interface version ${abi}, not ${ABI_VERSION}: rebuild it with 'bun build.ts'`);
  }
  return w;
}

function noSink(): void {
  throw new Error("wasm/jpeg: this instance was made without a row sink, so it cannot decode pixels");
}
