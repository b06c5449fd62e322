/**
 * CPU references for the decoder's transforms, in f64 straight from T.81 A.3.3:
 * the 8×8 IDCT (unrounded), and the scaled outputs as means of the full-size samples.
 */

/** s(y,x) + 128 for natural-order dequantized coefficients, unrounded and unclamped. */
export function idctFloat(coef: ArrayLike<number>): Float64Array {
  const out = new Float64Array(64);
  const c = (k: number) => (k === 0 ? Math.SQRT1_2 : 1);
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 8; x++) {
      let s = 0;
      for (let v = 0; v < 8; v++) {
        for (let u = 0; u < 8; u++) {
          s += c(u) * c(v) * coef[v * 8 + u] * Math.cos(((2 * x + 1) * u * Math.PI) / 16) * Math.cos(((2 * y + 1) * v * Math.PI) / 16);
        }
      }
      out[y * 8 + x] = s / 4 + 128;
    }
  }
  return out;
}

/** n×n block (n = 8, 4, 2, 1): means of (8/n)² full samples, rounded and clamped to u8. */
export function idctScaledRef(coef: ArrayLike<number>, n: number): Uint8Array {
  const full = idctFloat(coef);
  const r = 8 / n;
  const out = new Uint8Array(n * n);
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      let s = 0;
      for (let j = 0; j < r; j++) for (let i = 0; i < r; i++) s += full[(y * r + j) * 8 + x * r + i];
      out[y * n + x] = Math.min(255, Math.max(0, Math.round(s / (r * r))));
    }
  }
  return out;
}

/**
 * The accurate integer IDCT of the IJG's libjpeg ("islow", djpeg's default), written plainly in
 * scalar from its published flow (Loeffler–Ligtenberg–Moschytz, ICASSP 1989, as the IJG's
 * jidctint.c describes it): 13-bit constants computed here from the cosines, columns first,
 * 2 extra fraction bits between the passes, each pass descaled with rounding, +128, clamped.
 * `coef`: natural-order dequantized coefficients. Pass-1 results are held to i16 with
 * saturation, as the SIMD kernels hold them (real data never reaches the bounds).
 */
export function idctIslowRef(coef: ArrayLike<number>): Uint8Array {
  const CB = 13;
  const P1 = 2;
  const c = (k: number) => Math.cos((k * Math.PI) / 16);
  const s2 = Math.SQRT2;
  const fix = (x: number) => Math.floor(x * (1 << CB) + 0.5);
  const F0298 = fix(s2 * (-c(1) + c(3) + c(5) - c(7)));
  const F0390 = fix(s2 * (c(3) - c(5)));
  const F0541 = fix(s2 * c(6));
  const F0765 = fix(s2 * (c(2) - c(6)));
  const F0899 = fix(s2 * (c(3) - c(7)));
  const F1175 = fix(s2 * c(3));
  const F1501 = fix(s2 * (c(1) + c(3) - c(5) - c(7)));
  const F1847 = fix(s2 * (c(2) + c(6)));
  const F1961 = fix(s2 * (c(3) + c(5)));
  const F2053 = fix(s2 * (c(1) + c(3) - c(5) + c(7)));
  const F2562 = fix(s2 * (c(1) + c(3)));
  const F3072 = fix(s2 * (c(1) + c(3) + c(5) - c(7)));
  const descale = (x: number, n: number) => Math.floor((x + 2 ** (n - 1)) / 2 ** n);
  /** One 1-D pass on in[0…7] into out[0…7], descaled by `shift`. */
  const oneD = (inp: number[], shift: number): number[] => {
    // Even part.
    let z2 = inp[2];
    let z3 = inp[6];
    let z1 = (z2 + z3) * F0541;
    const t2 = z1 - z3 * F1847;
    const t3 = z1 + z2 * F0765;
    const t0 = (inp[0] + inp[4]) * 2 ** CB;
    const t1 = (inp[0] - inp[4]) * 2 ** CB;
    const t10 = t0 + t3;
    const t13 = t0 - t3;
    const t11 = t1 + t2;
    const t12 = t1 - t2;
    // Odd part.
    let o0 = inp[7];
    let o1 = inp[5];
    let o2 = inp[3];
    let o3 = inp[1];
    z1 = o0 + o3;
    z2 = o1 + o2;
    z3 = o0 + o2;
    let z4 = o1 + o3;
    const z5 = (z3 + z4) * F1175;
    o0 *= F0298;
    o1 *= F2053;
    o2 *= F3072;
    o3 *= F1501;
    z1 *= -F0899;
    z2 *= -F2562;
    z3 = z3 * -F1961 + z5;
    z4 = z4 * -F0390 + z5;
    o0 += z1 + z3;
    o1 += z2 + z4;
    o2 += z2 + z3;
    o3 += z1 + z4;
    return [t10 + o3, t11 + o2, t12 + o1, t13 + o0, t13 - o0, t12 - o1, t11 - o2, t10 - o3].map((x) => descale(x, shift));
  };
  const ws = new Array<number>(64);
  for (let u = 0; u < 8; u++) {
    const col = oneD([0, 1, 2, 3, 4, 5, 6, 7].map((v) => coef[v * 8 + u]), CB - P1);
    for (let y = 0; y < 8; y++) ws[y * 8 + u] = Math.max(-32768, Math.min(32767, col[y]));
  }
  const out = new Uint8Array(64);
  for (let y = 0; y < 8; y++) {
    const row = oneD(ws.slice(y * 8, y * 8 + 8), CB + P1 + 3);
    for (let x = 0; x < 8; x++) out[y * 8 + x] = Math.max(0, Math.min(255, row[x] + 128));
  }
  return out;
}
