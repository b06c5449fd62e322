/**
 * Batch-sized packets: how read workers hand samples to the thread that feeds the GPU.
 *
 * NOTE [ Packets ]: that thread submits the training steps, so whatever it does per sample
 * caps the GPU's rate (1 µs a sample caps it at 1 M samples/s). Read workers therefore fill
 * packets of up to a batch of samples as typed tables, and the feeding thread takes a packet
 * whole: no object, promise, Map entry, clock read or callback per sample there, only loops
 * over typed arrays (the ledger's states, the ids of the batch). A packet is made of:
 *
 *   cols (Int32Array, column-major, n entries):
 *     POS │ LABEL │ IMAGE_AT │ WIDTH │ HEIGHT │ CHANNELS │ ORIENTATION │ CONN │
 *     TARGET_AT │ TARGET_LEN │ MASK_AT │ MASK_WIDTH │ MASK_HEIGHT │ MASK_CHANNELS │
 *     FRAME_X │ FRAME_Y │ FRAME_WIDTH │ FRAME_HEIGHT │ DCT_LEN │ SCAN_LEN │ OFFSETS (n + 1)
 *     ───────────────────────────────── n each ─────────────────────────────────    bytes of entry i:
 *                                                                                   data[OFFSETS[i] .. OFFSETS[i+1])
 *   buf (ArrayBuffer):
 *     [ image │pad│ image │pad│ … (decoded in arrival order, each on a 4-byte boundary) │ bytes … │pad│ targets … │ masks … ]
 *                                                                                       ▲ dataAt
 *   ms (Float32Array, n): each entry's time from reaching its worker to being answered
 *
 * Labels other than one integer (src/dataset/label.ts) ride along: a target (a float vector,
 * or a blob's bytes) at TARGET_AT, TARGET_LEN bytes (0: none), the targets of a packet one
 * after another in entry order; a decoded mask at MASK_AT (MASK_CHANNELS 0: none). An image
 * decoded as the box a GPU plan reads (the `decode` option's `plan`, src/gpu/decode_planned.ts)
 * says where the box lies in the image (FRAME_*; FRAME_WIDTH 0: the image is whole). With the
 * hybrid decode (`decode: "hybrid"`) a JPEG's entry holds its DCT blocks instead of pixels: a
 * record of DCT_LEN bytes at IMAGE_AT (NOTE [ DCT record ], src/decode/dct.ts), WIDTH, HEIGHT
 * and CHANNELS those of the pixels it becomes. With the GPU decode (`decode: "gpu"`) a JPEG the
 * GPU can decode holds its scan likewise: a record of SCAN_LEN bytes at IMAGE_AT (NOTE [ Scan
 * record ], src/decode/scan_record.ts). An entry's kind is its columns: DCT_LEN > 0 a DCT
 * record, SCAN_LEN > 0 a scan record, both 0 pixels (CHANNELS 0: nothing).
 *
 * Images start on 4-byte boundaries so that the pixels go to the GPU as one region of the
 * preprocessing upload (NOTE [ Packed preprocessing input ], src/gpu/pack.ts). Entries are in
 * plan order in strict order, in arrival order in ready order; IMAGE_AT points anywhere in the
 * image region (images land where they were decoded), the bytes lie in entry order. CHANNELS 0:
 * no image (the read path does not decode). A packet's buffers are never copied.
 *
 * NOTE [ Packet slabs ]: a packet read's `buf` is a slab, a SharedArrayBuffer its worker made
 * and names by a number. It crosses to the loader's thread once, with the first packet filled
 * in it; later packets in it carry only its number. Batch.release() sends the number back (the
 * loader's thread keeps the buffer for the packets to come), and a slab whose batch was dropped
 * unreleased goes back when the loader's thread collects it (a FinalizationRegistry: the worker
 * then sends it again). Why not transfer an ArrayBuffer each time, as packets did at first: the
 * receiving thread's heap counts every ArrayBuffer that arrives as new memory, so a 300 kB
 * packet a batch set off a young-generation collection every ~40 batches, 1-6 ms each, on the
 * thread that feeds the GPU: 30-40 % of its CPU in a tight loop on Fashion-MNIST (Bun; the
 * buffers were recycled, not new). With slabs it collects once or twice an epoch (bench/
 * RESULTS.md, "Packet slabs"). A worker holds at most 32 slabs and 64 MiB of them; past that
 * (a consumer that keeps its batches), and for single fetches, whose answers are never
 * released, a packet's buffer is its own and transferred. The cost: after release() a batch's
 * views may read a later batch's bytes (they read as empty when the buffer was transferred).
 */
