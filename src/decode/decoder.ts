/**
 * The decoder seam: what the read path, the read workers, the decode pool and training know
 * of a decoder. A format (JPEG today) plugs in by implementing `Decoder` and being named in
 * decoders.ts; nothing above this folder names a format's own types.
 *
 *   bytes ──► Decoder.decode(bytes, options) ──► Image { width, height, channels, data }
 *                                                  data: row-major, interleaved, no padding
 */
import { CassetteError } from "../errors.ts";
import { isJpegScan, type JpegScan, type JpegScanRefusal } from "./jpeg_scan.ts";

/** Decoded pixels, as every decoder hands them over. */
export interface Image {
  /** Width in pixels (after orientation, when applied). */
  width: number;
  /** Height in pixels (after orientation, when applied). */
  height: number;
  /** 1 (grey), 2 (grey + alpha), 3 (RGB) or 4 (RGBA). */
  channels: 1 | 2 | 3 | 4;
  /** Interleaved samples, row-major, `width * channels` bytes a row, no padding. */
  data: Uint8Array<ArrayBuffer>;
  /** Exif orientation 1…8 (1 when absent); already applied when `applyOrientation` was set. */
  orientation: number;
  /**
   * Bits per sample: 8 when absent (every decoder's default, and all the rest of cassette
   * assumes it). 16 only when asked (the PNG decoder's `depth16`): then `data` holds
   * little-endian 16-bit samples, `width * channels * 2` bytes a row, which
   * `new Uint16Array(data.buffer)` reads on little-endian hosts.
   */
  bitDepth?: 8 | 16;
}

/** The colour space of a DCT image's components (a JPEG's, from its markers and component count). */
export type DctColorSpace = "gray" | "ycbcr" | "rgb" | "cmyk" | "ycck";

/** One component's quantized DCT blocks, as a DCT image holds them. */
export interface DctComponent {
  /** The component's identifier in the frame header. */
  id: number;
  /** Horizontal sampling factor. */
  h: number;
  /** Vertical sampling factor. */
  v: number;
  /** Blocks across, padded to whole MCUs (T.81 A.2.4); with `blockX`, those of the window. */
  blocksW: number;
  /** Blocks down, padded to whole MCUs; with `blockY`, those of the window. */
  blocksH: number;
  /**
   * Where the blocks held begin in the component's grid, when they are a window of it (a
   * region's, `DctImage.region`): the first block column (default 0).
   */
  blockX?: number;
  /** The window's first block row (default 0). */
  blockY?: number;
  /** The component's own size in samples: ceil(width·h/hmax) × ceil(height·v/vmax). */
  width: number;
  /** The component's height in samples: ceil(height·v/vmax). */
  height: number;
  /** Quantization table, natural order (index v·8 + u, v the vertical frequency). */
  quant: Uint16Array;
  /** blocksW·blocksH blocks of 64 quantized coefficients, raster order, each in natural order. */
  coefficients: Int16Array;
}

/**
 * An image left as its quantized DCT blocks: entropy decoding done, dequantization, the IDCT,
 * upsampling and colour not (the hybrid decode: the GPU finishes it, src/gpu/idct.ts). What
 * `Decoder.decodeDct` gives, and a read path with `decode: "hybrid"` hands over as
 * `Sample.coefficients`.
 */
export interface DctImage {
  /** Width in pixels, as stored. */
  width: number;
  /** Height in pixels, as stored. */
  height: number;
  /** The components' colour space. */
  colorSpace: DctColorSpace;
  /** Whether the file is progressive. */
  progressive: boolean;
  /** Exif orientation 1…8 (1 when absent); never applied to coefficients. */
  orientation: number;
  /** The components, in frame order. */
  components: DctComponent[];
  /**
   * When only a region was decoded (`DecodeOptions.region`): the box of the image's pixels its
   * blocks give exactly, each component holding the window of blocks those pixels read.
   */
  region?: DecodeRegion;
}

/** True for a DCT image (as opposed to decoded pixels). */
export function isDctImage(x: object): x is DctImage {
  return "components" in x && !("data" in x) && !("entropy" in x); // a JpegScan has components too
}

/** Output size as a fraction of the image's: 1, 1/2, 1/4 or 1/8 (where the format can do it cheaply). */
export type DecodeScale = 1 | 0.5 | 0.25 | 0.125;

