/**
 * The PNG decoder: one WebAssembly instance (wasm/png, AssemblyScript) behind the `Decoder`
 * seam. Every colour type (grey, RGB, palette, grey + alpha, RGBA) at every bit depth PNG allows
 * (1, 2, 4, 8, 16), Adam7 interlacing, tRNS turned into an alpha channel. The inflater is the
 * module's own, and it writes no more than IHDR's size needs (a larger stream is the named error
 * "too-much-data"); `maxPixels` refuses a huge IHDR before anything is allocated.
 *
 * What comes out (`Image`, 8 bits per sample unless `depth16`):
 * - grey → 1 channel (2 with tRNS); RGB → 3 (4 with tRNS); palette → RGB, or RGBA when it has
 *   tRNS; grey + alpha → 2; RGBA → 4. Samples of 1, 2 and 4 bits are scaled to 8 exactly
 *   (v · 255 / (2^depth − 1)).
 * - 16-bit files are rounded to 8 bits as (v · 255 + 32767) / 65535 (round to nearest, as
 *   libpng's png_set_scale_16), unless `depth16: true`, which keeps them: `bitDepth: 16` and
 *   two bytes a sample, little-endian. Files of 8 bits or fewer ignore `depth16`.
 * - `grey: true`: one channel; colour as libjpeg's grey, Y = (19595 R + 38470 G + 7471 B +
 *   32768) >> 16 (ITU-R BT.601 weights, as the JPEG decoder's grey), at the output depth; an
 *   alpha channel is dropped.
 * - `scale` 1/2, 1/4, 1/8: PNG has no cheaper reduced decode, so the image is decoded whole,
 *   then box-filtered: each output pixel is the rounded mean of its f×f block (f = 1/scale;
 *   blocks at the right and bottom edges hold what is left), every channel alike, alpha not
 *   premultiplied. The size is ceil(width · scale) × ceil(height · scale), as the JPEG
 *   decoder's.
 * - Orientation is always 1 (eXIf is not read), so `applyOrientation` changes nothing.
 *
 * Each call copies the file into the instance's memory and the pixels out of it, so results
 * are plain, transferable arrays and the instance is ready for the next image, even after an
 * error. One decoder is single-threaded: use one per worker.
 *
 * @example
 * ```ts
 * import { createPngDecoder } from "./png.ts";
 * const png = await createPngDecoder();
 * // A 2×1 RGB PNG: one red pixel, one blue (what pypng writes for them).
 * const bytes = Uint8Array.from(atob("iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAADUlEQVR4nGP4zwAE/wEHAAH/4iOeWQAAAABJRU5ErkJggg=="), (c) => c.charCodeAt(0));
 * const img = png.decode(bytes);
 * console.assert(img.width === 2 && img.channels === 3 && img.data.join() === "255,0,0,0,0,255");
 * console.assert(png.decode(bytes, { grey: true }).data.join() === "76,29");
 * ```
 */
import { CassetteError } from "../errors.ts";
import { chunkName, PngError } from "./png_error.ts";
import { describeStart } from "../util/signature.ts";
import { instantiatePngWasm, type PngExports } from "./png_module.ts";
import { checkDecodeOptions, checkTarget, type Decoder, type DecodedInto, type DecodeOptions, type DecodeRegion, describe, type Image, TargetTooSmallError } from "./decoder.ts";

/** The PNG decoder takes the common options and one of its own. */
export interface PngDecodeOptions extends DecodeOptions {
  /**
   * Keep a 16-bit file's samples (default false: rounded to 8 bits). The image then has
   * `bitDepth: 16` and little-endian 16-bit samples in `data`. Files of 8 bits or fewer come out
   * as 8-bit whatever this says.
   */
  depth16?: boolean;
}

/** A decoded PNG: 1 to 4 channels, 8 bits per sample unless `depth16` kept 16. */
export interface PngImage extends Image {
  /** 8, or 16 for a 16-bit file decoded with `depth16`. */
  bitDepth: 8 | 16;
}

