/**
 * Entry of a read worker (src/read/worker_source.ts): one store source per worker, with its
 * own connections, optionally decoding each sample where it arrives (DecodeSource). Results
 * go back in packets, one message for all the answers of an event-loop turn, their bytes and
 * pixels packed into one transferred buffer, so the loader's thread pays one message per
 * packet rather than per sample. The protocol (types in worker_source.ts):
 *
 *   → { t: "open", address, dataset, maxInFlight, balance, decode }
 *   ← { t: "opened", name, dataset }  or  { t: "failed", error }
 *   → { t: "fetch", seqs: Int32Array, ids: "id\nid…" }          any number, any time
 *   ← { t: "packet", packet }   run 0, POS the seqs: a turn's answers; buffers transferred
 *   → { t: "close" }                                             ← { t: "closed" }
 *
 * and packet reads (NOTE [ Packets ], src/read/packet.ts), for an epoch run that takes
 * batch-sized packets whole:
 *
 *   → { t: "plan", run, ids: "id\nid…", batchSize, strict }        once per run (its order goes to
 *                                                                the source's plan hook: Source.plan)
 *   → { t: "read", run, ranges: Int32Array }                     plan positions [from, to)
 *   ← { t: "packet", packet }                                    up to a batch; buffers transferred
 *   → { t: "urge", on }   → { t: "end", run }
 *
 * A packet read fills one packet at a time per run in ready order (the first samples answered;
 * sent at a batch, or when the run has nothing more outstanding here), one per batch in strict
 * order (sent when the positions of that batch asked of this worker are all answered, in plan
 * order). Its requests go through retries and hedging here, as the loader's thread wraps its own.
 *
 * Requests beyond what the source takes wait here, in arrival order, until it drains.
 *
 * Pixels are written once: each image is decoded straight into the packet being filled (the
 * Packet arena below, through DecodeSource's sink and Decoder.decodeInto), not into an array
 * of its own that the flush would copy; the samples' bytes join them at the flush. A transform
 * makes images of its own, which are copied in as before.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { gpuRefusedOf, open, receivedOf } from "./open.ts";
import { isRetryable } from "../source/retryable.ts";
import type { ReadSource, Sample } from "./sample.ts";
import { type PixelSink, TAKEN_BACK } from "./decode_source.ts";
import { Deadline } from "../decode/deadline.ts";
import { type DctImage, type DecodeOptions, type Decoder, type GpuReadCounts, type Image, isDctImage, scanForRead, TargetTooSmallError } from "../decode/decoder.ts";
import { dctBytes, writeDct } from "../decode/dct.ts";
import { isJpegScan, type JpegScan } from "../decode/jpeg_scan.ts";
import { scanBytes, writeScan } from "../decode/scan_record.ts";
import { type FrameBox, planFor } from "../decode/crop.ts";
import { ST_DEADLINE, ST_MOVED, ST_SEQ, ST_START, STATUS, type ToWorker } from "./worker_source.ts";
import type { LaneCounts, SerializedError, WirePacket } from "./packet.ts";
import {
  CHANNELS, COLS, CONN, DCT_LEN, FRAME_HEIGHT, FRAME_WIDTH, FRAME_X, FRAME_Y, HEIGHT, IMAGE_AT, LABEL, MASK_AT, MASK_CHANNELS, MASK_HEIGHT, MASK_WIDTH, OFFSETS, ORIENTATION, type Packet as BatchPacket, POS, SCAN_LEN,
  TARGET_AT, TARGET_LEN, WIDTH,
} from "./packet.ts";
import { HedgeSource } from "./hedge.ts";
import { RetrySource } from "./retry.ts";

const scope = runtime.workerScope();
let source: ReadSource | undefined;
/** The source packet reads go through: `source` inside hedging (if asked) and retries. */
let reads: RetrySource | undefined;
let hedge: HedgeSource | undefined;
let saturated = false;
/** [seq, id] not yet handed to the source; for a packet read [plan position, id, its run, when asked]. */
const waiting: [number, string, Run?, number?][] = [];
let head = 0;

const MIN_PACKET = 4096;

/** Images decoded as the box a GPU plan reads (a planned decode): where the box lies in the image. */
const frames = new WeakMap<Image, FrameBox>();

/**
 * The packet being filled: the buffer that is transferred at the flush. Images are decoded into
 * it as they arrive; one that does not fit grows it and is decoded again (a JPEG decoder names
 * the size it needs from the headers, before the scan: a misfit costs little; a PNG's is known
 * after inflating). Its size starts at the last packet's, so that a steady stream neither grows
 * nor transfers much unused room.
 */