import type { Image } from "../decode/decoder.ts";
import { readDct } from "../decode/dct.ts";
import { readScanRecord } from "../decode/scan_record.ts";
import { SpareBuffers } from "../util/spare_buffers.ts";
import type { Sample } from "./sample.ts";

/** An error as it crosses from a worker: what reviving it needs. */
export interface SerializedError {
  seq: number;
  id: string;
  name: string;
  code?: string;
  message: string;
  retryable: boolean;
}

/** A worker's packet reads' retries and hedges so far (its RetrySource's and HedgeSource's counters). */
export interface ReadCounts {
  retries: number;
  hedged: number;
  hedgeWins: number;
  reasked: number;
  reaskWins: number;
  /** Bytes its store's source received (Source.received; 0 where it does not count). */
  received: number;
  /** JPEGs its GPU decode (`decode: "gpu"`) left to the CPU as `readScan` refused them (GpuReadCounts). */
  gpuRefused: number;
}

/** A read worker's CPU stage as its packets report it. */
export interface LaneCounts {
  jobs: number;
  /** Its deadline in ms (Infinity while learning), and the percentile it is taken at. */
  thresholdMs: number;
  percentile: 75 | 90;
  jobMs: { p50: number; p99: number; max: number };
}

/** Column indices of a packet's `cols`. */
export const POS = 0, LABEL = 1, IMAGE_AT = 2, WIDTH = 3, HEIGHT = 4, CHANNELS = 5, ORIENTATION = 6, CONN = 7;
export const TARGET_AT = 8, TARGET_LEN = 9, MASK_AT = 10, MASK_WIDTH = 11, MASK_HEIGHT = 12, MASK_CHANNELS = 13;
/** An image decoded as a box of a larger one (a planned decode): the box's place in it and its size; FRAME_WIDTH 0: the whole image. */
export const FRAME_X = 14, FRAME_Y = 15, FRAME_WIDTH = 16, FRAME_HEIGHT = 17;
/** Bytes of the DCT record at IMAGE_AT (the hybrid decode, NOTE [ DCT record ] in src/decode/dct.ts); 0: not one. */
export const DCT_LEN = 18;
/** Bytes of the scan record at IMAGE_AT (the GPU decode, NOTE [ Scan record ] in src/decode/scan_record.ts); 0: not one. */
export const SCAN_LEN = 19, OFFSETS = 20;
/** Int32 columns of n entries before OFFSETS (which has n + 1). */
export const COLS = 20;

/** What a read worker sends for one packet. */
export interface Packet {
  /** The epoch run it belongs to (a WorkerSource read's number). */
  run: number;
  /** Entries answered. */
  n: number;
  cols: Int32Array<ArrayBuffer>;
  buf: ArrayBuffer;
  /** Where the samples' bytes begin in `buf` (the images lie before). */
  dataAt: number;
  /** Bytes of `buf` in use (the rest is room of a reused buffer): what the samples hold. */
  used: number;
  ms: Float32Array<ArrayBuffer>;
  /** Names of the connections in CONN (−1: unknown). */
  conns: string[];
  /** The targets are float vectors (else a blob's bytes), where entries have them. */
  floatTargets?: boolean;
  /** Positions given up on after the worker's retries, with why. */
  errors: { pos: number; error: SerializedError }[];
  /** The worker's counters when it sent the packet. */
  counts?: ReadCounts;
  /** The worker's slow lane: its jobs and the deadline it learned (NOTE [ Read workers: the slow lane ], src/read/worker_source.ts). */
  lane?: LaneCounts;
  /** Gives `buf` back to the worker that filled it, for a later packet (set where it is received). */
  release?: () => void;
}

/**
 * A packet as it crosses from a worker: `buf` is absent where `slab` names a slab the loader's
 * thread already holds (NOTE [ Packet slabs ]); `forget` names slabs the worker dropped.
 */
export type WirePacket = Omit<Packet, "buf" | "release"> & { buf?: ArrayBuffer; slab?: number; forget?: number[] };

/** A column of a packet as a view (no copy). */
export function column(p: Pick<Packet, "cols" | "n">, c: number): Int32Array<ArrayBuffer> {
  return p.cols.subarray(c * p.n, c === OFFSETS ? c * p.n + p.n + 1 : (c + 1) * p.n);
}