/** The WebAssembly PNG decoder (`createPngDecoder`): pixels, or pixels into a buffer. */
export interface PngDecoder extends Decoder<PngDecodeOptions, PngImage> {
  /** Pixels. Throws PngError (malformed or unsupported input) or CassetteError (bad options). */
  decode(bytes: Uint8Array, options?: PngDecodeOptions): PngImage;
  /**
   * Bytes of WebAssembly memory this decoder holds: its high-water mark, which wasm cannot give
   * back (the largest file plus its inflated data and pixels).
   */
  readonly memoryBytes: number;
}

// wasm/png/decoder.ts's flags.
const FLAG_GREY = 1, FLAG_DEPTH16 = 2;

/** Instantiates the wasm decoder once; the returned decoder is reused for every image. */
export async function createPngDecoder(): Promise<PngDecoder> {
  return new WasmPngDecoder(await instantiatePngWasm());
}

class WasmPngDecoder implements PngDecoder {
  readonly format = "png";
  #w: PngExports;
  #closed = false;
  constructor(w: PngExports) {
    this.#w = w;
  }

  get memoryBytes(): number {
    return this.#closed ? 0 : this.#w.memory.buffer.byteLength;
  }

  close(): void {
    this.#closed = true;
    this.#w = undefined as unknown as PngExports;
  }

