/**
 * The CPU half of GPU preprocessing: the CPU plans, the GPU executes, so that every random
 * choice is made (and reproduced from the seed) in one place, in TypeScript.
 * `planImage` (src/decode/crop.ts) turns (seed, epoch, sample id) into a crop box and a flip
 * flag, a pure value; `packImages` lays a batch of decoded images and their plans into one upload for
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
 *   ┌────────┬─────────┬─────────┬───────────────────────────┬───────┬───────┬───────┬───────┐
 *   │ OFFSET │ WIDTH   │ HEIGHT  │ FLAGS: bits 0-3 channels, │ X0 f32│ Y0 f32│ W f32 │ H f32 │
 *   │ bytes  │ px, and │ px, and │ bit 8 mirror              │ crop box in the frame's pixels│
 *   │        │ ORIGIN_X│ ORIGIN_Y│                           │                               │
 *   │        │ << 16   │ << 16   │                           │                               │
 *   └────────┴─────────┴─────────┴───────────────────────────┴───────┴───────┴───────┴───────┘
 *
 * OFFSET is from the start of the buffer. The crop box may be fractional (Resize + CenterCrop
 * is a fractional box in source pixels) and may reach past the image edge (edge pixels repeat).
 * It is in the frame's pixels: an image that is a box of a larger one (`DecodedImage.frame`,
 * a planned decode) has its place in it in ORIGIN_X, ORIGIN_Y (16 bits each; 0 for a whole
 * image), and the kernel reads the frame's pixel (x, y) at (x − ORIGIN_X, y − ORIGIN_Y).
 */
import { CassetteError } from "../errors.ts";
import type { FrameBox, ImagePlan } from "../decode/crop.ts";

// The plans are drawn where the decoding is planned too (src/decode/crop.ts: one planner, so
// that a read worker can decode only the box before any pixel reaches the GPU); the names stay
// exported here, where `cassette/gpu` has always offered them.
export { isRandom, planImage, planRegion } from "../decode/crop.ts";
import { type PackedImages, tableShape } from "../decode/tensor.ts";
export type { CropPolicy, FrameBox, ImagePlan, PlanOptions, SampleKey } from "../decode/crop.ts";

/** Bytes of one table record. */
export const RECORD_BYTES = 32;
/** Bit of FLAGS set when the image is mirrored left–right. */
export const FLAG_MIRROR = 1 << 8;

/** A decoded image: u8 pixels, interleaved (HWC), rows unpadded. */
export interface DecodedImage {
  /**
   * Where these pixels lie in the image they were cut from, when they are a box of it (a region
   * decode, `decodePlanned`): the plan is drawn on that image's size, then moved by (x, y).
   */
  frame?: FrameBox;
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

function checkShape(s: ImageShape & { frame?: FrameBox }, i: number): void {
  const f = s.frame;
  if (f && !(Number.isInteger(f.x) && Number.isInteger(f.y) && f.x >= 0 && f.y >= 0 && f.x + s.width <= f.width && f.y + s.height <= f.height && f.width <= 65535 && f.height <= 65535)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess image ${i} as its frame must hold it (${s.width}×${s.height} at whole x, y ≥ 0, inside a frame of at most 65535 pixels a side): current value is ${JSON.stringify(f)}`);
  }
  if (!(s.channels === 1 || s.channels === 3 || s.channels === 4)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess image ${i} as 'channels' must be 1, 3 or 4: current value is ${s.channels}`);
  }
  if (!(Number.isInteger(s.width) && Number.isInteger(s.height) && s.width >= 1 && s.height >= 1 && s.width <= 65535 && s.height <= 65535)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess image ${i} as its size must be 1 to 65535 pixels a side: current value is ${s.width}×${s.height}`);
  }
}

// A batch's images in one buffer (read workers' packets), declared where the CPU's tensor reads
// them too; packed with one copy of the whole buffer after the records, not one per image.
export { isPackedImages, tableShape } from "../decode/tensor.ts";
export type { PackedImages } from "../decode/tensor.ts";

/** Where each image of a table goes: the records, then the table's buffer as it is. */
export function tableLayout(t: PackedImages): PackLayout {
  const n = t.at.length, base = n * RECORD_BYTES;
  const offsets = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const s = tableShape(t, i);
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
  writeRecords(dst, n, (i) => tableShape(t, i), plans, layout);
  dst.set(t.pixels, n * RECORD_BYTES);
}

function writeRecords(
  dst: Uint8Array, n: number, shape: (i: number) => ImageShape & { frame?: FrameBox }, plans: readonly ImagePlan[], layout: PackLayout,
): void {
  const words = new Uint32Array(dst.buffer, dst.byteOffset, n * 8);
  const floats = new Float32Array(dst.buffer, dst.byteOffset, n * 8);
  for (let i = 0; i < n; i++) {
    const p = plans[i], s = shape(i);
    words[i * 8] = layout.offsets[i];
    words[i * 8 + 1] = (s.width | ((s.frame?.x ?? 0) << 16)) >>> 0;
    words[i * 8 + 2] = (s.height | ((s.frame?.y ?? 0) << 16)) >>> 0;
    words[i * 8 + 3] = s.channels | (p.mirror ? FLAG_MIRROR : 0);
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
  images: readonly (ImageShape & { data?: Uint8Array; frame?: FrameBox })[],
  plans: readonly ImagePlan[],
  layout: PackLayout,
): void {
  writeRecords(dst, images.length, (i) => images[i], plans, layout);
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
