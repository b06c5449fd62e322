/**
 * wasm_bytes.ts in a web page (the browser bundle and the architecture test's browser walk put
 * this file in its place): the decoders are the files jpeg.wasm and png.wasm that build.ts
 * writes beside the JavaScript in dist/browser/, fetched once per thread (the page's, each
 * worker's: the browser's cache serves the later ones) and compiled while they stream in
 * (`WebAssembly.compileStreaming`). That needs the answer's Content-Type to be
 * application/wasm; from a server that sends another, the same answer's bytes are compiled
 * whole instead.
 */
import { CassetteError } from "../errors.ts";
import { entryUrl } from "../util/entry_url.ts";

/** Compiles the decoder `name` from `NAME.wasm` at the root of dist/browser/. */
export async function compileWasm(name: "jpeg" | "png"): Promise<WebAssembly.Module> {
  const url = entryUrl(import.meta.url, `../../wasm/build/${name}.wasm`, `${name}.wasm`);
  const where = `Cannot load the ${name.toUpperCase()} decoder from ${url.href}`;
  let res: Response;
  try {
    res = await fetch(url);
  } catch (cause) {
    throw new CassetteError("ERR_RUNTIME", `${where}: ${String(cause)}`, { cause });
  }
  if (!res.ok) throw new CassetteError("ERR_RUNTIME", `${where} as it answered HTTP ${res.status}: serve dist/browser/ whole (${name}.wasm beside browser.js)`);
  const whole = res.clone();
  try {
    return await WebAssembly.compileStreaming(res);
  } catch {
    // A Content-Type other than application/wasm (or none): compile the bytes themselves.
    try {
      return await WebAssembly.compile(await whole.arrayBuffer());
    } catch (cause) {
      throw new CassetteError("ERR_RUNTIME", `${where} as its bytes are no wasm module (${String(cause)}): rebuild dist/browser/ with 'bun build.ts'`, { cause });
    }
  }
}