/** The bytes of entry i. */
export function bytesOf(p: Packet, i: number): Uint8Array {
  const o = p.cols[OFFSETS * p.n + i];
  return new Uint8Array(p.buf, p.dataAt + o, p.cols[OFFSETS * p.n + i + 1] - o);
}

/** Entry i as the per-sample path's Sample (ids come from the plan): for consumers that ask for items. */
export function sampleOf(p: Packet, i: number, id: string): Sample {
  const c = p.cols, n = p.n;
  const s: Sample = { id, label: c[LABEL * n + i], data: bytesOf(p, i) };
  if (c[CONN * n + i] >= 0) s.conn = p.conns[c[CONN * n + i]];
  const dct = c[DCT_LEN * n + i], scan = c[SCAN_LEN * n + i];
  if (dct) s.coefficients = readDct(new Uint8Array(p.buf), c[IMAGE_AT * n + i], dct);
  else if (scan) s.scan = readScanRecord(new Uint8Array(p.buf), c[IMAGE_AT * n + i], scan);
  else {
    const image = imageAt(p, i, IMAGE_AT, WIDTH, HEIGHT, CHANNELS);
    if (image) s.image = image;
  }
  const mask = imageAt(p, i, MASK_AT, MASK_WIDTH, MASK_HEIGHT, MASK_CHANNELS);
  if (mask) s.mask = mask;
  const len = c[TARGET_LEN * n + i];
  if (len) s.target = p.floatTargets ? new Float32Array(p.buf, c[TARGET_AT * n + i], len / 4) : new Uint8Array(p.buf, c[TARGET_AT * n + i], len);
  return s;
}

/** Entry i's image (or mask) by its columns, a view of the packet's buffer. */
export function imageAt(p: Packet, i: number, at: number, w: number, h: number, ch: number): Image | undefined {
  const c = p.cols, n = p.n, channels = c[ch * n + i];
  if (!channels) return undefined;
  const width = c[w * n + i], height = c[h * n + i];
  return {
    width, height, channels: channels as Image["channels"], orientation: at === IMAGE_AT ? c[ORIENTATION * n + i] : 1,
    data: new Uint8Array(p.buf, c[at * n + i], width * height * channels),
  };
}

/** Bytes at entry i's IMAGE_AT: its pixels, or its DCT or scan record. */
function imageBytes(c: Int32Array, n: number, i: number): number {
  return c[DCT_LEN * n + i] || c[SCAN_LEN * n + i] || c[WIDTH * n + i] * c[HEIGHT * n + i] * c[CHANNELS * n + i];
}

/** Bytes entry i's image and mask take in a merge: each padded to 4. */
function pixelBytes(p: Packet, i: number): number {
  const c = p.cols, n = p.n;
  return ((imageBytes(c, n, i) + 3) & ~3) + ((c[MASK_WIDTH * n + i] * c[MASK_HEIGHT * n + i] * c[MASK_CHANNELS * n + i] + 3) & ~3);
}

/**
 * A new packet of the chosen entries of `parts` (each [packet, entry indices]), copied, in the
 * order given: for a batch cut across packets (an epoch's last samples, spread over workers; a
 * strict batch whose positions were asked for in two requests) and to drop a duplicate. Rare
 * by design: a batch is normally one packet as its worker sent it.
 */
