/**
 * A baseline JPEG read up to its entropy-coded data (`JpegDecoder.readScan`): what the GPU's
 * Huffman decode needs (src/gpu/huffman.ts, `decode: "gpu"`). The CPU's part is the header
 * (the wasm decoder's marker code) and one pass that takes the byte stuffing out of the scan
 * (T.81 F.1.2.3) and cuts it at its restart markers (B.1.1.5, F.1.2.3); no code is decoded.
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
  /** Horizontal and vertical sampling factors. */
  h: number;
  v: number;
  /** Blocks across and down, padded to whole MCUs (as `DctComponent`'s). */
  blocksW: number;
  blocksH: number;
  /** Samples across and down, ⌈width·h / hmax⌉ × ⌈height·v / vmax⌉. */
  width: number;
  height: number;
  /** The quantization table in force at the scan, 64 entries in natural order. */
  quant: Uint16Array;
  /** The scan's DC and AC Huffman tables (0…3). */
  dc: number;
  ac: number;
}

/** A Huffman table as DHT gives it (B.2.4.2): codes per length 1…16, then the symbols. */
export interface HuffmanSource {
  counts: Uint8Array;
  symbols: Uint8Array;
}

/** A baseline JPEG as its header and its entropy-coded data, for the GPU to decode (NOTE [ What the GPU decodes ]). */
export interface JpegScan {
  readonly kind: "jpeg-scan";
  /** Width and height in pixels, as stored. */
  width: number;
  height: number;
  colorSpace: "gray" | "ycbcr" | "rgb";
  /** Exif orientation 1…8 (1 when absent); never applied. */
  orientation: number;
  /** The components, in frame order (the scan carries them in this order too). */
  components: JpegScanComponent[];
  /** MCUs across and down the scan (a grey image's: its blocks). */
  mcusX: number;
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
  readonly kind: "jpeg-refused";
  /** In words: "progressive", "arithmetic coding", "3 scans", … */
  reason: string;
}

/** True for a scan image (as opposed to pixels or DCT blocks). */
export function isJpegScan(x: object): x is JpegScan {
  return (x as { kind?: unknown }).kind === "jpeg-scan";
}

/**
 * The entropy-coded data of the scan starting at `start` of `file`, its stuffing out and cut at
 * its restart markers (each interval on a 4-byte boundary), or why it cannot be (a refusal, in
 * words). It must end with EOI, with `intervals` intervals.
 */
export function unstuffScan(file: Uint8Array, start: number, intervals: number): { data: Uint8Array; intervals: Uint32Array } | string {
  const n = file.length;
  const data = new Uint8Array(n - start + 4 * intervals + 4);
  const cuts = new Uint32Array(2 * intervals);
  let p = start, o = 0, first = 0, seen = 0, rst = 0;
  while (true) {
    // Runs without 0xFF go over in one copy: 0xFF is ~1/256 of a photo's entropy-coded bytes.
    const q = file.indexOf(0xff, p);
    if (q < 0) return "its scan runs to the end of the file";
    data.set(file.subarray(p, q), o);
    o += q - p;
    if (q + 1 >= n) return "its scan runs to the end of the file";
    if (file[q + 1] === 0) {
      data[o++] = 0xff; // a stuffed 0xFF data byte
      p = q + 2;
      continue;
    }
    let r = q + 1;
    while (r < n && file[r] === 0xff) r++; // fill bytes before a marker (B.1.1.2)
    if (r >= n) return "its scan runs to the end of the file";
    const m = file[r];
    const rstMarker = m >= 0xd0 && m <= 0xd7;
    if (!rstMarker && m !== 0xd9) return `marker 0x${m.toString(16)} follows its first scan`;
    if (seen === intervals) return `it holds more than the ${intervals} restart intervals its MCUs make`;
    cuts[2 * seen] = first;
    cuts[2 * seen + 1] = o - first;
    seen++;
    if (m === 0xd9) break;
    if (m !== 0xd0 + rst) return `restart marker RST${m - 0xd0} comes where RST${rst} is due`;
    rst = (rst + 1) & 7;
    o = first = Math.ceil(o / 4) * 4;
    p = r + 1;
  }
  if (seen !== intervals) return `it holds ${seen} restart intervals where its MCUs make ${intervals}`;
  return { data: data.subarray(0, Math.ceil(o / 4) * 4 + 4), intervals: cuts };
}
