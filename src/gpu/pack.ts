/**
 * The CPU half of GPU preprocessing: the CPU plans, the GPU executes, so that every random
 * choice is made (and reproduced from the seed) in one place, in TypeScript.
 * `planImage` turns (seed, epoch, sample id) into a crop box and a flip flag, a pure value;
 * `packImages` lays a batch of decoded images and their plans into one upload for
 * shaders/preprocess/crop_resize_normalize.wgsl. The kernel holds no randomness and no policy.
 *
 * NOTE [ Packed preprocessing input ]
 * One storage buffer, read as array<u32>. A table of one 32-byte record per image comes first,
 * then each image's bytes (u8 HWC, rows unpadded) starting on a 4-byte boundary:
 *
 *   word  0        8        16                   8n
 *         ┌────────┬────────┬───── … ────┬───────┬──────────────┬───┬──────────────┬───┐
 *         │ rec 0  │ rec 1  │            │rec n-1│ image 0 HWC  │pad│ image 1 HWC  │pad│ …
 *         └────────┴────────┴───── … ────┴───────┴──────────────┴───┴──────────────┴───┘
 *
 *   record (8 × 32 bit):
 *   ┌────────┬───────┬────────┬───────────────────────────┬───────┬───────┬───────┬───────┐
 *   │ OFFSET │ WIDTH │ HEIGHT │ FLAGS: bits 0-3 channels, │ X0 f32│ Y0 f32│ W f32 │ H f32 │
 *   │ bytes  │  px   │   px   │ bit 8 mirror              │ crop box in source pixels     │
 *   └────────┴───────┴────────┴───────────────────────────┴───────┴───────┴───────┴───────┘
 *
 * OFFSET is from the start of the buffer. The crop box may be fractional (Resize + CenterCrop
 * is a fractional box in source pixels) and may reach past the image edge (edge pixels repeat).
 */
import { CassetteError } from "../errors.ts";
import { hash32, rng } from "../plan/rng.ts";
import { roundHalfEven } from "../util/round.ts";
import { randomCropBox } from "../decode/crop.ts";

/** Bytes of one table record. */
export const RECORD_BYTES = 32;
/** Bit of FLAGS set when the image is mirrored left–right. */
export const FLAG_MIRROR = 1 << 8;

/** How each image becomes an output of fixed size. */
export type CropPolicy =
  /** The whole image, stretched to the output size. */
  | { kind: "resize" }
  /**
   * torchvision `Resize(resize)` then `CenterCrop(output)`: the shorter side is scaled to
   * `resize` (default: the output's shorter side), the centre cut out.
   */
  | { kind: "center"; resize?: number }
  /**
   * torchvision `RandomResizedCrop(output, scale, ratio)`: a box of random area (fraction of the
   * image in `scale`) and aspect ratio (log-uniform in `ratio`), at a random place, resized.
   */
  | { kind: "random-resized"; scale?: readonly [number, number]; ratio?: readonly [number, number] };

/** Where each image's pixels are taken from and how they are sized: output size, crop policy, mirror probability and seed. */
export interface PlanOptions {
  /** Output width and height in pixels. */
  width: number;
  /** Output height in pixels. */
  height: number;
  /** Default `{ kind: "resize" }`. */
  crop?: CropPolicy;
  /** Probability of a left–right mirror per image (default 0). */
  flip?: number;
  /** Seed of every random choice (default 0). */
  seed?: number;
}

/** What the GPU does to one image: the source box to sample, and whether to mirror it. */
export interface ImagePlan {
  /** Left of the crop box, in source pixels (the box may be fractional). */
  x: number;
  /** Top of the crop box, in source pixels. */
  y: number;
  /** Width of the crop box, in source pixels. */
  w: number;
  /** Height of the crop box, in source pixels. */
  h: number;
  /** Whether the crop is mirrored left–right. */
  mirror: boolean;
}

/** A sample id: the UUID string of the store, or any number. */
export type SampleKey = string | number;

/** Whether a policy draws random numbers (and so needs sample ids). */
export function isRandom(o: PlanOptions): boolean {
  return (o.crop?.kind === "random-resized") || (o.flip ?? 0) > 0;
}