class PacketArena {
  buf = new ArrayBuffer(MIN_PACKET);
  u8 = new Uint8Array(this.buf);
  at = 0;
  /** Images (and DCT and scan images, with the hybrid and GPU decodes) that lie in the arena, by where they start. */
  readonly placed = new Map<Image | DctImage | JpegScan, number>();

  /** Bytes the buffer takes at its first growth: a packet's arena starts empty and grows once to the last packet's size. */
  readonly #hint: number;
  /** A packet read's arena fills slabs where it can (NOTE [ Packet slabs ], src/read/packet.ts). */
  readonly #slabs: boolean;

  constructor(hint?: number, slabs = false) {
    this.#hint = hint ?? 0;
    this.#slabs = slabs && slabsOn;
    if (hint !== undefined) this.buf = new ArrayBuffer(0), this.u8 = new Uint8Array(this.buf);
  }

  decode(decoder: Decoder, bytes: Uint8Array, options?: DecodeOptions, counts?: GpuReadCounts): Image | DctImage | JpegScan {
    // The GPU decode: a JPEG's scan, as a record in the packet (src/decode/scan_record.ts).
    const scan = scanForRead(decoder, bytes, options, counts);
    if (scan) return this.placeScan(scan);
    // The hybrid decode: a JPEG's DCT blocks, as a record in the packet (src/decode/dct.ts).
    const dct = options?.hybrid ? decoder.decodeDct?.(bytes, options) : undefined;
    if (dct) return this.placeDct(dct);
    // On a 4-byte boundary: a packet's images go to the GPU as one region (src/read/packet.ts).
    this.at = (this.at + 3) & ~3;
    this.reserve(this.buf.byteLength === 0 ? this.#hint : 0); // sized before the first decode (a misfit throws); the padding inside

    for (;;) {
      try {
        const r = decoder.decodeInto(bytes, this.u8, this.at, options);
        const image: Image = { width: r.width, height: r.height, channels: r.channels, orientation: r.orientation, data: this.u8.subarray(this.at, this.at + r.bytes) };
        this.placed.set(image, this.at);
        this.at += r.bytes;
        return image;
      } catch (e) {
        if (!(e instanceof TargetTooSmallError)) throw e;
        this.reserve(e.needed);
      }
    }
  }

  /** Room for `n` more bytes: a larger buffer holding what is written so far. */
  reserve(n: number): void {
    if (this.at + n <= this.buf.byteLength) return;
    const bytes = Math.max(this.at + n, Math.ceil(this.buf.byteLength * 1.5), this.#hint);
    const buf = (this.#slabs && takeSlab(bytes)) || reuse(bytes);
    const u8 = new Uint8Array(buf);
    u8.set(this.u8.subarray(0, this.at));
    if (this.#hint && this.buf.byteLength) free(this.buf);
    this.buf = buf;
    this.u8 = u8;
  }

  /** Copies an image made elsewhere (a transform's, or decoded into another packet) in. */
  place(img: Image): Image {
    this.at = (this.at + 3) & ~3;
    this.reserve(img.data.length);
    this.u8.set(img.data, this.at);
    const image = { ...img, data: this.u8.subarray(this.at, this.at + img.data.length) };
    this.placed.set(image, this.at);
    const f = frames.get(img);
    if (f) frames.set(image, f);
    this.at += img.data.length;
    return image;
  }

  /** Writes a DCT image's record in (NOTE [ DCT record ], src/decode/dct.ts); the image stays as it is, its place noted. */
  placeDct(img: DctImage): DctImage {
    return this.#record(img, dctBytes(img), writeDct);
  }

  /** Writes a scan image's record in (NOTE [ Scan record ], src/decode/scan_record.ts); the image stays as it is, its place noted. */
  placeScan(scan: JpegScan): JpegScan {
    return this.#record(scan, scanBytes(scan), writeScan);
  }

  /** A record of `n` bytes from the next 4-byte boundary, written by `write`. */
  #record<T extends DctImage | JpegScan>(img: T, n: number, write: (img: T, dst: Uint8Array, at: number) => number): T {
    this.at = (this.at + 3) & ~3;
    this.reserve(n);
    write(img, this.u8, this.at);
    this.placed.set(img, this.at);
    this.at += n;
    return img;
  }
}

/**
 * Packet buffers given back by the loader's thread once their batch was consumed
 * (Batch.release): a packet's arena takes one large enough instead of a new one, so a steady
 * epoch allocates none (each fresh buffer is external memory the collector has to chase).
 */
const pool: ArrayBuffer[] = [];
const POOL_MAX = 32;

function reuse(bytes: number): ArrayBuffer {
  for (let i = pool.length - 1; i >= 0; i--) {
    const b = pool[i];
    // Not one far larger than needed: it would sit in a small packet.
    if (b.byteLength >= bytes && b.byteLength <= 4 * bytes + 65536) return pool.splice(i, 1)[0];
  }
  return new ArrayBuffer(bytes);
}

function free(buf: ArrayBuffer): void {
  const id = slabIds.get(buf);
  if (id !== undefined) slabFree.push(id); // an arena that grew out of a slab (never sent)
  else if (pool.length < POOL_MAX) pool.push(buf);
}

/*
 * The slabs (NOTE [ Packet slabs ], src/read/packet.ts): shared buffers named by a number that
 * is never reused. `slabSent`: the loader's thread holds that slab's buffer (sent once; a packet
 * after names it only). At most SLABS_MAX of them, SLAB_BYTES_MAX in all: past that, or where
 * shared memory is missing, packets are filled in buffers of their own, transferred.
 */
let slabsOn = typeof SharedArrayBuffer === "function";
const SLABS_MAX = 32, SLAB_BYTES_MAX = 64 << 20;
const slabById = new Map<number, ArrayBuffer>();
const slabIds = new Map<ArrayBuffer, number>();
const slabFree: number[] = [];
const slabSent = new Set<number>();
/** Slabs dropped here (they fit no packet any more): the loader's thread forgets them with the next packet. */
let slabsForgotten: number[] = [];
let slabBytes = 0, slabSeq = 0;

/** A free slab of at least `bytes` (not one far larger), or a new one while the caps allow. */
function takeSlab(bytes: number): ArrayBuffer | undefined {
  for (let i = slabFree.length - 1; i >= 0; i--) {
    const b = slabById.get(slabFree[i])!;
    if (b.byteLength >= bytes && b.byteLength <= 4 * bytes + 65536) return slabById.get(slabFree.splice(i, 1)[0]);
  }
  // At a cap, a free slab that fits no packet (the sizes changed: another run, other options) makes room.
  while ((slabById.size >= SLABS_MAX || slabBytes + bytes > SLAB_BYTES_MAX) && slabFree.length > 0) {
    const id = slabFree.shift()!, b = slabById.get(id)!;
    slabById.delete(id), slabIds.delete(b), slabSent.delete(id);
    slabBytes -= b.byteLength;
    slabsForgotten.push(id);
  }
  if (slabById.size >= SLABS_MAX || slabBytes + bytes > SLAB_BYTES_MAX) return undefined;
  const b = new SharedArrayBuffer(bytes) as unknown as ArrayBuffer;
  const id = ++slabSeq;
  slabById.set(id, b), slabIds.set(b, id);
  slabBytes += bytes;
  return b;
}

/** The loader's thread is done with slabs: `id` > 0 released (it keeps the buffer), < 0 collected there (it has none). */
function slabsBack(ids: readonly number[]): void {
  for (const x of ids) {
    const id = Math.abs(x);
    if (!slabById.has(id)) continue; // forgotten meanwhile
    if (x < 0) slabSent.delete(id);
    slabFree.push(id);
  }
}

// --- packet reads ----------------------------------------------------------------------------

interface Entry { pos: number; s: Sample; ms: number }
/** A packet being filled: its own arena, so that its images are where it is sent from. */
interface Group {
  arena: PacketArena;
  entries: Entry[];
  errors: BatchPacket["errors"];
  expected: number;
  /** When its first answer joined (performance.now()). */
  firstAt: number;
}
interface Run {
  id: number;
  /** The plan's ids: `ids[order[pos]]` where it came as positions in a split, else `ids[pos]`. */
  ids: string[];
  order?: Int32Array;
  batchSize: number;
  strict: boolean;
  /** The epoch the plan is of, where the loader's thread said (a planned decode's boxes are drawn from it). */
  epoch?: number;
  ended: boolean;
  /** Positions asked of this worker and not answered. */
  outstanding: number;
  /** Ready order: the packet being filled. Strict: one per batch index. */
  current?: Group;
  readonly groups: Map<number, Group>;
  /** The last packet's size: the next arena starts there (no growing copies in a steady epoch). */
  size: number;
  /** The slow lane's claims, shared with the loader's thread and the other workers. */
  owner?: Int32Array;
}
const runs = new Map<number, Run>();
const splits = new Map<number, string[]>();
/** Which run asked for each id in flight (the last, should two runs ask at once): where the sink decodes it. */
const route = new Map<string, [Run, number]>();
/** How many packet fetches of each id are in flight: two runs (an epoch and the next, read ahead) may ask at once. */
const asked = new Map<string, number>();

// --- the slow lane (NOTE [ Read workers: the slow lane ], src/read/worker_source.ts) -------

/** This worker's place in the workers' status, its code in the runs' owners, the clock's base. */
let lane: { status: Int32Array; at: number; code: number; base: number } | undefined;
/** Never under 5 ms: a worker's collector pauses (1-3 ms) during a 7 µs decode would send its whole queue elsewhere (NOTE [ Read workers: the slow lane ]). */
const deadline = new Deadline(5);
let claimSeq = 0, claimAt = 0, claimId: string | undefined, published = 0;
let laneCounts: LaneCounts | undefined, laneCountsAt = -Infinity;

/**
 * Before a sample's CPU stage (DecodeSource's `claim`): its position becomes this worker's
 * (its code swapped for its negation), unless the loader's thread gave it to another worker
 * meanwhile; the claim's start is stamped for the loader's thread to see.
 */
function claim(id: string): boolean {
  const r = route.get(id);
  const owner = r?.[0].owner;
  if (!lane || !r || !owner) return true;
  const was = Atomics.compareExchange(owner, r[1], lane.code, -lane.code);
  if (was !== lane.code && was !== -lane.code) return false; // another worker's now
  // Claimed here already: a position given away and back asked of this worker twice. One
  // answer is decoded and sent; the other is dropped, not decoded a second time (a CPU-bound
  // pair of workers passed queues to and fro, and every pass decoded them again). Two positions
  // for one id (keep) are both claimed.
  if (was === -lane.code && !doubled.has(id)) return false;
  claimSeq = (claimSeq + 1) & 0x3fffffff;
  claimAt = performance.now();
  claimId = id;
  Atomics.store(lane.status, lane.at + ST_SEQ, claimSeq);
  Atomics.store(lane.status, lane.at + ST_START, Math.floor(performance.timeOrigin + claimAt - lane.base) + 1);
  return true;
}

/** The claimed sample's CPU stage ended (answered, or failed): its time teaches the deadline, and the stamp is cleared. */
function claimEnded(id: string): void {
  if (!lane || id !== claimId) return;
  claimId = undefined;
  deadline.observe(performance.now() - claimAt, Atomics.load(lane.status, lane.at + ST_MOVED) === claimSeq);
  Atomics.store(lane.status, lane.at + ST_START, 0);
  // Published when it changes (it is re-learned now and then, not per job).
  const us = Number.isFinite(deadline.ms) ? Math.max(1, Math.round(deadline.ms * 1000)) : 0;
  if (us !== published) Atomics.store(lane.status, lane.at + ST_DEADLINE, (published = us));
}

/** Two requests for one id in flight here (two runs, or a plan naming it twice): not taken back, as an answer could not say which it claims. */
function keep(run: Run, pos: number, id: string): void {
  doubled.add(id);
  if (lane && run.owner) Atomics.compareExchange(run.owner, pos, lane.code, -lane.code);
}
/** Ids with two positions in flight here (keep): each answer claims, and both are sent. */
const doubled = new Set<string>();

/** The lane's figures for packets, at most every 100 ms (a sort of 256 times). */
function laneFigures(): LaneCounts | undefined {
  if (!lane) return undefined;
  const now = performance.now();
  if (now - laneCountsAt >= 100) {
    laneCountsAt = now;
    laneCounts = { jobs: deadline.jobs, thresholdMs: deadline.ms, percentile: deadline.percentile, jobMs: deadline.jobMs() };
  } else if (laneCounts) laneCounts.jobs = deadline.jobs;
  return laneCounts;
}

function groupOf(run: Run, pos: number): Group {
  if (!run.strict) return (run.current ??= newGroup(run));
  const k = Math.floor(pos / run.batchSize);
  let g = run.groups.get(k);
  if (!g) run.groups.set(k, (g = newGroup(run)));
  return g;
}

function newGroup(run: Run): Group {
  // Single fetches' answers go to callbacks one by one, never released: buffers of their own.
  return { arena: new PacketArena(run.size, run.id !== 0), entries: [], errors: [], expected: 0, firstAt: 0 };
}

/** Decodes each image into the packet its sample will join. */
const packetSink: PixelSink = {
  decode(decoder: Decoder, bytes: Uint8Array, options: DecodeOptions | undefined, id: string, counts?: GpuReadCounts): Image | DctImage | JpegScan {
    const r = route.get(id);
    const g = r && !r[0].ended ? (r[0].strict ? r[0].groups.get(Math.floor(r[1] / r[0].batchSize)) : groupOf(r[0], r[1])) : undefined;
    // No packet wants it (a hedge's second answer, dropped after; a run that ended): an arena of its own.
    const arena = g?.arena ?? new PacketArena(0);
    // A planned decode (the GPU's plan as decode options): only the box the plan reads, drawn
    // as the preprocessor will draw it, which needs the epoch unless nothing is random.
    const run = r?.[0];
    // Whole where the box is not known for sure: no epoch said, or two runs (two epochs) asking
    // for the sample at once, when the decode cannot tell whose it is; the GPU plans it whole.
    const twice = (asked.get(id) ?? 0) > 1;
    const { options: o, frame } = planFor(options, bytes, twice ? undefined : run?.epoch, id);
    const image = arena.decode(decoder, bytes, o, counts);
    // The hybrid decode's blocks say their region themselves (DctImage.region); a scan is whole.
    if (frame && !isJpegScan(image) && !isDctImage(image)) frames.set(image, frame);
    return image;
  },
};

function packetAnswered(run: Run, pos: number, id: string, t0: number, err: Error | null, s?: Sample): void {
  const r = route.get(id);
  // Kept while another request for the id is in flight here: its claim must find the position.
  if (r && r[0] === run && r[1] === pos && !asked.has(id)) route.delete(id);
  if (run.ended) return;
  run.outstanding--;
  if (err === TAKEN_BACK) return takenBack(run, pos);
  const g = groupOf(run, pos);
  join(g, pos, id, err, s, runtime.now() - t0);
  const answered = g.entries.length + g.errors.length;
  if (run.strict) {
    if (answered === g.expected) {
      run.groups.delete(Math.floor(pos / run.batchSize));
      ship(run, g);
    }
  } else if (answered >= run.batchSize || run.outstanding === 0 || waited(g)) {
    run.current = undefined;
    ship(run, g);
  }
}

/**
 * Ready order: a packet whose first answer has waited the deadline goes as it is, not full
 * (NOTE [ Read workers: the slow lane ], src/read/worker_source.ts): with a heavy CPU stage the
 * samples of a batch would otherwise wait for each other, and for a slow one among them.
 */
function waited(g: Group): boolean {
  return lane !== undefined && performance.now() - g.firstAt >= deadline.ms;
}

/** An answer joins the packet `g` at `pos`: its sample, or its error. */
function join(g: Group, pos: number, id: string, err: Error | null, s: Sample | undefined, ms: number): void {
  if (g.entries.length + g.errors.length === 0) g.firstAt = performance.now();
  if (err || !s) g.errors.push({ pos, error: serialize(pos, id, err ?? new Error(`no answer for ${id}`)) });
  else {
    // Decoded elsewhere (a transform's image; another run's packet): copied into this one.
    if (s.image && !g.arena.placed.has(s.image)) s = { ...s, image: g.arena.place(s.image) };
    if (s.coefficients && !g.arena.placed.has(s.coefficients)) g.arena.placeDct(s.coefficients);
    if (s.scan && !g.arena.placed.has(s.scan)) g.arena.placeScan(s.scan);
    g.entries.push({ pos, s, ms });
  }
}

/** A position another worker has now: it leaves this worker's packet (which may be complete without it). */
function takenBack(run: Run, pos: number): void {
  if (run.strict) {
    const k = Math.floor(pos / run.batchSize), g = run.groups.get(k);
    if (!g) return;
    const answered = g.entries.length + g.errors.length;
    if (--g.expected > answered) return;
    run.groups.delete(k);
    if (answered) ship(run, g);
  } else if (run.outstanding === 0 && run.current) {
    const g = run.current;
    run.current = undefined;
    ship(run, g);
  }
}

/** The masks after the images, each on a 4-byte boundary (the GPU reads both, cropped together): where each went (0: none). */
function placeMasks(a: Group["arena"], entries: { s: Sample }[]): Int32Array {
  const maskAt = new Int32Array(entries.length);
  entries.forEach((e, i) => {
    if (!e.s.mask) return;
    maskAt[i] = a.at;
    a.u8.set(e.s.mask.data, a.at);
    a.at += (e.s.mask.data.length + 3) & ~3;
  });
  return maskAt;
}

/** Entry `i`'s image columns (where its pixels are, their shape, the frame of a planned box) and its mask's. */
function pixelColumns(cols: Int32Array, n: number, i: number, s: Sample, a: Group["arena"], maskAt: number): void {
  // A record (DCT blocks or a scan): where it is, the image's shape, and its length in its kind's column.
  const rec = s.coefficients ?? s.scan;
  if (rec) {
    cols[IMAGE_AT * n + i] = a.placed.get(rec)!;
    cols[WIDTH * n + i] = rec.width;
    cols[HEIGHT * n + i] = rec.height;
    cols[CHANNELS * n + i] = rec.colorSpace === "gray" ? 1 : 3;
    cols[ORIENTATION * n + i] = rec.orientation;
    if (s.coefficients) cols[DCT_LEN * n + i] = dctBytes(s.coefficients);
    else cols[SCAN_LEN * n + i] = scanBytes(s.scan!);
  }
  const img = s.image;
  if (img) {
    cols[IMAGE_AT * n + i] = a.placed.get(img)!;
    cols[WIDTH * n + i] = img.width;
    cols[HEIGHT * n + i] = img.height;
    cols[CHANNELS * n + i] = img.channels;
    cols[ORIENTATION * n + i] = img.orientation;
    const f = frames.get(img);
    if (f) {
      cols[FRAME_X * n + i] = f.x;
      cols[FRAME_Y * n + i] = f.y;
      cols[FRAME_WIDTH * n + i] = f.width;
      cols[FRAME_HEIGHT * n + i] = f.height;
    }
  }
  if (s.mask) {
    cols[MASK_AT * n + i] = maskAt;
    cols[MASK_WIDTH * n + i] = s.mask.width;
    cols[MASK_HEIGHT * n + i] = s.mask.height;
    cols[MASK_CHANNELS * n + i] = s.mask.channels;
  }
}

/** The targets after the bytes, each on a 4-byte boundary, with their columns. */
function placeTargets(a: Group["arena"], entries: { s: Sample }[], cols: Int32Array): void {
  const n = entries.length;
  a.at = (a.at + 3) & ~3;
  for (let i = 0; i < n; i++) {
    const t = entries[i].s.target!;
    a.u8.set(new Uint8Array(t.buffer, t.byteOffset, t.byteLength), a.at);
    cols[TARGET_AT * n + i] = a.at;
    cols[TARGET_LEN * n + i] = t.byteLength;
    a.at += (t.byteLength + 3) & ~3;
  }
}

/**
 * Sends a packet: the table, the images where they were decoded, then the masks, the bytes and
 * the targets (src/read/packet.ts). Targets of one packet are all float vectors of one length
 * or all bytes, as a batch's are (assemble/batch.ts): a sample that differs is an error naming it.
 */
function ship(run: Run, g: Group): void {
  if (run.strict) g.entries.sort((a, b) => a.pos - b.pos);
  const { entries, first, floats } = batchable(g);
  const n = entries.length;
  const a = g.arena;
  let bytes = 0, extra = 0;
  for (const e of entries) {
    bytes += e.s.data.length;
    const m = e.s.mask, t = e.s.target;
    if (m) extra += (m.data.length + 3) & ~3;
    if (t) extra += (t.byteLength + 3) & ~3;
  }
  a.at = (a.at + 3) & ~3;
  a.reserve(bytes + extra + 4);
  const maskAt = extra ? placeMasks(a, entries) : new Int32Array(n);
  const dataAt = a.at;
  // The table and the times in one small buffer: one transfer, one allocation.
  const meta = new ArrayBuffer((COLS * n + n + 1 + n) * 4);
  const cols = new Int32Array(meta, 0, COLS * n + n + 1);
  const ms = new Float32Array(meta, cols.byteLength, n);
  const conns: string[] = [];
  const connIndex = new Map<string, number>();
  let at = 0;
  for (let i = 0; i < n; i++) {
    const { pos, s } = entries[i];
    cols[POS * n + i] = pos;
    cols[LABEL * n + i] = s.label;
    cols[OFFSETS * n + i] = at;
    a.u8.set(s.data, dataAt + at);
    at += s.data.length;
    let c = -1;
    if (s.conn !== undefined) {
      c = connIndex.get(s.conn) ?? -1;
      if (c < 0) connIndex.set(s.conn, (c = conns.push(s.conn) - 1));
    }
    cols[CONN * n + i] = c;
    pixelColumns(cols, n, i, s, a, maskAt[i]);
    ms[i] = entries[i].ms;
  }
  cols[OFFSETS * n + n] = at;
  a.at = dataAt + at;
  if (first) placeTargets(a, entries, cols);
  run.size = Math.max(MIN_PACKET, a.at);
  const buf = a.buf; // transferred as it is: trimming it would copy every pixel
  const slab = slabIds.get(buf);
  const packet: WirePacket = {
    run: run.id, n, cols, buf, dataAt, used: a.at, ms, conns, errors: g.errors, ...(first ? { floatTargets: floats } : {}),
    counts: { retries: reads!.retries, hedged: hedge?.hedged ?? 0, hedgeWins: hedge?.hedgeWins ?? 0, reasked: hedge?.reasked ?? 0, reaskWins: hedge?.reaskWins ?? 0, received: receivedOf(source!) ?? 0, gpuRefused: gpuRefusedOf(source!) ?? 0 },
    lane: laneFigures(),
  };
  if (slabsForgotten.length) packet.forget = slabsForgotten, slabsForgotten = [];
  if (slab === undefined) return scope.postMessage({ t: "packet", packet }, [buf, meta]);
  // A slab crosses once; after that its number says which (NOTE [ Packet slabs ]).
  packet.slab = slab;
  if (slabSent.has(slab)) packet.buf = undefined;
  else slabSent.add(slab);
  scope.postMessage({ t: "packet", packet }, [meta]);
}
/**
 * The entries whose targets can share a batch with the first one's (all float vectors of its
 * length, or all bytes); each other one becomes an error naming it.
 */
function batchable(g: Group): { entries: Entry[]; first?: Float32Array | Uint8Array; floats: boolean } {
  const first = g.entries.find((e) => e.s.target)?.s.target;
  const floats = first instanceof Float32Array;
  if (!first) return { entries: g.entries, floats };
  const entries = g.entries.filter((e) => {
    const t = e.s.target;
    if (t && (t instanceof Float32Array) === floats && (!floats || t.length === first.length)) return true;
    const what = !t ? "none" : t instanceof Float32Array ? `a vector of ${t.length}` : "bytes";
    const id = e.s.id;
    g.errors.push({ pos: e.pos, error: serialize(e.pos, id, new CassetteError("ERR_MALFORMED_INPUT", `Cannot batch sample ${id} as the batch's labels are ${floats ? `a vector of ${first.length}` : "bytes"} and its label is ${what}`)) });
    return false;
  });
  return { entries, first, floats };
}

/** CASSETTE_READ_INTO=0 decodes into arrays of their own, copied at the flush, as before (for A/B runs). */
const into = runtime.env("CASSETTE_READ_INTO") !== "0";

/**
 * Answers to single fetches (`t: "fetch"`) of one event-loop turn: a packet of their own, run
 * 0, each entry's POS its request's sequence number. The same format as a packet read's: one
 * way to pack a sample, whichever way it was asked for.
 */
const single: Run = { id: 0, ids: [], batchSize: Infinity, strict: false, ended: false, outstanding: 0, groups: new Map(), size: MIN_PACKET };
let turn: Group | undefined;
let flushTimer: ReturnType<typeof setTimeout> | undefined;

function turnGroup(): Group {
  return (turn ??= newGroup(single));
}

function serialize(seq: number, id: string, e: unknown): SerializedError {
  const err = e as { name?: string; code?: unknown; message?: string };
  return { seq, id, name: err?.name ?? "Error", code: typeof err?.code === "string" ? err.code : undefined, message: err?.message ?? String(e), retryable: isRetryable(e) };
}

function flush(): void {
  flushTimer = undefined;
  const g = turn;
  turn = undefined;
  if (g && g.entries.length + g.errors.length) ship(single, g);
}

function answered(seq: number, id: string, err: Error | null, s?: Sample): void {
  join(turnGroup(), seq, id, err, s, 0);
  // One packet per event-loop turn: every answer that a socket read completed goes together.
  flushTimer ??= setTimeout(flush, 0);
}

function pump(): void {
  while (source && !saturated && head < waiting.length) {
    const [seq, id, run, t0] = waiting[head++];
    if (!run) {
      if (!source.fetch(id, (err, s) => answered(seq, id, err, s))) saturated = true;
      continue;
    }
    if (run.ended) continue;
    if (lane && run.owner) {
      const o = run.owner[seq];
      // Given to another worker while it waited here: not read.
      if (o !== lane.code && o !== -lane.code) {
        packetAnswered(run, seq, id, t0!, TAKEN_BACK);
        continue;
      }
      const prev = route.get(id);
      if (prev && (prev[0] !== run || prev[1] !== seq)) keep(prev[0], prev[1], id), keep(run, seq, id);
    }
    route.set(id, [run, seq]);
    asked.set(id, (asked.get(id) ?? 0) + 1);
    const fetched = reads!.fetch(id, (err, s) => {
      const k = asked.get(id)! - 1;
      if (k) asked.set(id, k);
      else asked.delete(id), doubled.delete(id);
      packetAnswered(run, seq, id, t0!, err, s);
    });
    if (!fetched) saturated = true;
  }
  if (head > 1024 && head * 2 > waiting.length) waiting.splice(0, head), head = 0;
}

/** Opens the store here, as the loader's thread would, and the packet reads' retries and hedging over it; says "opened" or "failed". */
async function openHere(msg: Extract<ToWorker, { t: "open" }>): Promise<void> {
  try {
    // The same open() as in the loader's thread, with no workers of its own.
    // Decoding and the transform run here, in this worker's thread (decodeWorkers: 0).
    const src = await open(msg.address, {
      mode: "read", dataset: msg.dataset, maxInFlight: msg.maxInFlight, balance: msg.balance, decode: msg.decode, decodeWorkers: 0,
      transform: msg.transform && { module: msg.transform.url, options: msg.transform.options }, seed: msg.seed,
      sink: into ? { decode: (d, b, o, id, c) => (route.has(id) ? packetSink.decode(d, b, o, id, c) : turnGroup().arena.decode(d, b, o, c)) } : undefined,
      claim: msg.lane ? { start: claim, end: claimEnded } : undefined,
    });
    if (msg.slabs === false) slabsOn = false;
    if (msg.lane) lane = { status: new Int32Array(msg.lane.status), at: msg.lane.index * STATUS, code: msg.lane.code, base: msg.lane.base };
    src.onDrain(() => {
      saturated = false;
      pump();
    });
    // Packet reads retry and hedge here (per sample, the loader's thread wraps this worker).
    const o = msg.reads ?? {};
    let inner: ReadSource = src;
    if (o.hedge || o.reaskTail) inner = hedge = new HedgeSource(src, o.hedge ?? { budget: 0 });
    reads = new RetrySource(inner, { retries: o.retries ?? 3 });
    reads.onDrain(() => {
      saturated = false;
      pump();
    });
    source = src;
    scope.postMessage({ t: "opened", name: src.name, dataset: src.dataset, ...(src.shards ? { shards: src.shards() } : {}), receives: receivedOf(src) !== undefined });
    pump();
  } catch (e) {
    scope.postMessage({ t: "failed", error: serialize(-1, "", e) });
  }
}

scope.onMessage(async (data) => {
  const msg = data as ToWorker;
  switch (msg.t) {
    case "open":
      await openHere(msg);
      return;
    case "fetch":
      msg.ids.split("\n").forEach((id, i) => waiting.push([msg.seqs[i], id]));
      pump();
      return;
    case "split":
      splits.set(msg.split, msg.ids.split("\n"));
      return;
    case "plan": {
      const run: Run = {
        id: msg.run, ids: msg.split !== undefined ? splits.get(msg.split)! : msg.ids!.split("\n"), order: msg.order, batchSize: msg.batchSize, strict: msg.strict, epoch: msg.epoch,
        ended: false, outstanding: 0, groups: new Map(), size: MIN_PACKET, owner: msg.owner,
      };
      runs.set(msg.run, run);
      // A source that plans (a shard set streams the part its epoch needs: Source.plan) hears
      // the run's order, as the Loader tells its own source.
      if (source?.plan && run.epoch !== undefined) source.plan(run.epoch, run.order ? Array.from(run.order, (i) => run.ids[i]) : run.ids);
      return;
    }
    case "read": {
      for (const buf of msg.free) free(buf);
      if (msg.slabs) slabsBack(msg.slabs);
      const t0 = runtime.now();
      msg.runs.forEach((id, i) => {
        const run = runs.get(id), r = msg.ranges[i];
        if (!run) return;
        for (let k = 0; k < r.length; k += 2) {
          for (let pos = r[k]; pos < r[k + 1]; pos++) {
            waiting.push([pos, run.ids[run.order ? run.order[pos] : pos], run, t0]);
            if (run.strict) groupOf(run, pos).expected++;
          }
          run.outstanding += r[k + 1] - r[k];
        }
      });
      pump();
      return;
    }
    case "urge":
      hedge?.urge(msg.on);
      return;

    case "end": {
      const run = runs.get(msg.run);
      if (run) run.ended = true, runs.delete(msg.run);
      return;
    }
    case "close":
      flush();
      try {
        await source?.close();
      } finally {
        scope.postMessage({ t: "closed" });
      }
      return;
  }
});
