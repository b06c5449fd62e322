import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { assertClose, testDevice } from "../_support/gpu.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { castF16Ref, f16Bits, f16Value, F16_MIN_NORMAL } from "../reference/train/cast_f16.ts";
import { gemmF16Ref } from "../reference/train/gemm_f16.ts";
import { castF16 } from "../../src/train/ops/cast_f16.ts";
import { gemmF16, hasF16 } from "../../src/train/ops/gemm_f16.ts";
import { Program } from "../../src/train/program.ts";
import { createTensor, tensorFrom } from "../../src/train/tensor.ts";
import type { Tensor } from "../../src/train/tensor.ts";
import { CassetteError } from "../../src/errors.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { free, poisoned, randomArray, read, runOnce, upload } from "./_helpers.ts";

// gemm_f16 needs `shader-f16`; lavapipe (Mesa 25), Dawn and Deno's wgpu offer it, but an
// adapter without it skips those tests, saying so. cast_f16 needs no feature.
const f16Device = await testDevice(undefined, ["shader-f16"]);
const NO_F16 = hasF16(f16Device) ? false : "the adapter lacks the WebGPU feature shader-f16";

/** Four pipeline compiles take seconds each on lavapipe, a minute when other jobs share the cores. */
const COMPILES_MS = 240_000;

/** Random values in [-1, 1) already on the f16 grid, f16 subnormals flushed to 0 (see gemmF16Ref). */
function f16Operand(next: () => number, n: number): Float32Array {
  return randomArray(next, n).map((x) => {
    const h = f16Value(f16Bits(x));
    return Math.abs(h) < F16_MIN_NORMAL ? 0 : h;
  });
}

/** An f16 tensor whose every half is 0x7c01, a NaN the cast never writes (it sets the quiet bit). */
function poisonedF16(device: GPUDevice, shape: number[]): Tensor {
  const t = createTensor(device, shape, "poisoned f16", "f16");
  device.queue.writeBuffer(t.buffer, 0, new Uint32Array(t.bytes / 4).fill(0x7c017c01));
  return t;
}

/** A random odd size in [lo, hi]: odd element counts exercise the padded last word of f16 data. */
function oddSize(next: () => number, lo: number, hi: number): number {
  return randomInt(next, lo, hi) | 1;
}

test("cast_f16 rounds to the nearest f16, ties to even, bit for bit as the CPU reference", async () => {
  const device = await testDevice(); // no feature needed: the kernel packs bits with integers
  const seed = freshSeed();
  const next = rng(seed);
  const bits = new Uint32Array(1), f32 = new Float32Array(bits.buffer);
  const special = [
    0, -0, 1, -1, 65504, -65504, 65519.99, 65520, -65520, 65536, 1e9, Infinity, -Infinity, NaN,
    2 ** -14, 2 ** -24, -(2 ** -24), 2 ** -25, 2 ** -25 * 1.0001, 3 * 2 ** -26, 2 ** -26, 1e-30, 1e-45, -1e-45,
    1 + 2 ** -11, 1 + 3 * 2 ** -11, 2049, 2051, 0.1, 1 / 3,
  ];
  const values: number[] = [...special];
  // Exact ties and their f32 neighbours between random adjacent f16 values, subnormals included.
  for (let i = 0; i < 600; i++) {
    const h = randomInt(next, 0, 0x7bfe) | (next() < 0.5 ? 0x8000 : 0);
    const mid = (f16Value(h) + f16Value(h + 1)) / 2; // exact in f32: 12 significant bits
    f32[0] = mid;
    const u = bits[0];
    values.push(mid);
    bits[0] = u + 1;
    values.push(f32[0]);
    bits[0] = u - 1;
    values.push(f32[0]);
  }
  // Random f32 bit patterns (every exponent: most overflow or vanish) and random magnitudes
  // spread over f16's range, 2^-26 … 2^17.
  for (let i = 0; i < 1500; i++) {
    bits[0] = (next() * 2 ** 32) >>> 0;
    values.push(f32[0]);
    values.push((next() < 0.5 ? -1 : 1) * 2 ** (-26 + 43 * next()));
  }
  if (values.length % 2 === 0) values.push(0.5); // odd: the last word has a pad half
  const src = Float32Array.from(values);
  const S = upload(device, src, [src.length]);
  const D = poisonedF16(device, [src.length]);
  await runOnce(device, [castF16(S, D)]);
  const got = new Uint16Array(await readBuffer(device, D.buffer, D.bytes));
  const want = castF16Ref(src);
  for (let i = 0; i < src.length; i++) {
    // A NaN must stay a quiet NaN (JS keeps no sign or payload to compare).
    const ok = Number.isNaN(src[i]) ? (got[i] & 0x7e00) === 0x7e00 : got[i] === want[i];
    if (!ok) {
      assert.unreachable(
        `value ${i} (${src[i]}, f32 bits 0x${new Uint32Array(src.buffer, i * 4, 1)[0].toString(16)}): got 0x${got[i].toString(16)}, want 0x${want[i].toString(16)} (seed ${seed}; rerun with CASSETTE_SEED=${seed})`,
      );
    }
  }
  assert.is(got[src.length], 0, "the pad half of the last word is 0");
  free(S, D);
});

/**
 * Four rounds, one per transpose (NN, TN, NT, TT), each with another epilogue; odd sizes that
 * are no multiple of the tiles. `viaCast` uploads f32 and casts on the GPU in the same program.
 */
