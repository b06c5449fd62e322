/**
 * The JPEG decoder: one WebAssembly instance (wasm/jpeg, AssemblyScript) behind a small typed
 * API. Baseline, extended and progressive Huffman JPEG, 8-bit, 1, 3 or 4 components, any
 * integer sampling ratio, restart intervals; scaled output (1/2, 1/4, 1/8 through reduced
 * IDCTs) and a coefficient mode that stops after entropy decoding (for an IDCT on the GPU).
 *
 * Each call copies the input into the instance's memory and the result out of it, strip by
 * strip as rows are decoded (so the copy reads what is still in cache), so results are plain,
 * transferable arrays and the instance is ready for the next image, even after an
 * error. decodeInto() copies the strips into the caller's buffer instead (a packet, a batch):
 * no array per image, whose fresh pages cost a large image ~10 % of its decode
 * (bench/RESULTS.md, "Rows leave as the scan goes"). One decoder is single-threaded: use one
 * per worker (see pool.ts).
 *
 * @example
 * ```ts
 * import { createJpegDecoder } from "./jpeg.ts";
 * const jpeg = await createJpegDecoder();
 * // A 1×1 grey baseline JPEG (what `cjpeg -grayscale` writes for one pixel of value 128).
 * const bytes = Uint8Array.from(atob(
 *   "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/wAALCAABAAEBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/ACv/2Q=="), (c) => c.charCodeAt(0));
 * const img = jpeg.decode(bytes);
 * console.assert(img.width === 1 && img.channels === 1 && img.data[0] === 128);
 * ```
 */
import { CassetteError } from "../errors.ts";
import { JpegError } from "./jpeg_error.ts";
import { describeStart } from "../util/signature.ts";
import { instantiateJpegWasm, type JpegExports } from "./wasm_module.ts";
import {
  checkDecodeOptions, checkTarget, type DctColorSpace, type DctComponent, type DctImage, type Decoder, type DecodedInto, type DecodeOptions, type DecodeScale, describe, type Image, maxPixelsOf, TargetTooSmallError,
} from "./decoder.ts";

import { orient } from "./orient.ts";
import type { HuffmanSource, JpegScan, JpegScanComponent, JpegScanRefusal } from "./jpeg_scan.ts";

export { checkDecodeOptions, orient };

/** Output size as a fraction of the image's: 1, 1/2, 1/4 or 1/8 (a reduced IDCT, not a resize). */
export type JpegScale = DecodeScale;

/** The JPEG decoder takes the common options (src/decode/decoder.ts) and no others. */
export type JpegDecodeOptions = DecodeOptions;

/** A decoded JPEG: always 1 (grey) or 3 (RGB) channels. */
export interface JpegImage extends Image {
  /** 1 (grey) or 3 (RGB); CMYK and YCCK files come out as RGB. */
  channels: 1 | 3;
}

/** The colour space of a JPEG's components, from its markers (JFIF, Adobe) and component count. */
export type JpegColorSpace = DctColorSpace;
/** The coding process of a JPEG's frame (its SOF marker); baseline, extended (8-bit) and progressive are decoded. */
export type JpegProcess = "baseline" | "extended" | "progressive" | "lossless" | "hierarchical" | "arithmetic";

/** What a JPEG's header says (`JpegDecoder.inspect`): size, components, colour space, process and sampling, without decoding. */
export interface JpegInfo {
  /** Width in pixels, as stored (before orientation). */
  width: number;
  /** Height in pixels, as stored (before orientation). */
  height: number;
  /** Number of components: 1 (grey), 3 (YCbCr or RGB) or 4 (CMYK or YCCK). */
  components: number;
  /** The components' colour space. */
  colorSpace: JpegColorSpace;
  /** The frame's coding process. */
  process: JpegProcess;
  /** Whether the file is progressive (several scans refine the image). */
  progressive: boolean;
  /** Bits per sample (8; 12 and 16 are reported, not decoded). */
  precision: number;
  /** Per component: identifier and sampling factors, in frame order. */
  sampling: { id: number; h: number; v: number }[];
  /** MCUs per restart interval (0: none) as defined before the first scan. */
  restartInterval: number;
  /** Exif orientation 1…8 (1 when absent). */
  orientation: number;
}

