/**
 * Decoders by format: the one place that names each implementation, so the read path, the
 * read workers and the pool ask for "a decoder". A new format (say WebP) is one module that
 * implements `Decoder` and one entry in `DECODERS` (its name in ImageFormat, its signature test
 * and its factory): `createDecoder`, "auto", `sniffFormat` and the unknown-format error follow
 * the table.
 *
 * "auto" holds one decoder per entry and picks by the file's first bytes (FF D8 → JPEG,
 * 89 50 4E 47 → PNG), so a folder of both decodes through one decoder; anything else is an
 * UnknownFormatError naming the bytes it saw.
 */
import { CassetteError } from "../errors.ts";
import type { DctImage, DecodedInto, Decoder, Image } from "./decoder.ts";
import type { JpegScan, JpegScanRefusal } from "./jpeg_scan.ts";
import { createJpegDecoder } from "./jpeg.ts";
import { createPngDecoder, type PngDecodeOptions } from "./png.ts";
import { describeStart, formatOf } from "../util/signature.ts";

/** One image format: its name, its signature (as the unknown-format error shows it), how to recognise it, and its decoder. */
interface DecoderEntry<F extends string = string> {
  readonly format: F;
  /** "JPEG (FF D8)": the name and first bytes, for the unknown-format error. */
  readonly signature: string;
  /** Whether `bytes` start this format. */
  sniff(bytes: Uint8Array): boolean;
  create(): Promise<Decoder<PngDecodeOptions>>;
}

/** A format with a decoder: "jpeg", "png" (each has its entry in `DECODERS`, src/decode/decoders.ts). */
export type ImageFormat = "jpeg" | "png";

/** Every format decoded, one entry each (the type asks for one per ImageFormat), in the order "auto" tries their signatures. */
const DECODERS: { readonly [F in ImageFormat]: DecoderEntry<F> } = {
  jpeg: { format: "jpeg", signature: "JPEG (FF D8)", sniff: (b) => b.length >= 2 && b[0] === 0xff && b[1] === 0xd8, create: createJpegDecoder },
  png: {
    format: "png", signature: "PNG (89 50 4E 47)", sniff: (b) => b.length >= 4 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47,
    create: createPngDecoder,
  },
};
const ENTRIES: readonly DecoderEntry<ImageFormat>[] = Object.values(DECODERS);

/** The formats `createDecoder` makes a decoder for: "auto" picks JPEG or PNG by each file's first bytes. */
export type DecoderFormat = ImageFormat | "auto";

const FACTORIES: Record<DecoderFormat, () => Promise<Decoder>> = {
  ...Object.fromEntries(ENTRIES.map((d) => [d.format, d.create])) as Record<ImageFormat, () => Promise<Decoder>>,
  auto: createAutoDecoder,
};

/** Image formats cassette does not decode (as formatOf names them): ERR_UNSUPPORTED, not malformed. */
const IMAGE_FORMATS = new Set(["a GIF file", "a WebP file", "a BMP file", "a TIFF file", "a HEIF/AVIF file"]);

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
 * bytes. Another image format named by its signature (GIF, WebP, BMP, TIFF) is
 * ERR_UNSUPPORTED, saying which; anything else (noise, an empty or cut file) is
 * ERR_MALFORMED_INPUT.
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
    const known = ENTRIES.map((d) => d.signature).join(" nor ");
    super(image ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", `Cannot decode as ${describeStart(seen)}${format ? "," : ""} which is neither ${known}: at byte 0`);
    this.name = "UnknownFormatError";
    this.seen = seen.subarray(0, 8);
  }
}

/** The format of `bytes` by its signature, or undefined. */
export function sniffFormat(bytes: Uint8Array): ImageFormat | undefined {
  return ENTRIES.find((d) => d.sniff(bytes))?.format;
}

/** Every format's decoder through one (format "auto"), picked by each input's signature; PNG-only options reach only PNGs. */
export async function createAutoDecoder(): Promise<Decoder<PngDecodeOptions>> {
  const made = await Promise.all(ENTRIES.map((d) => d.create()));
  return new AutoDecoder(new Map(ENTRIES.map((d, i) => [d.format, made[i]])));
}

class AutoDecoder implements Decoder<PngDecodeOptions> {
  readonly format = "auto";
  readonly #by: Map<ImageFormat, Decoder<PngDecodeOptions>>;
  constructor(by: Map<ImageFormat, Decoder<PngDecodeOptions>>) {
    this.#by = by;
  }

  /** The decoder for `bytes`' signature; a non-Uint8Array goes to the JPEG decoder, which names a bad input. */
  #pick(bytes: Uint8Array): Decoder<PngDecodeOptions> {
    const format = bytes instanceof Uint8Array ? sniffFormat(bytes) : "jpeg";
    const decoder = format && this.#by.get(format);
    if (!decoder) throw new UnknownFormatError(bytes.slice(0, 512));
    return decoder;
  }

  decode(bytes: Uint8Array, options?: PngDecodeOptions): Image {
    return this.#pick(bytes).decode(bytes, options);
  }

  decodeInto(bytes: Uint8Array, target: Uint8Array, offset: number, options?: PngDecodeOptions): DecodedInto {
    return this.#pick(bytes).decodeInto(bytes, target, offset, options);
  }

  decodeDct(bytes: Uint8Array, options?: PngDecodeOptions): DctImage | undefined {
    return this.#pick(bytes).decodeDct?.(bytes, options);
  }

  /** A file of no format's signature has no scan: decode() names it. */
  readScan(bytes: Uint8Array, options?: Pick<PngDecodeOptions, "maxPixels">): JpegScan | JpegScanRefusal | undefined {
    const format = bytes instanceof Uint8Array ? sniffFormat(bytes) : undefined;
    return format && this.#by.get(format)?.readScan?.(bytes, options);
  }

  get memoryBytes(): number {
    let n = 0;
    for (const d of this.#by.values()) n += d.memoryBytes;
    return n;
  }

  close(): void {
    for (const d of this.#by.values()) d.close();
  }
}
