// The JPEG decoder's flat numeric exports (no managed objects cross the boundary).
// The host (src/decode/wasm_module.ts) owns every message; the module returns codes.
export { alloc, reset } from "./memory";
export { idct8x8 } from "./idct";