/** One component's quantized DCT blocks, as `JpegDecoder.decodeCoefficients` gives them. */
export type JpegComponentCoefficients = DctComponent;

/** A JPEG's quantized DCT coefficients, per component, for an IDCT done elsewhere (the GPU's). */
export type JpegCoefficients = DctImage;

/** What `JpegDecoder.decodeInto` wrote: 1 (grey) or 3 (RGB) channels. */
export interface JpegDecodedInto extends DecodedInto {
  /** 1 (grey) or 3 (RGB). */
  channels: 1 | 3;
}

/** The WebAssembly JPEG decoder (`createJpegDecoder`): pixels, pixels into a buffer, the header, or the DCT coefficients. */
export interface JpegDecoder extends Decoder<JpegDecodeOptions, JpegImage> {
  /** Pixels. Throws JpegError (malformed or unsupported input) or CassetteError (bad options). */
  decode(bytes: Uint8Array, options?: JpegDecodeOptions): JpegImage;
  /**
   * Pixels into `target` from `offset`, as decode() would return them (Decoder.decodeInto).
   * Throws TargetTooSmallError when the image does not fit, before writing.
   */
  decodeInto(bytes: Uint8Array, target: Uint8Array, offset: number, options?: JpegDecodeOptions): JpegDecodedInto;
  /** Header only (markers up to the first scan): size, components, sampling, process. */
  inspect(bytes: Uint8Array): JpegInfo;
  /**
   * The hybrid decode's half (Decoder.decodeDct): the DCT blocks of a grey, YCbCr or RGB file,
   * or undefined where it must decode to pixels (CMYK or YCCK, a scale, a turn asked for and
   * due, grey output of an RGB file). With `grey`, a YCbCr file gives its luma only, which is
   * what libjpeg's grey output is. With `region`, each component's window of blocks that the
   * region's pixels read (`blockX`, `blockY`), and `region` the pixels they give; the scan is
   * not decoded below them.
   */
  decodeDct(bytes: Uint8Array, options?: JpegDecodeOptions): DctImage | undefined;
  /**
   * The GPU decode's half (`decode: "gpu"`, src/gpu/huffman.ts): the header and the scan's
   * bytes, no code decoded; or a refusal saying why this file is decoded on the CPU instead
   * (NOTE [ What the GPU decodes ], src/decode/jpeg_scan.ts), a header that does not read
   * among them: the CPU's decode names its error. No code of the scan is decoded here.
   */
  readScan(bytes: Uint8Array, options?: Pick<JpegDecodeOptions, "maxPixels">): JpegScan | JpegScanRefusal;
  /** Stops after entropy decoding: quantized DCT blocks and tables, for an IDCT elsewhere. */
  decodeCoefficients(bytes: Uint8Array, options?: Pick<JpegDecodeOptions, "maxPixels">): JpegCoefficients;
  /**
   * Bytes of WebAssembly memory this decoder holds: its high-water mark, which wasm cannot
   * give back. Pixels of a sequential image are produced a few rows at a time, so this follows
   * the largest file and row width seen, not the largest image.
   */
  readonly memoryBytes: number;
}

// The wasm decoder's modes (wasm/jpeg/decoder.ts).
const MODE_PIXELS = 0, MODE_COEFFICIENTS = 1, MODE_GREY = 2;
/** wasm/jpeg/errors.ts: the region lies outside the image (the caller's option, not the file). */
const E_BAD_REGION = 19;
const COLOR_SPACES: JpegColorSpace[] = ["gray", "ycbcr", "rgb", "cmyk", "ycck"];

/** Instantiates the wasm decoder once; the returned decoder is reused for every image. */
export async function createJpegDecoder(): Promise<JpegDecoder> {
  return await WasmJpegDecoder.create();
}

class WasmJpegDecoder implements JpegDecoder {
  readonly format = "jpeg";
  #w: JpegExports;
  #closed = false;
  /**
   * Where the image being decoded goes, strip by strip from the module (#rows): a fresh array
   * made with the first rows (decode), or the caller's from #at (decodeInto, #into set).
   */
  #out: Uint8Array | undefined;
  #at = 0;
  #into = false;
  #rowBytes = 0;
  /** Rows received: all of them, or the decode failed. */
  #got = 0;
  /** The Huffman tables readScan last gave, per slot (#huffman). */
  #tables: (HuffmanSource | undefined)[] = [];
  #sized = false;
  constructor(w: JpegExports) {
    this.#w = w;
  }

