// The PNG decoder's flat numeric exports (no managed objects cross the boundary).
// The host (src/decode/png.ts) owns every message; the module returns codes, an offset and the
// values involved.
//
// Use: reset(); p = alloc(n); copy the file to p; decode(p, n, maxPixels, flags); read
// outPtr/outLen/outWidth/… before the next reset().
import * as H from "./header";
import * as D from "./decoder";
import { outBytes, outChannels as channelsOut } from "./pixels";

export { alloc, reset } from "../common/memory";
export { errorCode, errorOffset, errorExpected, errorActual, errorChunk } from "./errors";
export { decode } from "./decoder";
export { crc32 } from "./crc";
export { adler32 } from "./zlib";

/** What the host may ask of this build (src/decode/png_wasm_module.ts checks it). */
export function abiVersion(): i32 { return 1; }

export function outPtr(): usize { return D.outPtr; }
export function outLen(): usize { return D.outLen; }
export function outChannels(): i32 { return channelsOut; }
export function outBitDepth(): i32 { return outBytes << 3; }

// IHDR's facts (after decode, also when it failed past IHDR).
export function width(): i32 { return H.width; }
export function height(): i32 { return H.height; }
export function bitDepth(): i32 { return H.bitDepth; }
export function colorType(): i32 { return H.colorType; }
export function interlaced(): bool { return H.interlaced; }
