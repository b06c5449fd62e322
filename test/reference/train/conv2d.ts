/** CPU reference of shaders/train/conv2d_fwd.wgsl in f64 (stride 1, zero padding P, NCHW). */
export interface ConvShape {
  N: number; C: number; H: number; W: number; K: number; KH: number; KW: number; P: number;
}

export function convOut(s: ConvShape): { OH: number; OW: number } {
  return { OH: s.H + 2 * s.P - s.KH + 1, OW: s.W + 2 * s.P - s.KW + 1 };
}

export function conv2dRef(x: ArrayLike<number>, w: ArrayLike<number>, s: ConvShape, bias?: ArrayLike<number>, relu = false): Float64Array {
  const { N, C, H, W, K, KH, KW, P } = s;
  const { OH, OW } = convOut(s);
  const y = new Float64Array(N * K * OH * OW);
  for (let n = 0; n < N; n++) {
    for (let k = 0; k < K; k++) {
      for (let oh = 0; oh < OH; oh++) {
        for (let ow = 0; ow < OW; ow++) {
          let sum = bias ? bias[k] : 0;
          for (let c = 0; c < C; c++) {
            for (let kh = 0; kh < KH; kh++) {
              const ih = oh + kh - P;
              if (ih < 0 || ih >= H) continue;
              for (let kw = 0; kw < KW; kw++) {
                const iw = ow + kw - P;
                if (iw < 0 || iw >= W) continue;
                sum += x[((n * C + c) * H + ih) * W + iw] * w[((k * C + c) * KH + kh) * KW + kw];
              }
            }
          }
          y[((n * K + k) * OH + oh) * OW + ow] = relu ? Math.max(0, sum) : sum;
        }
      }
    }
  }
  return y;
}
