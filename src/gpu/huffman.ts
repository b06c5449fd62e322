/**
 * The GPU JPEG decode (`decode: "gpu"`): the CPU reads each file's header and takes the
 * stuffing out of its scan (`JpegDecoder.readScan`); the GPU decodes the Huffman codes into the
 * coefficient upload's blocks (shaders/preprocess/huffman.wgsl), and the hybrid path's kernels
 * finish them (src/gpu/idct.ts). What goes to the GPU, and what is handed back to the CPU, is
 * NOTE [ What the GPU decodes ] (src/decode/jpeg_scan.ts).
 *
 * NOTE [ Parallel Huffman decoding ]
 * A scan is one bit stream per restart interval, and a code's length is known only once the
 * codes before it are read. After Weißenberger and Schmidt ("Massively Parallel Huffman
 * Decoding on GPUs", ICPP 2018; the approach their JPEG decoder takes), each interval is cut
 * into chunks of CHUNK_BITS, one thread a chunk. Where a chunk's first code starts is not known,
 * so its thread guesses: it starts decoding LEAD_BITS (4 096) before the chunk, at the first
 * block of an MCU, and takes as the chunk's start the first code boundary at or past the
 * chunk's first bit. A Huffman decode begun at a wrong bit tends to fall onto the true code
 * boundaries within a few codes; once it is on them in the true block of the MCU and position
 * in it, it stays there. The block matters: with 4:2:0's six blocks an MCU, a decode on the true
 * boundaries but in the wrong block reads luma codes with chroma tables and falls off again, so
 * a guess at the chunk's own first bit was right by its end for too few chunks (15 % were left
 * to settle on the bench photos); with the lead, 97 % of the guesses start where their
 * predecessor's decode ends (bench/RESULTS.md). `resync` rounds decode again each chunk whose
 * start differs from its predecessor's new exit; `settle` finishes the chain one interval at a
 * time, so a stream whose guesses never synchronize is still decoded exactly, only more slowly.
 * An interval's first chunk starts exactly, and so do restart intervals.
 *
 * NOTE [ Scan upload ]  one storage buffer, array<u32>, built by `planScans`:
 *
 *   ┌────────┬────────────────┬─────────────────┬──────────────────┬──────────────────────────┐
 *   │ header │ Huffman tables │ image records   │ interval records │ data: each image's bytes, │
 *   │ 8 w    │ 616 w each     │ 24 w each       │ 8 w each         │ from a word boundary      │
 *   └────────┴────────────────┴─────────────────┴──────────────────┴──────────────────────────┘
 *   header:    images, intervals, chunks, tables at, intervals at, images at, data at, CHUNK_BITS
 *   table:     LUT 512 w (a 9-bit prefix → length << 8 | symbol, 0: longer or none) │ MAXCODE
 *              18 w (i32, −1: no code of that length) │ VALOFF 18 w │ N │ – │ – │ – │
 *              HUFFVAL 64 w (4 symbols a word, low byte first)
 *   image:     first component record (in the coefficient upload) │ blocks an MCU │ MCUs across │
 *              status slot │ then per block of the MCU (≤ 10) 2 w: component | h << 4 | v << 8 |
 *              x << 12 | y << 16 (its place in the MCU; h = v = 1 for one component) and
 *              DC table | AC table << 16 (table records, shared by images with the same tables)
 *   interval:  image │ first bit │ end bit (bits of the data region, big-endian within bytes) │
 *              first chunk │ chunks │ first block │ blocks
 * Huffman tables are built here (T.81 C.2, F.2.2.3) from the DHT the wasm decoder read, and
 * deduplicated: most files of a batch carry the same four.
 */
import huffmanCode from "../../shaders/preprocess/huffman.wgsl" with { type: "text" };
import { CassetteError } from "../errors.ts";
import type { HuffmanSource, JpegScan } from "../decode/jpeg_scan.ts";
import { grid, Kernel, type KernelSpec } from "./kernel.ts";

export type { JpegScan } from "../decode/jpeg_scan.ts";

/** Bits of entropy-coded data one thread decodes. */
export const CHUNK_BITS = 1024;
/** `resync` rounds after the speculative one (NOTE [ Parallel Huffman decoding ]). */
export const RESYNC_ROUNDS = 2;
const HEADER = 8, TABLE_WORDS = 616, IMAGE_WORDS = 24, INTERVAL_WORDS = 8, CHUNK_WORDS = 16;
/** status: 0 chunks settle decoded again, 1 chunks resync decoded again, then one word per image. */
export const STATUS_IMAGES = 4;
const WORKGROUP = 64;