  /** The wasm decode: the image's shape and where its pixels lie in the module's memory. */
  #run(bytes: Uint8Array, options: PngDecodeOptions): { log2: number; width: number; height: number; channels: 1 | 2 | 3 | 4; bitDepth: 8 | 16; ptr: number; len: number } {
    const { log2, maxPixels } = checkDecodeOptions(options, "PNG");
    if (options.depth16 !== undefined && typeof options.depth16 !== "boolean") {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode PNG as 'depth16' must be true or false: current value is ${describe(options.depth16)}`);
    }
    if (this.#closed) throw new CassetteError("ERR_INVALID_OPTION", "Cannot decode PNG as the decoder is closed");
    if (!(bytes instanceof Uint8Array)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode PNG as the input must be a Uint8Array: current value is ${describe(bytes)}`);
    }
    const w = this.#w;
    w.reset();
    const p = w.alloc(bytes.length);
    if (p === 0) throw PngError.fromCode(21, 0, { expected: 0, actual: bytes.length, chunk: "" });
    new Uint8Array(w.memory.buffer, p, bytes.length).set(bytes);
    const rc = w.decode(p, bytes.length, maxPixels, (options.grey ? FLAG_GREY : 0) | (options.depth16 ? FLAG_DEPTH16 : 0));
    if (rc !== 0) {
      // Not a PNG: say what it is instead (text, a JPEG, a GIF…), by its first bytes.
      const more = rc === 2 ? `; ${describeStart(bytes)}` : "";
      throw PngError.fromCode(rc, w.errorOffset(), { expected: w.errorExpected(), actual: w.errorActual(), chunk: chunkName(w.errorChunk()) }, more);
    }
    const width = w.width(), height = w.height();
    const channels = w.outChannels() as 1 | 2 | 3 | 4;
    const bitDepth = w.outBitDepth() as 8 | 16;
    const ptr = w.outPtr(), len = w.outLen();
    if (len !== width * height * channels * (bitDepth / 8)) {
      throw new Error(`wasm/png returned ${len} bytes of pixels for a ${width}×${height}×${channels} image of ${bitDepth} bits`);
    }
    return { log2, width, height, channels, bitDepth, ptr, len };
  }

  decode(bytes: Uint8Array, options: PngDecodeOptions = {}): PngImage {
    const { log2, width, height, channels, bitDepth, ptr, len } = this.#run(bytes, options);
    const data = new Uint8Array(this.#w.memory.buffer.slice(ptr, ptr + len) as ArrayBuffer);
    const img: PngImage = { width, height, channels, data, orientation: 1, bitDepth };
    const scaled = log2 === 0 ? img : boxDownscale(img, 1 << log2);
    return options.region ? regionOf(scaled, options.region, 1 / (1 << log2), { width, height }) : scaled;
  }

  /**
   * Pixels into `target` from `offset` (Decoder.decodeInto). At full size they are copied
   * from the module's memory once, straight to the target; a scaled image is shrunk first
   * (boxDownscale makes its own array), then copied. The whole image is inflated before its
   * size can be checked against the target (PNG rows are not handed over as they come).
   */
  decodeInto(bytes: Uint8Array, target: Uint8Array, offset: number, options: PngDecodeOptions = {}): DecodedInto {
    checkTarget(target, offset, "PNG");
    if (options.region) {
      // A region is cut from the whole image here (a PNG's rows are inflated whole anyway).
      const img = this.decode(bytes, options);
      const n = img.data.length;
      if (offset + n > target.length) throw new TargetTooSmallError("PNG", img, offset, target.length);
      target.set(img.data, offset);
      return { width: img.width, height: img.height, channels: img.channels, bitDepth: img.bitDepth, orientation: 1, bytes: n };
    }
    const { log2, width, height, channels, bitDepth, ptr, len } = this.#run(bytes, options);
    const f = 1 << log2;
    const shape = { width: Math.ceil(width / f), height: Math.ceil(height / f), channels, bitDepth };
    const n = shape.width * shape.height * channels * (bitDepth / 8);
    if (offset + n > target.length) throw new TargetTooSmallError("PNG", shape, offset, target.length);
    if (log2 === 0) target.set(new Uint8Array(this.#w.memory.buffer, ptr, len), offset);
    else {
      const data = new Uint8Array(this.#w.memory.buffer, ptr, len) as Uint8Array<ArrayBuffer>; // read before anything else runs in the module
      target.set(boxDownscale({ width, height, channels, data, orientation: 1, bitDepth }, f).data, offset);
    }
    return { ...shape, orientation: 1, bytes: n };
  }
}

/**
 * The pixels of `img` (the image at scale `s`) that cover the box `r` of the file's pixels, as
 * the JPEG decoder's region gives them: [⌊x·s⌋, ⌈(x + width)·s⌉) across and down, clipped.
 */
function regionOf(img: PngImage, r: DecodeRegion, s: number, file: { width: number; height: number }): PngImage {
  const x0 = Math.floor(r.x * s), y0 = Math.floor(r.y * s);
  const x1 = Math.min(img.width, Math.ceil((r.x + r.width) * s)), y1 = Math.min(img.height, Math.ceil((r.y + r.height) * s));
  if (x1 <= x0 || y1 <= y0) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode PNG as 'region' (x ${r.x}, y ${r.y}, ${r.width}×${r.height}) lies outside the image (${file.width}×${file.height})`);
  }
  const px = img.channels * (img.bitDepth / 8), row = (x1 - x0) * px;
  const data = new Uint8Array(row * (y1 - y0));
  for (let y = y0; y < y1; y++) data.set(img.data.subarray((y * img.width + x0) * px, (y * img.width + x0) * px + row), (y - y0) * row);
  return { ...img, width: x1 - x0, height: y1 - y0, data };
}

/**
 * The image shrunk by `f` (2, 4 or 8) in both directions: each output pixel the rounded mean of
 * the f×f block it covers (clipped at the right and bottom edges).
 */
export function boxDownscale(img: PngImage, f: number): PngImage {
  const { width, height, channels, bitDepth } = img;
  const ow = Math.ceil(width / f), oh = Math.ceil(height / f);
  const src = bitDepth === 16 ? new Uint16Array(img.data.buffer, img.data.byteOffset, img.data.length >> 1) : img.data;
  const dst = bitDepth === 16 ? new Uint16Array(ow * oh * channels) : new Uint8Array(ow * oh * channels);
  const sums = new Float64Array(ow * channels);
  for (let oy = 0; oy < oh; oy++) {
    sums.fill(0);
    const y1 = Math.min(height, (oy + 1) * f);
    for (let y = oy * f; y < y1; y++) {
      const row = y * width * channels;
      for (let x = 0; x < width; x++) {
        const o = ((x / f) | 0) * channels, s = row + x * channels;
        for (let c = 0; c < channels; c++) sums[o + c] += src[s + c];
      }
    }
    const bh = y1 - oy * f;
    for (let ox = 0; ox < ow; ox++) {
      const n = (Math.min(width, (ox + 1) * f) - ox * f) * bh;
      for (let c = 0; c < channels; c++) {
        dst[(oy * ow + ox) * channels + c] = Math.floor((sums[ox * channels + c] + (n >> 1)) / n);
      }
    }
  }
  const data = new Uint8Array(dst.buffer as ArrayBuffer);
  return { width: ow, height: oh, channels, data, orientation: img.orientation, bitDepth };
}
