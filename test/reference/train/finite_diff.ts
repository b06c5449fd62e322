/**
 * Central differences in f64: the gradient of a scalar function of `x` at the given indices,
 * (f(x + h·eᵢ) − f(x − h·eᵢ)) / 2h. Backward kernels are checked against this applied to the
 * CPU reference of their forward pass, with L = Σ forward(x) · dy for a random dy.
 */
export function numericGrad(f: (x: Float64Array) => number, x: ArrayLike<number>, indices: readonly number[], h = 1e-4): Float64Array {
  const v = Float64Array.from(x);
  const g = new Float64Array(indices.length);
  indices.forEach((i, j) => {
    const keep = v[i];
    v[i] = keep + h;
    const up = f(v);
    v[i] = keep - h;
    const down = f(v);
    v[i] = keep;
    g[j] = (up - down) / (2 * h);
  });
  return g;
}

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** Every index below n, or `count` distinct ones drawn with `next` when n is larger. */
export function someIndices(next: () => number, n: number, count: number): number[] {
  if (n <= count) return Array.from({ length: n }, (_, i) => i);
  const picked = new Set<number>();
  while (picked.size < count) picked.add(Math.floor(next() * n));
  return [...picked];
}
