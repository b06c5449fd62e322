import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { initValues } from "../../src/train/init.ts";

function stats(v: Float32Array) {
  let s = 0, q = 0;
  for (const x of v) s += x;
  const mean = s / v.length;
  for (const x of v) q += (x - mean) ** 2;
  return { mean, std: Math.sqrt(q / v.length), min: v.reduce((a, b) => Math.min(a, b)), max: v.reduce((a, b) => Math.max(a, b)) };
}

test("He normal has mean 0 and std √(2/fanIn); Glorot uniform stays within ±√(6/(fanIn+fanOut)) with its std", () => {
  const n = 200_000;
  const he = stats(initValues("he", n, 50, 10, 1, 0));
  assert.ok(Math.abs(he.mean) < 0.003, `mean ${he.mean}`);
  assert.ok(Math.abs(he.std / Math.sqrt(2 / 50) - 1) < 0.01, `std ${he.std}`);
  const limit = Math.sqrt(6 / (30 + 70));
  const gl = stats(initValues("glorot", n, 30, 70, 1, 0));
  assert.ok(gl.min >= -limit && gl.max <= limit && gl.max > 0.99 * limit, `range ${gl.min}…${gl.max} vs ±${limit}`);
  assert.ok(Math.abs(gl.std / (limit / Math.sqrt(3)) - 1) < 0.01, `std ${gl.std}`);
});

test("initialization is a function of (seed, stream): equal for equal pairs, different otherwise", () => {
  const a = initValues("he", 64, 9, 16, 5, 2);
  assert.equal([...a], [...initValues("he", 64, 9, 16, 5, 2)]);
  assert.not.equal([...a], [...initValues("he", 64, 9, 16, 6, 2)]);
  assert.not.equal([...a], [...initValues("he", 64, 9, 16, 5, 3)]);
  assert.equal([...initValues("running-stats", 6, 3, 3, 0, 0)], [0, 0, 0, 1, 1, 1]);
});
