/**
 * A scan image (src/decode/jpeg_scan.ts, the GPU decode's hand-over, `decode: "gpu"`) as one
 * run of bytes, so that a read worker writes it into its packet beside the pixels and DCT
 * records of other samples and the loader's thread reads it back as views, no copy (NOTE
 * [ Packets ], src/read/packet.ts), as a DCT record is (NOTE [ DCT record ], src/decode/dct.ts).
 *
 * NOTE [ Scan record ]: little-endian, every part on a 4-byte boundary:
 *
 *   ┌───────────────┬────────────────────────┬─────────────────────┬──────────────────────┬─────────┬───────────┬──────┐
 *   │header 16 × i32│ components 8 × i32 each │ quant 64 × u16 each │ tables, each defined: │ entropy │ intervals │ file │
 *   │               │                         │                     │ 16 counts, symbols    │  bytes  │ 2 × u32   │bytes │
 *   └───────────────┴────────────────────────┴─────────────────────┴──────────────────────┴─────────┴───────────┴──────┘
 *   header:     MAGIC │ WIDTH │ HEIGHT │ COLOR │ ORIENTATION │ COMPONENTS │ MCUS_X │ MCUS_Y │
 *               RESTART │ TABLES │ ENTROPY │ INTERVALS │ FILE │ – │ – │ –
 *                 TABLES: bit s set where table s (DC 0…3, then AC 0…3) is defined, in that order
 *                 after the quant tables; ENTROPY and FILE in bytes, INTERVALS in intervals
 *   component:  ID │ H │ V │ BLOCKS_W │ BLOCKS_H │ WIDTH │ HEIGHT │ DC | AC << 8
 *   table:      16 bytes of code counts, then as many symbols as they sum to, padded to 4
 *
 * Each part after the header is padded to 4 bytes, so that `intervals` is a Uint32Array view
 * and the quant tables Uint16Array views. The file rides along (about as many bytes again as
 * the entropy-coded data) because the GPU hands an image it cannot vouch for back to the CPU,
 * which decodes the file (PreprocessedBatch.gpuDecode.cpuDecoded): a record without it would
 * have to point into the packet's sample bytes, which a batch table (PackedImages) does not
 * carry, and reading the scan again from the file on the loader's thread would put the
 * unstuffing pass back on the thread that feeds the GPU. The record's length is
 * `scanBytes(scan)`.
 */
import { CassetteError } from "../errors.ts";
import type { HuffmanSource, JpegScan, JpegScanComponent } from "./jpeg_scan.ts";

const MAGIC = 0x5343414e; // "SCAN"
const HEADER = 16, COMP = 8;
const COLORS: JpegScan["colorSpace"][] = ["gray", "ycbcr", "rgb"];

const pad4 = (n: number) => (n + 3) & ~3;

/** Bytes of `scan`'s record (NOTE [ Scan record ]). */
export function scanBytes(scan: JpegScan): number {
  const n = scan.components.length;
  let bytes = (HEADER + n * COMP) * 4 + n * 128;
  for (const t of scan.tables) if (t) bytes += 16 + pad4(t.symbols.length);
  return bytes + pad4(scan.entropy.length) + scan.intervals.length * 4 + pad4(scan.file.length);
}