/** Options every decoder takes; a format may take more. */
export interface DecodeOptions {
  /** Default 1. */
  scale?: DecodeScale;
  /** Images with more pixels (width × height, before scaling) are refused before any allocation. Default 100e6. */
  maxPixels?: number;
  /** Rotate/flip the pixels as the Exif orientation says (default false: reported, not applied). */
  applyOrientation?: boolean;
  /** One channel out, whatever the file holds (default false), weighted as libjpeg's grayscale output. */
  grey?: boolean;
  /**
   * Only this box of the image, in the file's pixels (before `scale` and before any Exif turn),
   * clipped to the image: the pixels are those a whole decode gives there, at `scale` the
   * scaled pixels that cover the box ([⌊x·s⌋, ⌈(x + width)·s⌉) across, s the scale). A JPEG
   * decodes no row below the box and transforms no block far from it; a box outside the image
   * is an error.
   */
  region?: DecodeRegion;
  /**
   * The read path's hybrid decode (a Loader's `decode: "hybrid"`): a file the decoder can leave
   * as DCT blocks (`Decoder.decodeDct`) is handed over as `Sample.coefficients`, for the GPU
   * preprocessor to finish; any other (a PNG, a CMYK JPEG) decodes to pixels as without it.
   * `decode` and `decodeInto` ignore it.
   */
  hybrid?: boolean;
  /**
   * The read path's GPU decode (a Loader's `decode: "gpu"`): a JPEG the GPU can decode
   * (`Decoder.readScan` accepts it: NOTE [ What the GPU decodes ], src/decode/jpeg_scan.ts) is
   * handed over as `Sample.scan`, its Huffman codes left for the GPU preprocessor; any other
   * file decodes as without it (to pixels; to DCT blocks with `hybrid` too). Not where the GPU
   * pass cannot give what the options ask: a `scale`, a turn asked for and due
   * (`applyOrientation`), `grey` output of a colour file. The scan is the whole image even
   * with a `region` (a planned decode's box: the preprocessor draws the same plan on the whole
   * image). `decode` and `decodeInto` ignore it.
   */
  gpu?: boolean;
}

/** A box of an image's pixels: its top-left corner and its size. */
export interface DecodeRegion {
  /** The box's first column, from the image's left edge (0 the first). */
  x: number;
  /** The box's first row, from the image's top edge (0 the first). */
  y: number;
  /** Columns in the box (≥ 1). */
  width: number;
  /** Rows in the box (≥ 1). */
  height: number;
}

/**
 * What `decodeInto` wrote: the image's shape, and its pixels at `target[offset … offset + bytes)`,
 * laid out as `Image.data` would be.
 */
export interface DecodedInto {
  /** Width in pixels of the image written. */
  width: number;
  /** Height in pixels of the image written. */
  height: number;
  /** Channels written per pixel: 1 (grey), 2 (grey + alpha), 3 (RGB) or 4 (RGBA). */
  channels: 1 | 2 | 3 | 4;
  /** Exif orientation 1…8 (1 when absent); already applied when `applyOrientation` was set. */
  orientation: number;
  /** 8 unless the PNG decoder's `depth16` gave 16-bit samples (little-endian, 2 bytes each). */
  bitDepth?: 8 | 16;
  /** width · height · channels (· 2 at 16 bits). */
  bytes: number;
}

/** One decoder instance: single-threaded, reused for every image (one per worker). */
export interface Decoder<O extends DecodeOptions = DecodeOptions, I extends Image = Image> {
  /** The format it reads, e.g. "jpeg". */
  readonly format: string;
  /** Pixels. Throws a named error on malformed or unsupported input, or on bad options. */
  decode(bytes: Uint8Array, options?: O): I;
  /**
   * Pixels written into `target` from byte `offset` (a batch packet, a SharedArrayBuffer view)
   * instead of a fresh array: nothing outside the image's span is touched. A target too small
   * for the image is a TargetTooSmallError, found before any pixel is written; the input's own
   * errors are as decode()'s, and after one the span may hold part of the image.
   */
  decodeInto(bytes: Uint8Array, target: Uint8Array, offset: number, options?: O): DecodedInto;
  /**
   * The image as its quantized DCT blocks, for the GPU to finish (the hybrid decode), or
   * undefined where this file must be decoded to pixels instead (its format has no DCT, its
   * colour or `options` ask for what the GPU pass does not do). Formats without a DCT leave it
   * out. Errors as decode()'s.
   */
  decodeDct?(bytes: Uint8Array, options?: O): DctImage | undefined;
  /**
   * The GPU decode's half (`decode: "gpu"`): a JPEG's header and entropy-coded data, or a
   * refusal saying why it is decoded on the CPU instead; undefined for a file of a format with
   * no scan for the GPU (a PNG through the "auto" decoder). Formats without one leave it out.
   */
  readScan?(bytes: Uint8Array, options?: Pick<O, "maxPixels">): JpegScan | JpegScanRefusal | undefined;
  /** Bytes of memory this decoder holds between images (wasm memory is a high-water mark). */
  readonly memoryBytes: number;
  /** Lets go of the instance; decode() afterwards is an error. */
  close(): void;
}

