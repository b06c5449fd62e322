/**
 * torchvision's RandomResizedCrop (+ RandomHorizontalFlip) as a module transform
 * (src/decode/transform.ts), for large JPEGs decoded in the workers:
 *
 *   header size ──► planBox ──► decodeScaleFor ──► box mapped ──► the box decoded at 1, ½, ¼ or ⅛ ──► resizeBilinear ──► flip?
 *
 * The box is drawn on the full-resolution size (read from the frame header, no decoding), and
 * the JPEG is then decoded at the largest reduction that still leaves the box at least `size`
 * pixels across and down: a reduced IDCT is far cheaper than a full decode and averages the
 * pixels it drops, where a bilinear resize of a full decode would skip them (no antialias).
 * When the loader has decoded already (`sample.image`), the crop is taken from that image
 * (a full decode was paid for then: leave the loader's decoding off for the scaled one).
 *
 * Exif orientation is not applied: the box is drawn on the stored (unrotated) frame, and the
 * output keeps the image's `orientation` field.
 *
 * @example
 * ```ts
 * const loaderOptions = { transform: { module: "src/decode/transforms/random_resized_crop.ts", options: { size: 224 } } };
 * ```
 */
import { CassetteError } from "../../errors.ts";
import { type CropBox, planBox, resizeBilinear, show } from "../crop.ts";
import { jpegFrameSize } from "../header.ts";
import type { DecodeScale, Image } from "../decoder.ts";
import type { TransformContext, TransformInput } from "../transform.ts";

export interface RandomResizedCropOptions {
  /** Output width and height in pixels (default 224). */
  size?: number;
  /** Area of the box as a fraction of the image's, [lo, hi] (default [0.08, 1]). */
  scale?: [number, number];
  /** Aspect ratio (width / height) of the box, [lo, hi], drawn log-uniformly (default [3/4, 4/3]). */
  ratio?: [number, number];
  /** Mirror left–right with probability ½ (default true). */
  flip?: boolean;
}

export function transform(sample: TransformInput, options: RandomResizedCropOptions | undefined, ctx: TransformContext): Image {
  const o = options ?? {};
  if (typeof o !== "object") {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot crop as the options must be an object: current value is ${show(o)}`);
  }
  const size = o.size ?? 224;
  if (!Number.isInteger(size) || size < 1 || size > 1 << 16) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot crop as 'size' must be an integer in [1, 65536]: current value is ${show(size)}`);
  }
  const flip = o.flip ?? true;
  if (typeof flip !== "boolean") {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot crop as 'flip' must be true or false: current value is ${show(flip)}`);
  }
  const scale = o.scale ?? [0.08, 1], ratio = o.ratio ?? [3 / 4, 4 / 3];
  const random = () => ctx.random();
  const policy = { kind: "random-resized", scale, ratio } as const;
  // The box comes from planBox, where the GPU's plans draw theirs (src/decode/crop.ts).
  const boxOf = (w: number, h: number): CropBox => {
    const [x, y, bw, bh] = planBox(policy, w, h, size, size, random);
    return { x, y, w: bw, h: bh };
  };

  let img: Image, box: CropBox;
  const frame = sample.image ? undefined : jpegFrameSize(sample.data);
  if (frame) {
    const full = boxOf(frame.width, frame.height);
    const s = decodeScaleFor(full, size);
    // Only the box is decoded (DecodeOptions.region): the pixels a whole decode has there, so
    // the crop's output is the same; the rows below it and the blocks far from it cost nothing.
    const b = mapBox(full, s, Math.ceil(frame.width * s), Math.ceil(frame.height * s));
    img = ctx.decode(sample.data, { scale: s, region: { x: b.x / s, y: b.y / s, width: b.w / s, height: b.h / s } });
    box = { x: 0, y: 0, w: img.width, h: img.height };
  } else {
    // Already decoded, or no frame header found before the first scan (then the decoder
    // names what is wrong with the file, or decodes a file whose height comes in a DNL).
    img = sample.image ?? ctx.decode(sample.data);
    box = boxOf(img.width, img.height);
  }
  const out = resizeBilinear(img, box.x, box.y, box.w, box.h, size, size);
  if (flip && random() < 0.5) mirror(out);
  return out;
}

/**
 * The smallest decode scale (1, ½, ¼, ⅛: the reduced IDCTs, src/decode/decoder.ts) at which
 * the box, scaled, is still at least `size` pixels wide and high: the bilinear resize then
 * never upsamples because of the reduction, and shrinks by less than 2 where it can.
 */
export function decodeScaleFor(box: { w: number; h: number }, size: number): DecodeScale {
  const side = Math.min(box.w, box.h);
  for (const s of [0.125, 0.25, 0.5] as const) if (side * s >= size) return s;
  return 1;
}

/**
 * The box in the pixels of a decode at scale `s`: scaled pixel j covers [j/s, (j+1)/s) of the
 * full image, so each edge goes to the nearest scaled pixel edge (≤ ½ scaled pixel off, less
 * than ½ output pixel since the box has ≥ size scaled pixels). Rounding both edges the same
 * way keeps an integral w·s exact, so w·s ≥ size gives a mapped width ≥ size.
 */
export function mapBox(box: CropBox, s: number, width: number, height: number): CropBox {
  const x0 = Math.min(Math.round(box.x * s), width - 1), y0 = Math.min(Math.round(box.y * s), height - 1);
  const x1 = Math.min(Math.round((box.x + box.w) * s), width), y1 = Math.min(Math.round((box.y + box.h) * s), height);
  return { x: x0, y: y0, w: Math.max(1, x1 - x0), h: Math.max(1, y1 - y0) };
}

/** Reverses each row's pixels in place. */
function mirror(img: Image): void {
  const { width: w, height: h, channels: c, data } = img;
  for (let y = 0; y < h; y++) {
    for (let l = y * w * c, r = l + (w - 1) * c; l < r; l += c, r -= c) {
      for (let k = 0; k < c; k++) {
        const t = data[l + k];
        data[l + k] = data[r + k];
        data[r + k] = t;
      }
    }
  }
}
