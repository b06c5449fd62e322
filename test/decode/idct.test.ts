import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { idctIslowRef, idctScaledRef } from "../reference/jpeg_idct.ts";
import { instantiateJpegWasm } from "../../src/decode/wasm_module.ts";

// The wasm IDCT takes quantized i16 coefficients and a u16 quantization table, both in natural
// order (v·8 + u); the reference takes dequantized natural.
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
    // saturates, to exercise the clamping; sometimes only the DC is non-zero. The saturating
    // ones stay within what an 8-bit encoder's coefficients reach (dequantized DC ≤ ~2900):
    // the full-size IDCT, like libjpeg's SIMD ones, keeps 16-bit sums between its passes.
    const big = n % 10 === 0 ? 3 : 1;
    const dcOnly = n % 7 === 0;
    for (let i = 0; i < 64; i++) {
      quant[i] = randomInt(next, 1, big > 1 ? 16 : 40);
      const spread = i === 0 ? 60 * big : dcOnly ? 0 : (12 * big) / (1 + i / 6);
      coef[i] = Math.round((next() - 0.5) * 2 * spread);
    }
    const mem = () => new DataView(wasm.memory.buffer);
    const natural = new Float64Array(64);
    for (let v = 0; v < 8; v++) {
      for (let u = 0; u < 8; u++) {
        mem().setInt16(blk + (v * 8 + u) * 2, coef[v * 8 + u], true);
        mem().setUint16(qp + (v * 8 + u) * 2, quant[v * 8 + u], true);
        natural[v * 8 + u] = coef[v * 8 + u] * quant[v * 8 + u];
      }
    }
    new Uint8Array(wasm.memory.buffer, dst, 8 * stride).fill(0xaa); // poison
    wasm.idctTest(blk, qp, dst, stride, size, 63);
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

// The full-size IDCT is libjpeg's accurate integer one (djpeg's default): on fresh random blocks,
// each of its paths (any coefficients, low frequencies only, DC only) gives exactly the samples
// of a plain scalar version of that algorithm whose constants come from the cosines.
test("wasm 8×8 IDCT equals the scalar islow reference exactly (full, low-frequency and DC-only paths)", async () => {
  const wasm = await instantiateJpegWasm();
  const seed = freshSeed();
  const next = rng(seed);
  const blk = wasm.alloc(128);
  const qp = wasm.alloc(128);
  const stride = 11;
  const dst = wasm.alloc(8 * stride);
  const LOW_LAST = 9; // zig-zag positions 0…9 are the u, v ≤ 3 corner
  for (let n = 0; n < 3000; n++) {
    const path = n % 3; // 0: any (last 63), 1: low (u, v ≤ 3), 2: DC only
    const coef = new Int16Array(64);
    const quant = new Uint16Array(64);
    const big = n % 10 === 0 ? 3 : 1;
    for (let i = 0; i < 64; i++) {
      const u = i % 8;
      const v = i >> 3;
      quant[i] = randomInt(next, 1, big > 1 ? 16 : 40);
      const zero = (path === 1 && (u > 3 || v > 3)) || (path === 2 && i > 0) || next() < 0.3;
      const spread = i === 0 ? 60 * big : (12 * big) / (1 + (u + v) / 3);
      coef[i] = zero ? 0 : Math.round((next() - 0.5) * 2 * spread);
    }
    const view = new DataView(wasm.memory.buffer);
    const natural = new Array<number>(64);
    for (let i = 0; i < 64; i++) {
      view.setInt16(blk + i * 2, coef[i], true);
      view.setUint16(qp + i * 2, quant[i], true);
      natural[i] = coef[i] * quant[i];
    }
    wasm.idctTest(blk, qp, dst, stride, 8, [63, LOW_LAST, 0][path]);
    const want = idctIslowRef(natural);
    const out = new Uint8Array(wasm.memory.buffer);
    for (let y = 0; y < 8; y++) {
      for (let x = 0; x < 8; x++) {
        const got = out[dst + y * stride + x];
        if (got !== want[y * 8 + x]) assert.unreachable(`block ${n} (path ${["any", "low", "DC"][path]}) at (${y},${x}): got ${got}, want ${want[y * 8 + x]} (seed ${seed})`);
      }
    }
  }
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