/** A decoder that answers later, off this thread (the decode pool). */
export interface AsyncDecoder<O extends DecodeOptions = DecodeOptions, I extends Image = Image> {
  /** Tells it from a Decoder: the answer is a promise, and the input's buffer may be taken (transferred). */
  readonly async: true;
  /** The format it reads, e.g. "jpeg". */
  readonly format: string;
  /** Pixels, answered later; throws as `Decoder.decode` does. */
  decode(bytes: Uint8Array, options?: O): Promise<I>;
  /** Lets go of the decoder and its workers. */
  close(): void;
}

/** The read path's `decode` option as decode options: "hybrid" is `{ hybrid: true }`, "gpu" `{ gpu: true }`, a boolean none. */
export function readDecodeOptions<O extends DecodeOptions>(decode: boolean | "hybrid" | "gpu" | O | undefined): O | DecodeOptions | undefined {
  if (decode === "hybrid") return { hybrid: true };
  if (decode === "gpu") return { gpu: true };
  return typeof decode === "object" && decode !== null ? decode : undefined;
}

/** What the read path's GPU decode counts where it decodes (`decode: "gpu"`). */
export interface GpuReadCounts {
  /** JPEGs `readScan` refused (progressive, arithmetic, CMYK, …): decoded on the CPU instead. */
  gpuRefused: number;
}

/**
 * With `gpu`: the file's scan, for the GPU to decode, where its decoder reads one and the GPU
 * pass gives what `options` ask (DecodeOptions.gpu); else undefined (the caller decodes it on
 * the CPU), a JPEG refused counted in `counts`.
 */
export function scanForRead(decoder: Decoder, bytes: Uint8Array, options: DecodeOptions | undefined, counts?: GpuReadCounts): JpegScan | undefined {
  // A scale is known before the file is read; a turn and grey output need its header.
  if (!options?.gpu || !decoder.readScan || (options.scale ?? 1) !== 1) return undefined;
  const r = decoder.readScan(bytes, { maxPixels: options.maxPixels });
  if (!r) return undefined; // not a JPEG
  if (!isJpegScan(r)) {
    if (counts) counts.gpuRefused++;
    return undefined;
  }
  if (options.applyOrientation && r.orientation > 1) return undefined;
  // libjpeg's grey output of a colour file is its luma component, not the tensor's BT.601 mix.
  if (options.grey && r.colorSpace !== "gray") return undefined;
  return r;
}

/**
 * The read path's decode of one file: with `gpu`, its scan where the GPU can decode it
 * (scanForRead); with `hybrid`, its DCT blocks where its decoder can leave them so
 * (Decoder.decodeDct); else its pixels.
 */
export function decodeForRead(decoder: Decoder, bytes: Uint8Array, options?: DecodeOptions, counts?: GpuReadCounts): Image | DctImage | JpegScan {
  return scanForRead(decoder, bytes, options, counts) ?? (options?.hybrid ? decoder.decodeDct?.(bytes, options) : undefined) ?? decoder.decode(bytes, options);
}

/**
 * decodeInto's target has too few bytes past `offset` for the image: `needed` against
 * `available` (target.length − offset). Thrown before any pixel is written.
 */