const bindings: KernelSpec["bindings"] = ["read-only-storage", "storage", "read-only-storage", "storage", "storage"];
const kernels = Object.fromEntries(
  (["speculate", "resync", "settle", "emit"] as const).map((e) => [e, new Kernel({ name: `preprocess/huffman:${e}`, code: huffmanCode, entryPoint: e, bindings })]),
) as Record<"speculate" | "resync" | "settle" | "emit", Kernel>;

/** What an image's flags say (huffman.wgsl's F_…), in words. */
export function describeFlags(flags: number): string {
  const words = [];
  if (flags & 1) words.push("a code its tables do not hold, or a run past a block's end");
  if (flags & 2) words.push("an interval that ends before its last MCU");
  if (flags & 4) words.push("bytes after an interval's last MCU");
  if (flags & 8) words.push("a block outside its component");
  return words.join("; ");
}

/** A batch's scan images, laid out for the GPU (NOTE [ Scan upload ]). */
export interface ScanPlan {
  /** Bytes of the scan upload. */
  uploadBytes: number;
  /** Bytes of each of the two chunk-state buffers. */
  stateBytes: number;
  /** Bytes of the status buffer. */
  statusBytes: number;
  images: number;
  intervals: number;
  chunks: number;
  /** Distinct Huffman tables uploaded. */
  tables: number;
  /** Writes the upload into `dst` (uploadBytes long). */
  write(dst: Uint8Array): void;
}

/**
 * Lays out `scans` (each with the index of its first component record in the batch's
 * coefficient upload, src/gpu/idct.ts).
 */
