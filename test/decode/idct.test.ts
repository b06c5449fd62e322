import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { idctScaledRef } from "../reference/jpeg_idct.ts";
import { instantiateJpegWasm } from "../../src/decode/wasm_module.ts";

// The wasm IDCT takes quantized i16 coefficients in transposed natural order (u·8 + v) and a
// u16 quantization table in natural order (v·8 + u); the reference takes dequantized natural.
test("wasm IDCT (8×8 and the 4×4, 2×2, 1×1 reduced sizes) matches the f64 reference within ±1", async () => {
  const wasm = await instantiateJpegWasm();
  const seed = freshSeed();
  const next = rng(seed);
  const blk = wasm.alloc(128);
  const qp = wasm.alloc(128);
  const stride = 13; // a row stride that is not 8 checks the output addressing
  const dst = wasm.alloc(8 * stride);
  let worst = 0;
  for (let n = 0; n < 400; n++) {
    const size = [8, 4, 2, 1][n % 4];
    const coef = new Int16Array(64);
    const quant = new Uint16Array(64);
    // Mostly small coefficients with a large DC, as in real blocks; every tenth block
    // saturates, to exercise the clamping; sometimes only the DC is non-zero.
    const big = n % 10 === 0 ? 8 : 1;
    const dcOnly = n % 7 === 0;
    for (let i = 0; i < 64; i++) {
      quant[i] = randomInt(next, 1, 40);
      const spread = i === 0 ? 60 * big : dcOnly ? 0 : (12 * big) / (1 + i / 6);
      coef[i] = Math.round((next() - 0.5) * 2 * spread);
    }
    const mem = () => new DataView(wasm.memory.buffer);
    const natural = new Float64Array(64);
    for (let v = 0; v < 8; v++) {
      for (let u = 0; u < 8; u++) {
        mem().setInt16(blk + (u * 8 + v) * 2, coef[v * 8 + u], true);
        mem().setUint16(qp + (v * 8 + u) * 2, quant[v * 8 + u], true);
        natural[v * 8 + u] = coef[v * 8 + u] * quant[v * 8 + u];
      }
    }
    new Uint8Array(wasm.memory.buffer, dst, 8 * stride).fill(0xaa); // poison
    wasm.idctTest(blk, qp, dst, stride, size);
    const want = idctScaledRef(natural, size);
    const out = new Uint8Array(wasm.memory.buffer);
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        const d = Math.abs(out[dst + y * stride + x] - want[y * size + x]);
        worst = Math.max(worst, d);
        if (d > 1) assert.unreachable(`block ${n} (${size}×${size}) at (${y},${x}): got ${out[dst + y * stride + x]}, want ${want[y * size + x]} (seed ${seed})`);
      }
      for (let x = size; x < stride && y < size - 1; x++) assert.is(out[dst + y * stride + x], 0xaa, "bytes between rows untouched");
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
