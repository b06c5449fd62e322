// The CPU's training tensor (src/decode/tensor.ts's cpuTensor): an image's box resampled to the
// output size and normalized, as the GPU pass does it (shaders/crop_resize_normalize.wgsl), in
// f32 with one pixel's channels in one v128 (r, g, b, unused). Two passes over one image at a
// time: `across` resamples the rows the box reads to the output's width, `down` sums each
// output row from them and writes it normalized into the tensor's layout. The host computes
// the taps (which source pixels and weights each output index reads, in f32 as the kernel
// reckons them) and lays everything out with `alloc`.

export { alloc, reset } from "../common/memory";

/** Interface version: the host refuses a module built from another (a stale wasm/build). */
export function abiVersion(): i32 {
  return 1;
}

/** Pixel at `p` as f32x4: r, g, b from 3 or 4 channels (a 4th byte read is ignored), grey repeated. */
@inline function pixel(p: usize, grey: bool): v128 {
  const b = grey ? v128.load8_splat(p) : v128.load32_zero(p);
  return f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(b)));
}

/**
 * `rows` rows of `ic`-channel pixels from `src` (`stride` bytes apart; one readable byte past
 * the last pixel) resampled across: output column o of row r (at `out` + (r·W + o)·16) is the
 * sum over j < count[o] of w[start[o] + j] · pixel(lo[o] + j). Two rows at a time, one read of
 * each output's taps serving both (an odd last row is done twice, into the row of room past
 * `rows` that `out` has). Two taps (a bilinear upscale or mild downscale, the usual case) go
 * without the loop.
 */
export function across(src: usize, stride: i32, ic: i32, rows: i32, lo: usize, count: usize, start: usize, w: usize, W: i32, out: usize): void {
  const grey = ic == 1, line = <usize>W << 4;
  for (let r = 0; r < rows; r += 2) {
    const row = src + <usize>r * <usize>stride, next = r + 1 < rows ? <usize>stride : 0;
    let o1 = out + <usize>r * line;
    for (let o = 0; o < W; o++) {
      const at = <usize>o << 2;
      const c = load<i32>(count + at);
      let p = row + <usize>(load<i32>(lo + at) * ic);
      let q = w + (<usize>load<i32>(start + at) << 2);
      let v: v128, u: v128;
      if (c == 2) {
        const w0 = f32x4.splat(load<f32>(q)), w1 = f32x4.splat(load<f32>(q, 4)), p1 = p + <usize>ic;
        v = f32x4.add(f32x4.mul(pixel(p, grey), w0), f32x4.mul(pixel(p1, grey), w1));
        u = f32x4.add(f32x4.mul(pixel(p + next, grey), w0), f32x4.mul(pixel(p1 + next, grey), w1));
      } else {
        v = f32x4.splat(0);
        u = f32x4.splat(0);
        for (let j = 0; j < c; j++) {
          const wj = f32x4.splat(load<f32>(q));
          v = f32x4.add(v, f32x4.mul(pixel(p, grey), wj));
          u = f32x4.add(u, f32x4.mul(pixel(p + next, grey), wj));
          p += <usize>ic;
          q += 4;
        }
      }
      v128.store(o1, v);
      v128.store(o1 + line, u);
      o1 += 16;
    }
  }
}

/**
 * Output rows from the rows `across` made (row lo[oy] − rowLo on): each pixel the sum over
 * j < count[oy] of w[start[oy] + j] · across's pixel (summed a row at a time into `acc`, W
 * pixels), then · scale + bias per channel (`norm`: scale f32x4, bias f32x4), written at `dst`
 * as C planes of H·W (nchw; four pixels turned into three planes' vectors at a time), H·W
 * pixels of C (nhwc), or C = 1: BT.601 luma of r, g, b (r itself where the source was grey).
 * `dst` has one f32 of room past the tensor (nhwc writes a pixel's 4 lanes; the next pixel
 * overwrites the 4th).
 */