export function mergePackets(run: number, parts: readonly (readonly [Packet, readonly number[]])[]): Packet {
  let n = 0, pix = 0, bytes = 0, targets = 0;
  const conns: string[] = [];
  const connIndex = new Map<string, number>();
  for (const [p, idx] of parts) {
    n += idx.length;
    for (const i of idx) {
      pix += pixelBytes(p, i);
      bytes += p.cols[OFFSETS * p.n + i + 1] - p.cols[OFFSETS * p.n + i];
      targets += (p.cols[TARGET_LEN * p.n + i] + 3) & ~3;
    }
  }
  // The images and masks first, then the bytes, then the targets in entry order (one view for the batch).
  let tat = pix + ((bytes + 3) & ~3);
  const cols = new Int32Array(COLS * n + n + 1);
  const ms = new Float32Array(n);
  const used = tat + targets;
  const { buf, release } = batchBuffer(used);
  const u8 = new Uint8Array(buf);
  let k = 0, at = 0, dat = 0;
  for (const [p, idx] of parts) {
    const src = p.cols, m = p.n;
    for (const i of idx) {
      for (let c = 0; c < COLS; c++) cols[c * n + k] = src[c * m + i];
      const conn = src[CONN * m + i];
      if (conn >= 0) {
        const name = p.conns[conn];
        let j = connIndex.get(name);
        if (j === undefined) connIndex.set(name, (j = conns.push(name) - 1));
        cols[CONN * n + k] = j;
      }
      const size = imageBytes(src, m, i);
      if (src[CHANNELS * m + i]) u8.set(new Uint8Array(p.buf, src[IMAGE_AT * m + i], size), at);
      cols[IMAGE_AT * n + k] = at;
      at += (size + 3) & ~3;
      const msize = src[MASK_WIDTH * m + i] * src[MASK_HEIGHT * m + i] * src[MASK_CHANNELS * m + i];
      if (msize) u8.set(new Uint8Array(p.buf, src[MASK_AT * m + i], msize), at), (cols[MASK_AT * n + k] = at), (at += (msize + 3) & ~3);
      const tlen = src[TARGET_LEN * m + i];
      if (tlen) u8.set(new Uint8Array(p.buf, src[TARGET_AT * m + i], tlen), tat), (cols[TARGET_AT * n + k] = tat), (tat += (tlen + 3) & ~3);
      const b = bytesOf(p, i);
      cols[OFFSETS * n + k] = dat;
      u8.set(b, pix + dat);
      dat += b.length;
      ms[k] = p.ms[i];
      k++;
    }
  }
  cols[OFFSETS * n + n] = dat;
  const floatTargets = parts.find(([p]) => p.floatTargets !== undefined)?.[0].floatTargets;
  return { run, n, cols, buf, dataAt: pix, used, ms, conns, errors: [], ...(floatTargets !== undefined ? { floatTargets } : {}), release };
}

/**
 * NOTE [ Merge buffers ]: in ready order with the decode in read workers, a worker's packet
 * goes when its first answer has waited the slow lane's deadline, so a batch is usually cut
 * across several packets (2–5 entries each from two workers: every batch of the ImageNet-like
 * read) and copied by mergePackets. A new ArrayBuffer for each such batch (~7 MB of pixels)
 * put page faults and zero-filling on the loader's thread, the thread that also makes the
 * tensor, and grew its heap as packets did before slabs (NOTE [ Packet slabs ]). The copy goes
 * into a buffer that Batch.release() hands back here for the next merge instead: a few kept,
 * the smallest that fits taken. A batch that is never released leaves its buffer to the
 * collector, as before. Batches read in the loader's thread pack their bytes into one the same
 * way (src/assemble/batch.ts, packBatch).
 */
/** At most 4 kept, none over 256 MiB (a batch of large images is rarely merged twice). */
const spareMerges = new SpareBuffers(4, 256 << 20);

/**
 * A buffer of at least `bytes` for a batch's copy (NOTE [ Merge buffers ]): a released one, else
 * new with room for the next batch's (a crop's size varies); `release` gives it back, once.
 */
export function batchBuffer(bytes: number): { buf: ArrayBuffer; release: () => void } {
  const buf = spareMerges.take(bytes) ?? new ArrayBuffer(bytes + (bytes >> 3));
  let released = false;
  return { buf, release: () => void (!released && (released = true, spareMerges.give(buf))) };
}

/** Where a packet read delivers: the epoch run that asked. */
export interface PacketSink {
  packet(p: Packet): void;
  /**
   * A worker stopped while holding these plan ranges ([from, to) pairs; its packets not yet
   * received are dropped): the run asks again for the positions still pending among them,
   * and says how many.
   */
  lost(ranges: readonly number[]): number;
}

/** One epoch run's reading through packets. */
export interface PacketRead {
  /** Asks for the plan positions of `ranges` ([from, to) pairs), each once. */
  request(ranges: readonly number[]): void;
  /** The run ended: the workers drop its plan and whatever they hold of it. */
  end(): void;
}

/** A source whose workers can fill packets (src/read/worker_source.ts). */
export interface PacketReader {
  /** Starts reading `plan` (its positions asked for by `request`), packets of up to `batchSize` to `sink`. */
  read(plan: readonly string[], o: { batchSize: number; strict: boolean; split?: { ids: readonly string[]; order: Int32Array }; epoch?: number }, sink: PacketSink): PacketRead;
}