/**
 * The plan of one image, a pure function of its size, the options and (seed, epoch, id):
 * the same arguments give the same box on every runtime.
 *
 * @example
 * ```ts
 * import { planImage } from "cassette/gpu";
 * const opts = { width: 224, height: 224, crop: { kind: "random-resized" }, flip: 0.5, seed: 7 } as const;
 * const a = planImage(640, 480, opts, 3, "6ceecba5-0000-5000-8000-000000000000");
 * const b = planImage(640, 480, opts, 3, "6ceecba5-0000-5000-8000-000000000000");
 * console.assert(JSON.stringify(a) === JSON.stringify(b));
 * console.log(a.w <= 640 && a.h <= 480); // true
 * ```
 */
export function planImage(width: number, height: number, o: PlanOptions, epoch: number, id: SampleKey): ImagePlan {
  const crop = o.crop ?? { kind: "resize" };
  const key = typeof id === "number" ? id : hash32(id);
  // Two independent streams, so that changing the flip probability keeps the crops.
  const r = rng(o.seed ?? 0, epoch, key, 1);
  let box: [number, number, number, number];
  if (crop.kind === "resize") {
    box = [0, 0, width, height];
  } else if (crop.kind === "center") {
    box = centerBox(width, height, o.width, o.height, crop.resize ?? Math.min(o.width, o.height));
  } else {
    // torchvision's RandomResizedCrop box, the same one the CPU transform draws (decode/crop.ts).
    const b = randomCropBox(width, height, r.next, crop.scale ?? [0.08, 1], crop.ratio ?? [3 / 4, 4 / 3]);
    box = [b.x, b.y, b.w, b.h];
  }
  const p = o.flip ?? 0;
  const mirror = p > 0 && rng(o.seed ?? 0, epoch, key, 2).next() < p;
  return { x: box[0], y: box[1], w: box[2], h: box[3], mirror };
}

/**
 * Resize so the shorter side is `resize`, then centre-crop outW × outH, expressed as a box in
 * source pixels. torchvision's Resize truncates the longer side (int(long · resize / short))
 * and CenterCrop offsets by round((size − crop) / 2); the box follows both exactly.
 */
function centerBox(w: number, h: number, outW: number, outH: number, resize: number): [number, number, number, number] {
  const [rw, rh] = w <= h ? [resize, Math.floor((h * resize) / w)] : [Math.floor((w * resize) / h), resize];
  const sx = w / rw, sy = h / rh;
  const left = roundHalfEven((rw - outW) / 2), top = roundHalfEven((rh - outH) / 2);
  return [left * sx, top * sy, outW * sx, outH * sy];
}


/** A decoded image: u8 pixels, interleaved (HWC), rows unpadded. */
export interface DecodedImage {
  /** The pixels. */
  data: Uint8Array;
  /** Width in pixels. */
  width: number;
  /** Height in pixels. */
  height: number;
  /** 1 (gray), 3 (RGB) or 4 (RGBA; alpha is ignored). */
  channels: number;
}

/** Shape of one image in a batch: what packing needs to know before the bytes exist. */
export interface ImageShape {
  width: number;
  height: number;
  channels: number;
}

/** Byte offsets of a batch's images in the packed buffer, and its total size. */
export interface PackLayout {
  offsets: number[];
  bytes: number;
}

/** Where each image of a batch goes (see NOTE [ Packed preprocessing input ]). */
export function packLayout(shapes: readonly ImageShape[]): PackLayout {
  let at = shapes.length * RECORD_BYTES;
  const offsets = shapes.map((s, i) => {
    checkShape(s, i);
    const o = at;
    at += Math.ceil((s.width * s.height * s.channels) / 4) * 4;
    return o;
  });
  return { offsets, bytes: Math.max(4, at) };
}

function checkShape(s: ImageShape, i: number): void {
  if (!(s.channels === 1 || s.channels === 3 || s.channels === 4)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess image ${i} as 'channels' must be 1, 3 or 4: current value is ${s.channels}`);
  }
  if (!(Number.isInteger(s.width) && Number.isInteger(s.height) && s.width >= 1 && s.height >= 1 && s.width <= 65535 && s.height <= 65535)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess image ${i} as its size must be 1 to 65535 pixels a side: current value is ${s.width}×${s.height}`);
  }
}

