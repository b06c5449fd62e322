/**
 * CPU reference of shaders/preprocess/mask_nearest.wgsl: one mask, its plan, nearest
 * neighbour at each output pixel's centre. Returns the value and, per pixel, whether its
 * source position lies within `eps` of a pixel boundary on either axis (where f32 rounding on
 * the GPU, fused or not, may pick the neighbour: the test accepts either there).
 */
import type { DecodedImage, ImagePlan } from "../../src/gpu/pack.ts";

export function maskNearestRef(m: DecodedImage, p: ImagePlan, outW: number, outH: number, eps = 1e-3): { values: Uint32Array; alt: Int32Array } {
  const values = new Uint32Array(outW * outH);
  const alt = new Int32Array(outW * outH).fill(-1); // the neighbour's value where a boundary is near
  const pick = (o: number, c0: number, len: number, out: number, n: number) => {
    const t = c0 + (o + 0.5) * (len / out);
    const j = Math.min(Math.max(Math.floor(t), 0), n - 1);
    const frac = t - Math.floor(t);
    const near = frac < eps ? Math.min(Math.max(j - 1, 0), n - 1) : frac > 1 - eps ? Math.min(Math.max(j + 1, 0), n - 1) : j;
    return [j, near];
  };
  for (let oy = 0; oy < outH; oy++) {
    for (let ox = 0; ox < outW; ox++) {
      const sx = p.mirror ? outW - 1 - ox : ox;
      const [x, x2] = pick(sx, p.x, p.w, outW, m.width);
      const [y, y2] = pick(oy, p.y, p.h, outH, m.height);
      const at = (yy: number, xx: number) => m.data[(yy * m.width + xx) * m.channels];
      values[oy * outW + ox] = at(y, x);
      if (x2 !== x || y2 !== y) alt[oy * outW + ox] = 1; // mark: any of the neighbours may be taken
    }
  }
  return { values, alt };
}

/** The values a pixel near a boundary may take: its 3×3 neighbourhood in the source. */
export function neighbourhood(m: DecodedImage, p: ImagePlan, outW: number, outH: number, ox: number, oy: number): Set<number> {
  const sx = p.mirror ? outW - 1 - ox : ox;
  const cx = Math.floor(p.x + (sx + 0.5) * (p.w / outW)), cy = Math.floor(p.y + (oy + 0.5) * (p.h / outH));
  const out = new Set<number>();
  for (let dy = -1; dy <= 1; dy++) {
    for (let dx = -1; dx <= 1; dx++) {
      const x = Math.min(Math.max(cx + dx, 0), m.width - 1), y = Math.min(Math.max(cy + dy, 0), m.height - 1);
      out.add(m.data[(y * m.width + x) * m.channels]);
    }
  }
  return out;
}