export function planScans(scans: readonly { scan: JpegScan; component: number }[]): ScanPlan {
  // Tables shared by identity first (readScan gives the same object for the same bytes), then
  // by content (a packet's scan records give views of their own): a hash, then the bytes.
  const seen = new Map<HuffmanSource, number>();
  const byHash = new Map<number, number[]>();
  const tables: HuffmanSource[] = [];
  const tableOf = (t: HuffmanSource) => {
    let i = seen.get(t);
    if (i !== undefined) return i;
    const h = hashTable(t);
    const same = byHash.get(h) ?? [];
    i = same.find((j) => sameTable(tables[j], t));
    if (i === undefined) {
      same.push((i = tables.length));
      byHash.set(h, same);
      tables.push(t);
    }
    seen.set(t, i);
    return i;
  };
  let intervals = 0, chunks = 0, dataWords = 0;
  const slots = scans.map(({ scan }) => {
    const used = scan.components.map((c) => [tableOf(scan.tables[c.dc]!), tableOf(scan.tables[4 + c.ac]!)]);
    intervals += scan.intervals.length / 2;
    for (let i = 1; i < scan.intervals.length; i += 2) chunks += Math.ceil((scan.intervals[i] * 8) / CHUNK_BITS);
    dataWords += Math.ceil(scan.entropy.length / 4);
    return used;
  });
  const tablesAt = HEADER;
  const imagesAt = tablesAt + tables.length * TABLE_WORDS;
  const intervalsAt = imagesAt + scans.length * IMAGE_WORDS;
  const dataAt = intervalsAt + intervals * INTERVAL_WORDS;
  const total = dataAt + dataWords + 1; // one word past the data: a window reads two
  if (dataWords * 32 >= 2 ** 32) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode a batch of ${scans.length} JPEGs on the GPU as their scans hold ${dataWords * 4} bytes, above the 512 MiB a batch may: use smaller batches`);
  }
  return {
    uploadBytes: total * 4,
    stateBytes: Math.max(1, chunks) * CHUNK_WORDS * 4,
    statusBytes: (STATUS_IMAGES + scans.length) * 4,
    images: scans.length,
    intervals,
    chunks,
    tables: tables.length,
    write(dst: Uint8Array) {
      const u = new Uint32Array(dst.buffer, dst.byteOffset, total);
      u.set([scans.length, intervals, chunks, tablesAt, intervalsAt, imagesAt, dataAt, CHUNK_BITS], 0);
      tables.forEach((t, i) => writeTable(u, tablesAt + i * TABLE_WORDS, t));
      const bytes = new Uint8Array(dst.buffer, dst.byteOffset, total * 4);
      let interval = 0, chunk = 0, data = 0;
      scans.forEach(({ scan, component }, k) => {
        const n = scan.components.length;
        const rec = imagesAt + k * IMAGE_WORDS;
        let bpm = 0;
        const entries: number[] = [];
        scan.components.forEach((c, j) => {
          const h = n === 1 ? 1 : c.h, v = n === 1 ? 1 : c.v;
          for (let y = 0; y < v; y++) {
            for (let x = 0; x < h; x++) {
              entries.push(j | (h << 4) | (v << 8) | (x << 12) | (y << 16), slots[k][j][0] | (slots[k][j][1] << 16));
              bpm++;
            }
          }
        });
        u.set([component, bpm, scan.mcusX, k, ...entries], rec);
        bytes.set(scan.entropy, (dataAt + data) * 4);
        const mcus = scan.mcusX * scan.mcusY;
        const per = scan.restartInterval || mcus;
        for (let s = 0; s < scan.intervals.length / 2; s++) {
          const first = (data * 4 + scan.intervals[2 * s]) * 8;
          const bits = scan.intervals[2 * s + 1] * 8;
          const count = Math.ceil(bits / CHUNK_BITS);
          const mcu0 = s * per;
          u.set([k, first, first + bits, chunk, count, mcu0 * bpm, (Math.min(mcus, mcu0 + per) - mcu0) * bpm, 0], intervalsAt + interval * INTERVAL_WORDS);
          interval++;
          chunk += count;
        }
        data += Math.ceil(scan.entropy.length / 4);
      });
      u[dataAt + dataWords] = 0;
    },
  };
}

/** FNV-1a over a table's counts and symbols. */
function hashTable(t: HuffmanSource): number {
  let h = 0x811c9dc5;
  for (const b of t.counts) h = Math.imul(h ^ b, 0x01000193);
  for (const b of t.symbols) h = Math.imul(h ^ b, 0x01000193);
  return h >>> 0;
}

function sameTable(a: HuffmanSource, b: HuffmanSource): boolean {
  if (a.symbols.length !== b.symbols.length) return false;
  for (let i = 0; i < 16; i++) if (a.counts[i] !== b.counts[i]) return false;
  for (let i = 0; i < a.symbols.length; i++) if (a.symbols[i] !== b.symbols[i]) return false;
  return true;
}

/** A table record: the 9-bit lookup, MAXCODE and VALOFF (T.81 C.2 and F.2.2.3), HUFFVAL. */
function writeTable(u: Uint32Array, at: number, t: HuffmanSource): void {
  u.fill(0, at, at + TABLE_WORDS);
  let code = 0, k = 0;
  for (let l = 1; l <= 16; l++) {
    const count = t.counts[l - 1];
    u[at + 530 + l] = (k - code) >>> 0;
    for (let i = 0; i < count; i++, code++, k++) {
      if (l <= 9) u.fill((l << 8) | t.symbols[k], at + (code << (9 - l)), at + ((code + 1) << (9 - l)));
    }
    u[at + 512 + l] = (count ? code - 1 : -1) >>> 0;
    code <<= 1;
  }
  u[at + 548] = t.symbols.length;
  for (let i = 0; i < t.symbols.length; i++) u[at + 552 + (i >> 2)] |= t.symbols[i] << ((i & 3) * 8);
}

/** The GPU buffers of one batch's Huffman decode. */
export interface ScanBuffers {
  scan: GPUBuffer;
  /** The coefficient upload, its scan images' blocks zeroed. */
  coef: GPUBuffer;
  stateA: GPUBuffer;
  stateB: GPUBuffer;
  status: GPUBuffer;
}

/** The passes of NOTE [ Parallel Huffman decoding ], in order. */
export type HuffmanPass = "speculate" | "resync" | "settle" | "emit";

/**
 * Records the passes of NOTE [ Parallel Huffman decoding ], `status` cleared first; with
 * `upTo`, only the passes up to that one (the bench times them one by one).
 */
export async function encodeHuffman(device: GPUDevice, encoder: GPUCommandEncoder, plan: ScanPlan, b: ScanBuffers, rounds = RESYNC_ROUNDS, upTo: HuffmanPass = "emit"): Promise<void> {
  encoder.clearBuffer(b.status);
  if (plan.chunks === 0 && plan.intervals === 0) return;
  const chunks = grid(plan.chunks, WORKGROUP);
  await kernels.speculate.encode(device, encoder, [b.scan, b.coef, b.stateB, b.stateA, b.status], chunks);
  if (upTo === "speculate") return;
  let [from, to] = [b.stateA, b.stateB];
  for (let r = 0; r < rounds; r++) {
    await kernels.resync.encode(device, encoder, [b.scan, b.coef, from, to, b.status], chunks);
    [from, to] = [to, from];
  }
  if (upTo === "resync") return;
  // The latest records are in `from`.
  await kernels.settle.encode(device, encoder, [b.scan, b.coef, to, from, b.status], grid(plan.intervals, WORKGROUP));
  if (upTo === "settle") return;
  await kernels.emit.encode(device, encoder, [b.scan, b.coef, to, from, b.status], chunks);
}

/** Compiles the four pipelines for `device` ahead of the first batch. */
export async function compileHuffmanKernels(device: GPUDevice): Promise<void> {
  await Promise.all(Object.values(kernels).map((k) => k.compile(device)));
}