export class TargetTooSmallError extends CassetteError {
  /** Bytes the image needs from `offset`. */
  readonly needed: number;
  /** Bytes the target holds from `offset`. */
  readonly available: number;
  /** Names the format, the image's shape and the target's room in the message. */
  constructor(format: string, shape: { width: number; height: number; channels: number; bitDepth?: number }, offset: number, targetLength: number) {
    const needed = shape.width * shape.height * shape.channels * ((shape.bitDepth ?? 8) / 8);
    const available = targetLength - offset;
    const depth = shape.bitDepth === 16 ? " at 16 bits" : "";
    super("ERR_INVALID_OPTION", `Cannot decode ${format} into the target as the image (${shape.width}×${shape.height}×${shape.channels}${depth}) needs ${needed} bytes from offset ${offset} and the target holds ${available} there (${targetLength} bytes in all)`);
    this.name = "TargetTooSmallError";
    this.needed = needed;
    this.available = available;
  }
}

/** decodeInto's target and offset, checked before anything is decoded. */
export function checkTarget(target: Uint8Array, offset: number, format: string): void {
  if (!(target instanceof Uint8Array)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} into the target as it must be a Uint8Array: current value is ${describe(target)}`);
  }
  if (!Number.isInteger(offset) || offset < 0 || offset > target.length) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} into the target as 'offset' must be an integer from 0 to its length ${target.length}: current value is ${offset}`);
  }
}

export const DEFAULT_MAX_PIXELS = 100e6;
const SCALES: Record<number, number> = { 1: 0, 0.5: 1, 0.25: 2, 0.125: 3 };
const FLAGS = ["grey", "applyOrientation", "hybrid", "gpu"] as const;

/**
 * Checks options once, where they are given (a Loader, a read worker), so that a bad one is
 * named there rather than as every sample's decode error. Returns the scale as a power of
 * two and the pixel bound.
 */
export function checkDecodeOptions(options: DecodeOptions, format = "JPEG"): { log2: number; maxPixels: number } {
  if (typeof options !== "object" || options === null) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} as the options must be an object: current value is ${describe(options)}`);
  }
  const scale = options.scale ?? 1;
  const log2 = SCALES[scale];
  if (log2 === undefined) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} as 'scale' must be 1, 0.5, 0.25 or 0.125: current value is ${scale}`);
  }
  const maxPixels = maxPixelsOf(options, format);
  for (const flag of FLAGS) {
    if (options[flag] !== undefined && typeof options[flag] !== "boolean") {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} as '${flag}' must be true or false: current value is ${describe(options[flag])}`);
    }
  }
  const r = options.region;
  if (r !== undefined) {
    const whole = (v: unknown, min: number) => typeof v === "number" && Number.isInteger(v) && v >= min && v <= 0x7fffffff;
    if (typeof r !== "object" || r === null || !whole(r.x, 0) || !whole(r.y, 0) || !whole(r.width, 1) || !whole(r.height, 1)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} as 'region' must be { x, y ≥ 0, width, height ≥ 1 }, whole numbers: current value is ${describe(r)}`);
    }
  }
  checkPlan(options, format);
  return { log2, maxPixels };
}

/**
 * A planned decode's `plan` (the read path's `decode: { plan }`, src/decode/crop.ts
 * PlannedDecode), checked with the rest: it is drawn on the stored frame, so nothing beside
 * it may scale, turn or cut the image, and it must give the output's size.
 */
function checkPlan(options: DecodeOptions & { plan?: { width?: unknown; height?: unknown } }, format: string): void {
  const p = options.plan;
  if (p === undefined) return;
  const side = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 1;
  if (typeof p !== "object" || p === null || !side(p.width) || !side(p.height)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} as 'plan' must be a preprocessor's options, with the output's width and height: current value is ${describe(p)}`);
  }
  if ((options.scale ?? 1) !== 1 || options.applyOrientation || options.region) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} as 'scale', 'applyOrientation' and 'region' must be left out beside 'plan' (the plan is drawn on the stored frame): current value is ${JSON.stringify({ scale: options.scale, applyOrientation: options.applyOrientation, region: options.region })}`);
  }
}

export function maxPixelsOf(options: { maxPixels?: number }, format = "JPEG"): number {
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS;
  if (typeof maxPixels !== "number" || !(maxPixels > 0)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode ${format} as 'maxPixels' must be a positive number: current value is ${maxPixels}`);
  }
  return maxPixels;
}

/** A value as an error message shows it: its type and a short form. */
export function describe(x: unknown): string {
  if (x === null) return "null";
  if (typeof x === "object") return (x as object).constructor?.name ?? "object";
  return `${typeof x} ${String(x).slice(0, 40)}`;
}