async function checkGemmF16(accumulate: "f32" | "f16", viaCast: boolean): Promise<void> {
  const device = f16Device;
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 4; round++) {
    const transA = (round & 1) === 1, transB = (round & 2) === 2, withBias = round !== 1;
    const relu = round === 0 || round === 3;
    const M = oddSize(next, 1, 70), N = oddSize(next, 1, 150), K = oddSize(next, 1, 90);
    const a = f16Operand(next, M * K), b = f16Operand(next, K * N), bias = randomArray(next, N);
    const shapeA = transA ? [K, M] : [M, K], shapeB = transB ? [N, K] : [K, N];
    const dispatches = [];
    const owned: Tensor[] = [];
    let A: Tensor, B: Tensor;
    if (viaCast) {
      const A32 = upload(device, a, shapeA), B32 = upload(device, b, shapeB);
      A = createTensor(device, shapeA, "a16", "f16");
      B = createTensor(device, shapeB, "b16", "f16");
      dispatches.push(castF16(A32, A), castF16(B32, B));
      owned.push(A32, B32);
    } else {
      A = tensorFrom(device, castF16Ref(a), shapeA);
      B = tensorFrom(device, castF16Ref(b), shapeB);
    }
    const Bias = upload(device, bias, [N]);
    const C = poisoned(device, [M, N]);
    dispatches.push(gemmF16(A, B, C, { transA, transB, bias: withBias ? Bias : undefined, relu, accumulate }));
    await runOnce(device, dispatches);
    const want = gemmF16Ref(a, b, M, N, K, { transA, transB, bias: withBias ? bias : undefined, relu, accumulate });
    const got = await read(device, C);
    try {
      assertClose(got, want.c, want.tol, seed);
      // Without a bias, f16 sums reach C unchanged (ReLU keeps them): each must be an f16 value,
      // which an implementation that kept the sums in f32 would not give.
      if (accumulate === "f16" && !withBias) {
        const i = got.findIndex((v) => f16Value(f16Bits(v)) !== v);
        if (i >= 0) throw new Error(`C[${i}] = ${got[i]} is no f16 value: the sums were not kept in f16 (seed ${seed})`);
      }
    } catch (e) {
      throw new Error(`${transA ? "T" : "N"}${transB ? "T" : "N"} M ${M} N ${N} K ${K}, ${accumulate} sums: ${(e as Error).message}`);
    }
    free(A, B, Bias, C, ...owned);
  }
}

test("gemm_f16 with f32 sums matches the CPU reference for every transpose, bias and ReLU, odd sizes, operands cast on the GPU", async () => {
  await checkGemmF16("f32", true);
}, { skip: NO_F16, timeoutMs: COMPILES_MS });

test("gemm_f16 with f16 sums stays within the f16 error bound for every transpose, bias and ReLU, odd sizes", async () => {
  await checkGemmF16("f16", false);
}, { skip: NO_F16, timeoutMs: COMPILES_MS });

test("gemm_f16 on a device opened without shader-f16 throws ERR_UNSUPPORTED naming the feature", async () => {
  const device = await testDevice();
  if (hasF16(device)) return; // some adapter granted it unasked: nothing to check
  const A = tensorFrom(device, new Uint16Array(6), [2, 3]), B = tensorFrom(device, new Uint16Array(6), [3, 2]);
  const C = upload(device, new Float32Array(4), [2, 2]);
  try {
    await Program.build(device, [gemmF16(A, B, C)]);
    assert.unreachable("should throw");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.is((e as CassetteError).code, "ERR_UNSUPPORTED");
    assert.match((e as Error).message, /lacks the 'shader-f16' feature/);
  } finally {
    free(A, B, C);
  }
});

test("gemm_f16 and cast_f16 name the operand of the wrong type or size", async () => {
  const device = await testDevice();
  const A = tensorFrom(device, new Uint16Array(6), [2, 3]), B = tensorFrom(device, new Uint16Array(8), [4, 2]);
  const A32 = upload(device, new Float32Array(6), [2, 3]), C = upload(device, new Float32Array(4), [2, 2]);
  const B2 = tensorFrom(device, new Uint16Array(6), [3, 2]), C16 = tensorFrom(device, new Uint16Array(4), [2, 2]);
  const throws = (fn: () => unknown, pattern: RegExp) => {
    try {
      fn();
      assert.unreachable("should throw");
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.match((e as Error).message, pattern);
    }
  };
  try {
    throws(() => gemmF16(A32, B, C), /gemm_f16 as 'a' must hold f16 values: current dtype is f32/);
    throws(() => gemmF16(A, B2, C16), /'c' must hold f32 values: current dtype is f16/);
    throws(() => gemmF16(A, B, C), /inner sizes differ: op\(a\) is \[2, 3\], op\(b\) is \[4, 2\]/);
    throws(() => gemmF16(A, B, C, { transB: true, accumulate: "f64" as "f32" }), /'accumulate' must be "f32" or "f16": current value is "f64"/);
    throws(() => castF16(A32, A32), /cast_f16 as 'dst' must hold f16 values/);
    throws(() => castF16(A32, B), /cast_f16 as 'dst' must hold 6 values/);
  } finally {
    free(A, B, A32, C, B2, C16);
  }
});
