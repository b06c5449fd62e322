/**
 * The decoder seam: what the read path, the read workers, the decode pool and training know
 * of a decoder. A format (JPEG today) plugs in by implementing `Decoder` and being named in
 * decoders.ts; nothing above this folder names a format's own types.
 *
 *   bytes ──► Decoder.decode(bytes, options) ──► Image { width, height, channels, data }
 *                                                  data: row-major, interleaved, no padding
 */
import { CassetteError } from "../errors.ts";

/** Decoded pixels, as every decoder hands them over. */
export interface Image {
  width: number;
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
}

/** One decoder instance: single-threaded, reused for every image (one per worker). */
export interface Decoder<O extends DecodeOptions = DecodeOptions, I extends Image = Image> {
  /** The format it reads, e.g. "jpeg". */
  readonly format: string;
  /** Pixels. Throws a named error on malformed or unsupported input, or on bad options. */
  decode(bytes: Uint8Array, options?: O): I;
  /** Bytes of memory this decoder holds between images (wasm memory is a high-water mark). */
  readonly memoryBytes: number;
  /** Lets go of the instance; decode() afterwards is an error. */
  close(): void;
}

/** A decoder that answers later, off this thread (the decode pool). */
export interface AsyncDecoder<O extends DecodeOptions = DecodeOptions, I extends Image = Image> {
  /** Tells it from a Decoder: the answer is a promise, and the input's buffer may be taken (transferred). */
  readonly async: true;
  readonly format: string;
  decode(bytes: Uint8Array, options?: O): Promise<I>;
  close(): void;
}

export const DEFAULT_MAX_PIXELS = 100e6;
const SCALES: Record<number, number> = { 1: 0, 0.5: 1, 0.25: 2, 0.125: 3 };
const FLAGS = ["grey", "applyOrientation"] as const;

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
  return { log2, maxPixels };
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
