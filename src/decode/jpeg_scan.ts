/**
 * A baseline JPEG read up to its entropy-coded data (`JpegDecoder.readScan`): what the GPU's
 * Huffman decode needs (src/gpu/huffman.ts, `decode: "gpu"`). The CPU's part is the header
 * (the wasm decoder's marker code) and one pass that takes the byte stuffing out of the scan
 * (T.81 F.1.2.3) and cuts it at its restart markers (B.1.1.5, F.1.2.3), also in the wasm
 * module (wasm/jpeg/unstuff.ts); no code is decoded.
 *
 * NOTE [ What the GPU decodes ]
 * Only what it decodes exactly as the wasm decoder does, and the rest goes to the CPU, file by
 * file, so that `decode: "gpu"` changes where a file is decoded and never what it decodes to:
 *   - here, a file is refused (`JpegScanRefusal`, the caller decodes it on the CPU) unless it is
 *     sequential Huffman (SOF0 or SOF1), 8-bit, grey, YCbCr or RGB, with one scan that carries
 *     every component (0…63, no successive approximation), at most 10 blocks an MCU, every
 *     table defined, restart markers in sequence and as many intervals as its MCUs make, and
 *     EOI right after the scan;
 *   - on the GPU, an image is handed back to the CPU (`PreprocessedBatch.cpuDecoded`) when any
 *     code is not in its table, a DC magnitude is above 15, a run passes the block's end, a
 *     code would need bits past its interval, an interval ends early, or more than its last
 *     byte's fill bits follow its last MCU (the wasm decoder accepts or refuses such files
 *     depending on how far its reader had read ahead: the CPU settles it).
 * The CPU's decode of a refused or handed-back file gives the pixels, or the named error, that
 * it would give without the GPU.
 */

/** One component of a scan image, in frame order. */
export interface JpegScanComponent {
  /** Component identifier (C_i of the frame header). */
  id: number;
  /** Horizontal sampling factor. */
  h: number;
  /** Vertical sampling factor. */
  v: number;
  /** Blocks across, padded to whole MCUs (as `DctComponent`'s). */
  blocksW: number;
  /** Blocks down, padded to whole MCUs. */
  blocksH: number;
  /** Samples across, ⌈width·h / hmax⌉. */
  width: number;
  /** Samples down, ⌈height·v / vmax⌉. */
  height: number;
  /** The quantization table in force at the scan, 64 entries in natural order. */
  quant: Uint16Array;
  /** The scan's DC Huffman table (0…3). */
  dc: number;
  /** The scan's AC Huffman table (0…3). */
  ac: number;
}

/** A Huffman table as DHT gives it (B.2.4.2): codes per length 1…16, then the symbols. */
export interface HuffmanSource {
  /** Codes of each length, 1…16 bits. */
  counts: Uint8Array;
  /** HUFFVAL: the symbols in order of increasing code length. */
  symbols: Uint8Array;
}

/** A baseline JPEG as its header and its entropy-coded data, for the GPU to decode (NOTE [ What the GPU decodes ]). */
export interface JpegScan {
  /** Tells a scan image from pixels and DCT blocks. */
  readonly kind: "jpeg-scan";
  /** Width in pixels, as stored. */
  width: number;
  /** Height in pixels, as stored. */
  height: number;
  /** The components' colour space. */
  colorSpace: "gray" | "ycbcr" | "rgb";
  /** Exif orientation 1…8 (1 when absent); never applied. */
  orientation: number;
  /** The components, in frame order (the scan carries them in this order too). */
  components: JpegScanComponent[];
  /** MCUs across the scan (a grey image's: its blocks). */
  mcusX: number;
  /** MCUs down the scan. */
  mcusY: number;
  /** MCUs per restart interval, 0 for none. */
  restartInterval: number;
  /** DC tables 0…3 then AC tables 0…3; undefined where the file defines none. */
  tables: (HuffmanSource | undefined)[];
  /** The scan's bytes, stuffing and markers taken out; each interval starts on a 4-byte boundary. */
  entropy: Uint8Array;
  /** Per restart interval: its first byte in `entropy` and its length in bytes, as pairs. */
  intervals: Uint32Array;
  /** The file, for the CPU when the GPU hands the image back. */
  file: Uint8Array;
}

/** Why a file goes to the CPU instead (`JpegDecoder.readScan`). */
export interface JpegScanRefusal {
  /** Tells a refusal from a scan. */
  readonly kind: "jpeg-refused";
  /** In words: "progressive", "arithmetic coding", "3 scans", … */
  reason: string;
}

/** True for a scan image (as opposed to pixels or DCT blocks). */
export function isJpegScan(x: object): x is JpegScan {
  return (x as { kind?: unknown }).kind === "jpeg-scan";
}
