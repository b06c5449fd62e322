/** CPU references of relu.wgsl, bias_add.wgsl, sum_axes.wgsl and gather_rows.wgsl. */
export function reluRef(x: ArrayLike<number>): Float64Array {
  return Float64Array.from(x, (v) => Math.max(0, v));
}

/** y[o, c, i] + bias[c] for y of shape [O, C, I]. */
export function biasAddRef(y: ArrayLike<number>, bias: ArrayLike<number>, C: number, I: number): Float64Array {
  return Float64Array.from(y, (v, i) => v + bias[Math.floor(i / I) % C]);
}

/** Σ over o and i of src [O, J, I]. */
export function sumAxesRef(src: ArrayLike<number>, O: number, J: number, I: number): Float64Array {
  const out = new Float64Array(J);
  for (let o = 0; o < O; o++) for (let j = 0; j < J; j++) for (let i = 0; i < I; i++) out[j] += src[(o * J + j) * I + i];
  return out;
}

export function gatherRowsRef<T extends Float32Array | Uint32Array>(src: T, L: number, index: ArrayLike<number>): T {
  const out = new (src.constructor as { new (n: number): T })(index.length * L);
  for (let b = 0; b < index.length; b++) out.set(src.subarray(index[b] * L, index[b] * L + L), b * L);
  return out;
}