  static async create(): Promise<WasmJpegDecoder> {
    let self: WasmJpegDecoder | undefined;
    const w = await instantiateJpegWasm((ptr, y0, n) => self!.#rows(ptr, y0, n));
    return (self = new WasmJpegDecoder(w));
  }

  get memoryBytes(): number {
    return this.#closed ? 0 : this.#w.memory.buffer.byteLength;
  }

  /** Drops the instance (its memory goes with the last reference). */
  close(): void {
    this.#closed = true;
    this.#w = undefined as unknown as JpegExports;
  }

  /**
   * The module's row sink. Its first call, with no rows, comes once the output's size is known
   * and before any scan is decoded (wasm/jpeg/output.ts, announceOutput): it sizes the image,
   * and a target too small is refused there (the throw unwinds the module, which the next
   * decode resets). Then each strip is copied to its place.
   */
  #rows(ptr: number, y0: number, n: number): void {
    const w = this.#w;
    if (!this.#sized) {
      this.#sized = true;
      this.#rowBytes = w.outWidth() * w.outChannels();
      const bytes = this.#rowBytes * w.outHeight();
      if (this.#into && this.#at + bytes > this.#out!.length) {
        throw new TargetTooSmallError("JPEG", { width: w.outWidth(), height: w.outHeight(), channels: w.outChannels() }, this.#at, this.#out!.length);
      }
    }
    if (n === 0) return;
    // decode()'s array is made with the first rows, not before: a file that fails in its scan costs none.
    this.#out ??= new Uint8Array(this.#rowBytes * w.outHeight());
    this.#out.set(new Uint8Array(w.memory.buffer, ptr, n * this.#rowBytes), this.#at + y0 * this.#rowBytes);
    this.#got += n;
  }

  /** Runs the pixel decode with the row sink aimed at `out` from `at` (undefined: a fresh array). */
  #pixels(bytes: Uint8Array, options: JpegDecodeOptions, out: Uint8Array | undefined, at: number): { rows: number; out: Uint8Array | undefined } {
    const { log2, maxPixels } = checkDecodeOptions(options);
    const w = this.#w;
    const p = this.#load(bytes);
    this.#out = out;
    this.#at = at;
    this.#into = out !== undefined;
    this.#got = 0;
    this.#sized = false;
    let rc: number, rows: number;
    try {
      const r = options.region;
      rc = w.decode(p, bytes.length, log2, maxPixels, options.grey ? MODE_GREY : MODE_PIXELS, r?.x ?? 0, r?.y ?? 0, r?.width ?? 0, r?.height ?? 0);
      out = this.#out;
      rows = this.#got;
    } finally {
      this.#out = undefined; // a failed decode's rows go with it; the caller's buffer is not kept
    }
    if (rc === E_BAD_REGION) {
      const r = options.region!;
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode JPEG as 'region' (x ${r.x}, y ${r.y}, ${r.width}×${r.height}) lies outside the image (${w.frameWidth()}×${w.frameHeight()})`);
    }
    this.#check(rc, bytes);
    if (rows !== w.outHeight()) throw new Error(`wasm/jpeg handed over ${rows} rows of pixels for a ${w.outWidth()}×${w.outHeight()} image`);
    return { rows, out };
  }

  /** Copies `bytes` to the bottom of the freshly reset arena. */
  #load(bytes: Uint8Array): number {
    if (this.#closed) throw new CassetteError("ERR_INVALID_OPTION", "Cannot decode JPEG as the decoder is closed");
    if (!(bytes instanceof Uint8Array)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode JPEG as the input must be a Uint8Array: current value is ${describe(bytes)}`);
    }
    const w = this.#w;
    w.reset();
    const p = w.alloc(bytes.length);
    if (p === 0) throw JpegError.fromCode(15, 0, ` (${bytes.length} bytes of input)`);
    new Uint8Array(w.memory.buffer, p, bytes.length).set(bytes);
    return p;
  }

  #check(rc: number, bytes: Uint8Array): void {
    if (rc !== 0) {
      const w = this.#w;
      // Not a JPEG: say what it is instead (text, a PNG, a GIF…), by its first bytes.
      const detail = rc === 14 ? ` (${w.frameWidth()}×${w.frameHeight()})` : rc === 2 ? `; ${describeStart(bytes)}` : "";
      throw JpegError.fromCode(rc, w.errorOffset(), detail);
    }
  }

  decode(bytes: Uint8Array, options: JpegDecodeOptions = {}): JpegImage {
    const { out } = this.#pixels(bytes, options, undefined, 0);
    const w = this.#w;
    const img: JpegImage = { width: w.outWidth(), height: w.outHeight(), channels: w.outChannels() as 1 | 3, data: out as Uint8Array<ArrayBuffer>, orientation: w.frameOrientation() };
    return options.applyOrientation ? orient(img) : img;
  }

  decodeInto(bytes: Uint8Array, target: Uint8Array, offset: number, options: JpegDecodeOptions = {}): JpegDecodedInto {
    checkTarget(target, offset, "JPEG");
    this.#pixels(bytes, options, target, offset);
    const w = this.#w;
    let width = w.outWidth(), height = w.outHeight();
    const channels = w.outChannels() as 1 | 3;
    const n = width * height * channels;
    let orientation = w.frameOrientation();
    if (options.applyOrientation && orientation > 1 && orientation <= 8) {
      // A turned image is rewritten in place through one copy (rare: cameras' photos).
      const turned = orient({ width, height, channels, orientation, data: target.subarray(offset, offset + n) as Uint8Array<ArrayBuffer> });
      target.set(turned.data, offset);
      ({ width, height, orientation } = turned);
    }
    return { width, height, channels, orientation, bytes: n };
  }

  inspect(bytes: Uint8Array): JpegInfo {
    const w = this.#w;
    const p = this.#load(bytes);
    this.#check(w.inspect(p, bytes.length), bytes);
    const n = w.frameComponents();
    const m = w.frameMarker();
    const sampling = [];
    for (let c = 0; c < Math.min(n, 4); c++) sampling.push({ id: w.compId(c), h: w.compH(c), v: w.compV(c) });
    return {
      width: w.frameWidth(),
      height: w.frameHeight(),
      components: n,
      colorSpace: COLOR_SPACES[w.colorSpace()],
      process: processOf(m),
      progressive: m === 0xc2 || m === 0xca || m === 0xc6 || m === 0xce,
      precision: w.framePrecision(),
      sampling,
      restartInterval: w.frameRestartInterval(),
      orientation: w.frameOrientation(),
    };
  }

  decodeDct(bytes: Uint8Array, options: JpegDecodeOptions = {}): DctImage | undefined {
    checkDecodeOptions(options);
    // What the GPU pass does not do stays on the CPU: a scaled decode, a turn, CMYK. Told by the
    // coefficients' own header, not a second pass over the file's markers: the rare file that
    // goes to pixels costs an entropy decode, the common one no extra load. A region gives the
    // blocks its pixels read.
    if ((options.scale ?? 1) !== 1) return undefined;
    const img = this.#coefficients(bytes, options);
    if (img.colorSpace === "cmyk" || img.colorSpace === "ycck") return undefined;
    if (options.applyOrientation && img.orientation > 1) return undefined;
    if (options.grey && img.colorSpace === "rgb") return undefined; // weighted, not a component
    // libjpeg's grey output of YCbCr is its luma as it is (wasm/jpeg/decoder.ts, lumaOnly).
    if (options.grey && img.colorSpace === "ycbcr") return { ...img, colorSpace: "gray", components: [img.components[0]] };
    return img;
  }

  readScan(bytes: Uint8Array, options: Pick<JpegDecodeOptions, "maxPixels"> = {}): JpegScan | JpegScanRefusal {
    const maxPixels = maxPixelsOf(options);
    const w = this.#w;
    const p = this.#load(bytes);
    const refuse = (reason: string): JpegScanRefusal => ({ kind: "jpeg-refused", reason });
    // A header that does not read goes to the CPU too, whose decode names its error (inspect
    // stops at the first scan and may meet another error first).
    const rc = w.inspect(p, bytes.length);
    if (rc !== 0) return refuse(`its header does not read (${JpegError.fromCode(rc, w.errorOffset()).message})`);
    const marker = w.frameMarker();
    if (marker !== 0xc0 && marker !== 0xc1) return refuse(`its process is ${processOf(marker)}`);
    if (w.framePrecision() !== 8) return refuse(`its samples have ${w.framePrecision()} bits`);
    const width = w.frameWidth(), height = w.frameHeight();
    if (width * height > maxPixels) return refuse(`it has more than ${maxPixels} pixels`);
    const colorSpace = COLOR_SPACES[w.colorSpace()];
    if (colorSpace !== "gray" && colorSpace !== "ycbcr" && colorSpace !== "rgb") return refuse(`its colour space is ${colorSpace}`);
    const n = w.frameComponents();
    const ns = w.scanComponents();
    if (ns !== n) return refuse(`its first scan carries ${ns} of its ${n} components`);
    if (w.scanSs() !== 0 || w.scanSe() !== 63 || w.scanAh() !== 0 || w.scanAl() !== 0) return refuse("its scan is not a whole sequential one");
    for (let i = 0; i < n; i++) if (w.scanComponent(i) !== i) return refuse("its scan carries its components out of frame order");
    let hmax = 1, vmax = 1, perMcu = 0;
    for (let c = 0; c < n; c++) {
      hmax = Math.max(hmax, w.compH(c));
      vmax = Math.max(vmax, w.compV(c));
      perMcu += w.compH(c) * w.compV(c);
    }
    if (n > 1 && perMcu > 10) return refuse(`its MCU has ${perMcu} blocks`);
    const huff = w.huffmanDefined(), quant = w.quantDefined();
    const tables: (HuffmanSource | undefined)[] = [];
    for (let s = 0; s < 8; s++) tables.push(huff & (1 << s) ? this.#huffman(s) : undefined);
    const mcusX = Math.ceil(width / (8 * hmax)), mcusY = Math.ceil(height / (8 * vmax)); // A.2.4
    const components: JpegScanComponent[] = [];
    for (let c = 0; c < n; c++) {
      const h = w.compH(c), v = w.compV(c), tq = w.compTq(c), dc = w.compTd(c), ac = w.compTa(c);
      if (!(quant & (1 << tq)) || !tables[dc] || !tables[4 + ac]) return refuse("a table its scan uses is not defined");
      const qt = w.quantTable(tq);
      components.push({
        id: w.compId(c), h, v, blocksW: mcusX * h, blocksH: mcusY * v,
        width: Math.ceil((width * h) / hmax), height: Math.ceil((height * v) / vmax),
        quant: new Uint16Array(w.memory.buffer, qt, 64).slice(), dc, ac,
      });
    }
    // One component: a non-interleaved scan of the component's own blocks (A.2.2).
    const across = n === 1 ? Math.ceil(components[0].width / 8) : mcusX;
    const down = n === 1 ? Math.ceil(components[0].height / 8) : mcusY;
    const interval = w.frameRestartInterval();
    const intervals = interval ? Math.ceil((across * down) / interval) : 1;
    const found = w.unstuff(w.scanStart(), intervals);
    const ended = w.unstuffedMarker();
    if (found === -1) return refuse("its scan runs to the end of the file");
    if (found === -2) return refuse(`marker 0x${ended.toString(16)} follows its first scan`);
    if (found === -3) return refuse(`restart marker RST${ended - 0xd0} is out of sequence`);
    if (found === -4) return refuse(`it holds more than the ${intervals} restart intervals its MCUs make`);
    if (found < 0) throw JpegError.fromCode(15, 0, ` (${bytes.length} bytes of input)`);
    if (found !== intervals) return refuse(`it holds ${found} restart intervals where its MCUs make ${intervals}`);
    const at = w.unstuffedData(), length = w.unstuffedLength();
    return {
      kind: "jpeg-scan", width, height, colorSpace, orientation: w.frameOrientation(), components,
      mcusX: across, mcusY: down, restartInterval: interval, tables,
      entropy: new Uint8Array(w.memory.buffer, at, length + 4).slice(),
      intervals: new Uint32Array(w.memory.buffer, w.unstuffedCuts(), 2 * found).slice(),
      file: bytes,
    };
  }

  /**
   * Slot s's Huffman table, as the module holds it: the same object as the last image's where
   * the bytes are the same (most files of a set carry the same tables), so the GPU's upload
   * finds it shared by identity, and nothing is allocated for it.
   */
  #huffman(s: number): HuffmanSource {
    const w = this.#w;
    const at = w.huffmanSource(s);
    const mem = new Uint8Array(w.memory.buffer);
    const count = mem[at] | (mem[at + 1] << 8);
    const last = this.#tables[s];
    if (last && last.symbols.length === count) {
      let same = true;
      for (let i = 0; i < 16 && same; i++) same = last.counts[i] === mem[at + 4 + i];
      for (let i = 0; i < count && same; i++) same = last.symbols[i] === mem[at + 20 + i];
      if (same) return last;
    }
    return (this.#tables[s] = { counts: mem.slice(at + 4, at + 20), symbols: mem.slice(at + 20, at + 20 + count) });
  }

  decodeCoefficients(bytes: Uint8Array, options: Pick<JpegDecodeOptions, "maxPixels"> = {}): JpegCoefficients {
    return this.#coefficients(bytes, { maxPixels: options.maxPixels });
  }

  /** The coefficients, of a region's block windows when one is given (NOTE [ DCT record ] holds either). */
  #coefficients(bytes: Uint8Array, options: Pick<JpegDecodeOptions, "maxPixels" | "region">): DctImage {
    const maxPixels = maxPixelsOf(options);
    const w = this.#w;
    const p = this.#load(bytes);
    const r = options.region;
    const rc = w.decode(p, bytes.length, 0, maxPixels, MODE_COEFFICIENTS, r?.x ?? 0, r?.y ?? 0, r?.width ?? 0, r?.height ?? 0);
    if (rc === E_BAD_REGION) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode JPEG as 'region' (x ${r!.x}, y ${r!.y}, ${r!.width}×${r!.height}) lies outside the image (${w.frameWidth()}×${w.frameHeight()})`);
    }
    this.#check(rc, bytes);
    const width = w.frameWidth();
    const height = w.frameHeight();
    const n = w.frameComponents();
    let hmax = 1, vmax = 1;
    for (let c = 0; c < n; c++) {
      hmax = Math.max(hmax, w.compH(c));
      vmax = Math.max(vmax, w.compV(c));
    }
    const mem = w.memory.buffer;
    const components: JpegComponentCoefficients[] = [];
    for (let c = 0; c < n; c++) {
      const h = w.compH(c), v = w.compV(c);
      const gridW = w.compBlocksW(c);
      const x0 = w.compBlockX0(c), y0 = w.compBlockY0(c);
      const bw = w.compBlockX1(c) - x0, bh = w.compBlockY1(c) - y0;
      const cp = w.compCoefficients(c);
      const qp = w.compQuant(c);
      // The window's rows of blocks, one copy each (all of them at once without a region).
      const coefficients = new Int16Array(bw * bh * 64);
      if (bw === gridW) coefficients.set(new Int16Array(mem, cp + y0 * gridW * 128, bw * bh * 64));
      else for (let y = 0; y < bh; y++) coefficients.set(new Int16Array(mem, cp + ((y0 + y) * gridW + x0) * 128, bw * 64), y * bw * 64);
      components.push({
        id: w.compId(c),
        h,
        v,
        blocksW: bw,
        blocksH: bh,
        ...(r ? { blockX: x0, blockY: y0 } : {}),
        width: Math.ceil((width * h) / hmax),
        height: Math.ceil((height * v) / vmax),
        quant: new Uint16Array(mem.slice(qp, qp + 128)),
        coefficients,
      });
    }
    const m = w.frameMarker();
    return {
      width,
      height,
      colorSpace: COLOR_SPACES[w.colorSpace()],
      progressive: m === 0xc2,
      orientation: w.frameOrientation(),
      components,
      ...(r ? { region: { x: w.outX(), y: w.outY(), width: w.outWidth(), height: w.outHeight() } } : {}),
    };
  }
}

function processOf(m: number): JpegProcess {
  if (m === 0xc0) return "baseline";
  if (m === 0xc1) return "extended";
  if (m === 0xc2) return "progressive";
  if (m === 0xc3) return "lossless";
  if (m >= 0xc5 && m <= 0xc7) return "hierarchical";
  return "arithmetic";
}
