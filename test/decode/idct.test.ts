import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { idct8x8Ref } from "../reference/idct.ts";
import { instantiateJpegWasm } from "../../src/decode/wasm_module.ts";

test("wasm idct8x8 matches the f64 reference within ±1 on random blocks", async () => {
  const wasm = await instantiateJpegWasm();
  const seed = freshSeed();
  const next = rng(seed);
  const src = wasm.alloc(256);
  const stride = 13; // a row stride that is not 8 checks the output addressing
  const dst = wasm.alloc(8 * stride);
  let worst = 0;
  for (let n = 0; n < 300; n++) {
    const coef = new Float32Array(64);
    // Mostly small coefficients with a large DC, as real dequantized blocks; some blocks
    // saturate to exercise the clamping.
    const scale = n % 10 === 0 ? 2000 : 200;
    for (let i = 0; i < 64; i++) coef[i] = Math.round((next() - 0.5) * (i === 0 ? 8 * scale : scale / (1 + i / 8)));
    new Float32Array(wasm.memory.buffer, src, 64).set(coef);
    new Uint8Array(wasm.memory.buffer, dst, 8 * stride).fill(0xaa);
    wasm.idct8x8(src, dst, stride);
    const want = idct8x8Ref(coef);
    const mem = new Uint8Array(wasm.memory.buffer);
    for (let y = 0; y < 8; y++) {
      for (let x = 0; x < 8; x++) {
        const d = Math.abs(mem[dst + y * stride + x] - want[y * 8 + x]);
        worst = Math.max(worst, d);
        if (d > 1) assert.unreachable(`block ${n} (${y},${x}): got ${mem[dst + y * stride + x]}, want ${want[y * 8 + x]} (seed ${seed})`);
      }
      for (let x = 8; x < stride && y < 7; x++) assert.is(mem[dst + y * stride + x], 0xaa, "bytes between rows untouched");
    }
  }
  assert.ok(worst <= 1);
});

test("wasm instances have separate memories and alloc grows memory", async () => {
  const a = await instantiateJpegWasm();
  const b = await instantiateJpegWasm();
  assert.not.ok(a.memory === b.memory);
  const pages = a.memory.buffer.byteLength;
  const p = a.alloc(pages * 2);
  assert.ok(p > 0 && p % 16 === 0, `aligned pointer, got ${p}`);
  assert.ok(a.memory.buffer.byteLength >= p + pages * 2, "memory grew to hold the block");
  a.reset();
  assert.is(a.alloc(16), a.alloc(0) - 16, "reset rewinds the arena");
});
