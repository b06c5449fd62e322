/**
 * The wasm decoders' modules (wasm/jpeg, wasm/png, built by build.ts), compiled once per
 * thread by wasm_module.ts and png_module.ts. Here the bytes come from the base64 modules
 * build.ts generates, so loading needs no file access and works the same from source, from the
 * bundle and inside workers. A page's bundle puts wasm_bytes.browser.ts in this file's place:
 * the .wasm files beside the JavaScript, compiled as they arrive (ARCHITECTURE.md, "The
 * browser graph").
 */
import jpeg from "../../wasm/build/jpeg_wasm.ts";
import png from "../../wasm/build/png_wasm.ts";
import { decodeBase64 } from "../util/base64.ts";

/** Compiles the decoder `name`. */
export function compileWasm(name: "jpeg" | "png"): Promise<WebAssembly.Module> {
  return WebAssembly.compile(decodeBase64(name === "jpeg" ? jpeg : png));
}