export function down(across: usize, W: i32, lo: usize, count: usize, start: usize, w: usize, H: i32, rowLo: i32, dst: usize, C: i32, nhwc: bool, grey: bool, norm: usize, acc: usize): void {
  const scale = v128.load(norm), bias = v128.load(norm + 16);
  const line = <usize>W << 4, plane = <usize>W * <usize>H << 2;
  for (let oy = 0; oy < H; oy++) {
    const at = <usize>oy << 2;
    const c = load<i32>(count + at);
    let q = w + (<usize>load<i32>(start + at) << 2);
    let from = across + <usize>(load<i32>(lo + at) - rowLo) * line;
    const w0 = f32x4.splat(load<f32>(q));
    for (let k: usize = 0; k < line; k += 16) v128.store(acc + k, f32x4.mul(v128.load(from + k), w0));
    for (let j = 1; j < c; j++) {
      from += line;
      q += 4;
      const wj = f32x4.splat(load<f32>(q));
      for (let k: usize = 0; k < line; k += 16) v128.store(acc + k, f32x4.add(v128.load(acc + k), f32x4.mul(v128.load(from + k), wj)));
    }
    const row = dst + (<usize>oy * <usize>W << 2);
    if (C == 1) lumaRow(acc, W, row, grey, scale, bias);
    else if (nhwc) {
      const px = dst + <usize>oy * <usize>W * 12;
      for (let ox = 0; ox < W; ox++) v128.store(px + <usize>ox * 12, f32x4.add(f32x4.mul(v128.load(acc + (<usize>ox << 4)), scale), bias));
    } else planesRow(acc, W, row, plane, scale, bias);
  }
}

/** One output row of pixels (r, g, b, _) into three planes, normalized. */
@inline function planesRow(acc: usize, W: i32, row: usize, plane: usize, scale: v128, bias: v128): void {
  let ox = 0;
  for (; ox + 4 <= W; ox += 4) {
    const p = acc + (<usize>ox << 4), o = row + (<usize>ox << 2);
    const v0 = f32x4.add(f32x4.mul(v128.load(p), scale), bias), v1 = f32x4.add(f32x4.mul(v128.load(p, 16), scale), bias);
    const v2 = f32x4.add(f32x4.mul(v128.load(p, 32), scale), bias), v3 = f32x4.add(f32x4.mul(v128.load(p, 48), scale), bias);
    const rg01 = v128.shuffle<f32>(v0, v1, 0, 4, 1, 5), rg23 = v128.shuffle<f32>(v2, v3, 0, 4, 1, 5);
    const b01 = v128.shuffle<f32>(v0, v1, 2, 6, 3, 7), b23 = v128.shuffle<f32>(v2, v3, 2, 6, 3, 7);
    v128.store(o, v128.shuffle<f32>(rg01, rg23, 0, 1, 4, 5));
    v128.store(o + plane, v128.shuffle<f32>(rg01, rg23, 2, 3, 6, 7));
    v128.store(o + 2 * plane, v128.shuffle<f32>(b01, b23, 0, 1, 4, 5));
  }
  for (; ox < W; ox++) {
    const v = f32x4.add(f32x4.mul(v128.load(acc + (<usize>ox << 4)), scale), bias), o = row + (<usize>ox << 2);
    store<f32>(o, f32x4.extract_lane(v, 0));
    store<f32>(o + plane, f32x4.extract_lane(v, 1));
    store<f32>(o + 2 * plane, f32x4.extract_lane(v, 2));
  }
}

/** One output row as BT.601 luma (torchvision's Grayscale, PIL's "L"), normalized by channel 0's scale and bias. */
@inline function lumaRow(acc: usize, W: i32, row: usize, grey: bool, scale: v128, bias: v128): void {
  const s0 = f32x4.extract_lane(scale, 0), b0 = f32x4.extract_lane(bias, 0);
  for (let ox = 0; ox < W; ox++) {
    const a = v128.load(acc + (<usize>ox << 4));
    const g = grey
      ? f32x4.extract_lane(a, 0)
      : <f32>0.299 * f32x4.extract_lane(a, 0) + <f32>0.587 * f32x4.extract_lane(a, 1) + <f32>0.114 * f32x4.extract_lane(a, 2);
    store<f32>(row + (<usize>ox << 2), g * s0 + b0);
  }
}
