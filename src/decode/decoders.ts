/**
 * Decoders by format: the one place that names each implementation, so the read path, the
 * read workers and the pool ask for "a decoder" and a new format is added here.
 *
 * "auto" holds one JPEG and one PNG decoder and picks by the file's first bytes (FF D8 → JPEG,
 * 89 50 4E 47 → PNG), so a folder of both decodes through one decoder; anything else is an
 * UnknownFormatError naming the bytes it saw.
 */
import { CassetteError } from "../errors.ts";
import type { DecodedInto, Decoder, Image } from "./decoder.ts";
import { createJpegDecoder, type JpegDecoder } from "./jpeg.ts";
import { createPngDecoder, type PngDecodeOptions, type PngDecoder } from "./png.ts";
import { describeStart, formatOf } from "../util/signature.ts";

/** Image formats cassette does not decode (as formatOf names them): ERR_UNSUPPORTED, not malformed. */
const IMAGE_FORMATS = new Set(["a GIF file", "a WebP file", "a BMP file", "a TIFF file", "a HEIF/AVIF file"]);

/** The formats `createDecoder` makes a decoder for: "auto" picks JPEG or PNG by each file's first bytes. */
export type DecoderFormat = "jpeg" | "png" | "auto";

const FACTORIES: Record<DecoderFormat, () => Promise<Decoder>> = {
  jpeg: createJpegDecoder,
  png: createPngDecoder,
  auto: createAutoDecoder,
};

/** A decoder instance for `format` (default "jpeg"); one per thread. */
export async function createDecoder(format: DecoderFormat = "jpeg"): Promise<Decoder> {
  const make = FACTORIES[format];
  if (!make) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot create a decoder as 'format' must be one of ${Object.keys(FACTORIES).join(", ")}: current value is ${format}`);
  }
  return await make();
}

/**
 * Input that is neither JPEG nor PNG, as the "auto" decoder sees it: `seen` holds its first
 * 8 bytes (the constructor reads up to 512 to tell text from binary). Another image format
 * named by its signature (GIF, WebP, BMP, TIFF, HEIF) is ERR_UNSUPPORTED, saying which;
 * anything else (text, an archive, noise, an empty or cut file) is ERR_MALFORMED_INPUT, and
 * says what it is where its signature tells.
 */
export class UnknownFormatError extends CassetteError {
  /** The input's first bytes (up to 8), as the message shows them. */
  readonly seen: Uint8Array;
  /** Where the problem is: byte 0, the signature. */
  readonly offset = 0;
  /** The message shows the bytes seen, and names the image format they start when it is another one (GIF, WebP, BMP, TIFF). */
  constructor(seen: Uint8Array) {
    const format = formatOf(seen);
    // Another image format is unsupported; text, an archive or noise is malformed input.
    const image = format !== undefined && IMAGE_FORMATS.has(format);
    super(image ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", `Cannot decode as ${describeStart(seen)}${format ? "," : ""} which is neither JPEG (FF D8) nor PNG (89 50 4E 47): at byte 0`);
    this.name = "UnknownFormatError";
    this.seen = seen.subarray(0, 8);
  }
}

/** The format of `bytes` by its signature, or undefined. */
export function sniffFormat(bytes: Uint8Array): "jpeg" | "png" | undefined {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xd8) return "jpeg";
  if (bytes.length >= 4 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) return "png";
  return undefined;
}

/** JPEG and PNG through one decoder (format "auto"); PNG-only options reach only PNGs. */
export async function createAutoDecoder(): Promise<Decoder<PngDecodeOptions>> {
  const [jpeg, png] = await Promise.all([createJpegDecoder(), createPngDecoder()]);
  return new AutoDecoder(jpeg, png);
}

class AutoDecoder implements Decoder<PngDecodeOptions> {
  readonly format = "auto";
  #jpeg: JpegDecoder;
  #png: PngDecoder;
  constructor(jpeg: JpegDecoder, png: PngDecoder) {
    this.#jpeg = jpeg;
    this.#png = png;
  }

  decode(bytes: Uint8Array, options?: PngDecodeOptions): Image {
    const format = bytes instanceof Uint8Array ? sniffFormat(bytes) : "jpeg"; // the JPEG decoder names a bad input
    if (format === "jpeg") return this.#jpeg.decode(bytes, options);
    if (format === "png") return this.#png.decode(bytes, options);
    throw new UnknownFormatError(bytes.slice(0, 512));
  }

  decodeInto(bytes: Uint8Array, target: Uint8Array, offset: number, options?: PngDecodeOptions): DecodedInto {
    const format = bytes instanceof Uint8Array ? sniffFormat(bytes) : "jpeg";
    if (format === "jpeg") return this.#jpeg.decodeInto(bytes, target, offset, options);
    if (format === "png") return this.#png.decodeInto(bytes, target, offset, options);
    throw new UnknownFormatError(bytes.slice(0, 512));
  }

  get memoryBytes(): number {
    return this.#jpeg.memoryBytes + this.#png.memoryBytes;
  }

  close(): void {
    this.#jpeg.close();
    this.#png.close();
  }
}