/**
 * A batch's images already in one buffer (a Loader batch's `images`, made by read workers):
 * image i is `pixels[at[i] …]`, width·height·channels bytes, `at[i]` a multiple of 4. Packed
 * with one copy of the whole buffer after the records, not one per image.
 */
export interface PackedImages {
  /** Every image's pixels, one after another. */
  pixels: Uint8Array;
  /** Where each image's pixels begin in `pixels`. */
  at: ArrayLike<number>;
  /** Each image's width in pixels. */
  width: ArrayLike<number>;
  /** Each image's height in pixels. */
  height: ArrayLike<number>;
  /** Each image's channels. */
  channels: ArrayLike<number>;
}

/** Whether `x` is a PackedImages table rather than a list of images. */
export function isPackedImages(x: unknown): x is PackedImages {
  return typeof x === "object" && x !== null && !Array.isArray(x) && "pixels" in x && "at" in x;
}

/** Where each image of a table goes: the records, then the table's buffer as it is. */
export function tableLayout(t: PackedImages): PackLayout {
  const n = t.at.length, base = n * RECORD_BYTES;
  const offsets = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const s = { width: t.width[i], height: t.height[i], channels: t.channels[i] };
    checkShape(s, i);
    const at = t.at[i];
    if (at % 4 !== 0 || at < 0 || at + s.width * s.height * s.channels > t.pixels.length) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess image ${i} as its pixels must start on a 4-byte boundary inside the table's ${t.pixels.length} bytes: current value is ${at}`);
    }
    offsets[i] = base + at;
  }
  return { offsets, bytes: Math.max(4, base + Math.ceil(t.pixels.length / 4) * 4) };
}

/** Writes the records of a table and its pixels (one copy) into `dst`. */
export function packTable(dst: Uint8Array, t: PackedImages, plans: readonly ImagePlan[], layout: PackLayout): void {
  const n = t.at.length;
  writeRecords(dst, n, (i) => t.width[i], (i) => t.height[i], (i) => t.channels[i], plans, layout);
  dst.set(t.pixels, n * RECORD_BYTES);
}

function writeRecords(
  dst: Uint8Array, n: number, width: (i: number) => number, height: (i: number) => number, channels: (i: number) => number,
  plans: readonly ImagePlan[], layout: PackLayout,
): void {
  const words = new Uint32Array(dst.buffer, dst.byteOffset, n * 8);
  const floats = new Float32Array(dst.buffer, dst.byteOffset, n * 8);
  for (let i = 0; i < n; i++) {
    const p = plans[i];
    words[i * 8] = layout.offsets[i];
    words[i * 8 + 1] = width(i);
    words[i * 8 + 2] = height(i);
    words[i * 8 + 3] = channels(i) | (p.mirror ? FLAG_MIRROR : 0);
    floats[i * 8 + 4] = p.x;
    floats[i * 8 + 5] = p.y;
    floats[i * 8 + 6] = p.w;
    floats[i * 8 + 7] = p.h;
  }
}

/**
 * Writes the table and the pixels of `images` into `dst` (at least `layout.bytes` long,
 * typically a mapped staging buffer). Images with `data` undefined get a record only: their
 * bytes are written on the GPU (the hybrid JPEG path).
 */
export function packImages(
  dst: Uint8Array,
  images: readonly (ImageShape & { data?: Uint8Array })[],
  plans: readonly ImagePlan[],
  layout: PackLayout,
): void {
  writeRecords(dst, images.length, (i) => images[i].width, (i) => images[i].height, (i) => images[i].channels, plans, layout);
  images.forEach((img, i) => {
    const n = img.width * img.height * img.channels;
    if (img.data) {
      if (img.data.length < n) {
        throw new CassetteError(
          "ERR_INVALID_OPTION",
          `Cannot preprocess image ${i} as its data must hold width·height·channels = ${n} bytes: current value is ${img.data.length}`,
        );
      }
      dst.set(img.data.length === n ? img.data : img.data.subarray(0, n), layout.offsets[i]);
    }
  });
}