/** Writes `scan`'s record into `dst` from `at` (a multiple of 4); returns the bytes written. */
export function writeScan(scan: JpegScan, dst: Uint8Array, at: number): number {
  const n = scan.components.length;
  const bytes = scanBytes(scan);
  if (at % 4 !== 0 || at + bytes > dst.length) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot write a scan record of ${bytes} bytes at ${at} as the target holds ${dst.length} bytes and records start on 4-byte boundaries`);
  }
  // Padding is left as it is (a reused packet's earlier bytes): no view reaches it.
  const words = new Int32Array(dst.buffer, dst.byteOffset + at, HEADER + n * COMP);
  let defined = 0;
  scan.tables.forEach((t, s) => void (t && (defined |= 1 << s)));
  words.set([
    MAGIC, scan.width, scan.height, COLORS.indexOf(scan.colorSpace), scan.orientation, n, scan.mcusX, scan.mcusY,
    scan.restartInterval, defined, scan.entropy.length, scan.intervals.length / 2, scan.file.length, 0, 0, 0,
  ]);
  scan.components.forEach((c, j) => words.set([c.id, c.h, c.v, c.blocksW, c.blocksH, c.width, c.height, c.dc | (c.ac << 8)], HEADER + j * COMP));
  let p = at + words.byteLength;
  for (const c of scan.components) {
    dst.set(new Uint8Array(c.quant.buffer, c.quant.byteOffset, 128), p);
    p += 128;
  }
  for (const t of scan.tables) {
    if (!t) continue;
    dst.set(t.counts.subarray(0, 16), p);
    dst.set(t.symbols, p + 16);
    p += 16 + pad4(t.symbols.length);
  }
  dst.set(scan.entropy, p);
  p += pad4(scan.entropy.length);
  dst.set(new Uint8Array(scan.intervals.buffer, scan.intervals.byteOffset, scan.intervals.byteLength), p);
  p += scan.intervals.byteLength;
  dst.set(scan.file, p);
  return bytes;
}

/**
 * The scan image whose record starts at `at` in `buf`: its quant tables, Huffman tables,
 * entropy-coded data, intervals and file are views of `buf`. A record that does not hold
 * together (not one, or cut) is ERR_MALFORMED_INPUT saying where.
 */
export function readScanRecord(buf: Uint8Array, at: number, length: number): JpegScan {
  const bad = (why: string) => new CassetteError("ERR_MALFORMED_INPUT", `Cannot read the scan record at byte ${at} (${length} bytes) as ${why}`);
  if (at % 4 !== 0 || !(length >= HEADER * 4) || at + length > buf.length) throw bad(`it must start on a 4-byte boundary and lie within the ${buf.length} bytes`);
  const end = at + length;
  const head = new Int32Array(buf.buffer, buf.byteOffset + at, HEADER);
  const [magic, width, height, color, orientation, n, mcusX, mcusY, restartInterval, defined, entropyLen, intervalCount, fileLen] = head;
  if (magic !== MAGIC || !(n >= 1 && n <= 4) || !COLORS[color] || defined >>> 8 !== 0) {
    throw bad(`its header is not one (magic ${magic}, ${n} components, colour ${color}, tables 0x${defined.toString(16)})`);
  }
  let p = at + (HEADER + n * COMP) * 4;
  const room = (bytes: number, what: string) => {
    if (!(bytes >= 0) || p + bytes > end) throw bad(`${what} (${bytes} bytes from byte ${p}) runs past its end`);
  };
  room(n * 128, "its quant tables");
  const words = new Int32Array(buf.buffer, buf.byteOffset + at, HEADER + n * COMP);
  const components: JpegScanComponent[] = [];
  for (let j = 0; j < n; j++) {
    const [id, h, v, blocksW, blocksH, cw, ch, tables] = words.subarray(HEADER + j * COMP);
    const quant = new Uint16Array(buf.buffer, buf.byteOffset + p, 64);
    components.push({ id, h, v, blocksW, blocksH, width: cw, height: ch, quant, dc: tables & 0xff, ac: tables >>> 8 });
    p += 128;
  }
  const tables: (HuffmanSource | undefined)[] = [];
  for (let s = 0; s < 8; s++) {
    if (!(defined & (1 << s))) {
      tables.push(undefined);
      continue;
    }
    room(16, `Huffman table ${s}'s counts`);
    const counts = buf.subarray(p, p + 16);
    const symbols = counts.reduce((a, c) => a + c, 0);
    room(16 + symbols, `Huffman table ${s}'s ${symbols} symbols`);
    tables.push({ counts, symbols: buf.subarray(p + 16, p + 16 + symbols) });
    p += 16 + pad4(symbols);
  }
  room(entropyLen, "its entropy-coded data");
  const entropy = buf.subarray(p, p + entropyLen);
  p += pad4(entropyLen);
  room(intervalCount * 8, `its ${intervalCount} restart intervals`);
  const intervals = new Uint32Array(buf.buffer, buf.byteOffset + p, 2 * intervalCount);
  p += intervalCount * 8;
  room(fileLen, "its file");
  const file = buf.subarray(p, p + fileLen);
  return {
    kind: "jpeg-scan", width, height, colorSpace: COLORS[color], orientation, components, mcusX, mcusY, restartInterval, tables, entropy, intervals, file,
  };
}
