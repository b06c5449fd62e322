/**
 * A batch as the loader hands it over: ids, labels and the samples' bytes in one contiguous
 * buffer with an offsets table (one allocation per batch), or the transformed items when the
 * loader was given a `transform` (e.g. decoding).
 *
 *   data:    [ sample 0 bytes | sample 1 bytes | … | sample n-1 bytes ]
 *   offsets: [ 0, end0, end1, …, end(n-1) ]      sample i = data[offsets[i] .. offsets[i+1])
 *
 * Labels beyond one integer (src/dataset/label.ts) come as `targets` (multi-hot or float
 * vectors, n × targetWidth, one allocation) or `masks` (a blob label decoded with the image).
 */
import { CassetteError } from "../errors.ts";
import type { Sample } from "../read/sample.ts";
import type { Fetched } from "../source/source.ts";
import {
  batchBuffer, CHANNELS, column, DCT_LEN, FRAME_HEIGHT, FRAME_WIDTH, FRAME_X, FRAME_Y, HEIGHT, IMAGE_AT, imageAt, LABEL, MASK_AT, MASK_CHANNELS, MASK_HEIGHT, MASK_WIDTH, OFFSETS, ORIENTATION, type Packet, POS, sampleOf, SCAN_LEN,
  TARGET_AT, TARGET_LEN, WIDTH,
} from "../read/packet.ts";

/** One batch as the Loader hands it over: the samples' ids, labels and bytes (or the transform's items, or decoded images), in one allocation per batch. */
export interface Batch<T = Sample> {
  /** The epoch it belongs to. */
  epoch: number;
  /** 0, 1, 2 … in the order handed over. */
  index: number;
  /** The samples' ids, in the batch's order. */
  ids: string[];
  /** The samples' classes, in the batch's order (-1 where a label has none). */
  labels: Int32Array<ArrayBuffer>;
  /** The raw bytes, contiguous (empty when a transform produced `items`). */
  data: Uint8Array;
  /** Sample i's bytes are `data[offsets[i] … offsets[i + 1])`: n + 1 entries. */
  offsets: Uint32Array;
  /** The samples as read (Sample records), or the transform's results. */
  items: T[];
  /** Bytes fetched for this batch. */
  bytes: number;
  /** Multi-label or float labels: sample i's vector is targets[i·targetWidth … (i+1)·targetWidth). */
  targets?: Float32Array<ArrayBuffer>;
  /** Length of each sample's vector in `targets`. */
  targetWidth?: number;
  /**
   * With the Loader's `pad`: 1 where the sample repeats one that another rank reads this epoch
   * (the padding that evens out the ranks), in the batch's order; leave those out of metrics.
   */
  padded?: Uint8Array;
  /** Blob labels decoded by the read path (a mask per sample), in the batch's order. */
  masks?: NonNullable<Sample["mask"]>[];
  /**
   * The decoded images as one table (batches made from read workers' packets, NOTE [ Packets ]
   * in src/read/packet.ts): every image's pixels in one buffer, ready for one upload. `items`
   * then holds Sample records made on first access only.
   */
  images?: ImageTable;
  /**
   * Gives the batch's buffer (its `images`' pixels and its `data`) back to the worker that
   * filled it, to fill again (a batch cut across packets, or read in the loader's thread: to
   * this thread, for a later batch; NOTE [ Merge buffers ], src/read/packet.ts), and the
   * `items`' images a decode pool made back to that pool (NOTE [ Image buffers ],
   * src/decode/pool.ts), so that a steady epoch allocates no memory for bytes or pixels per
   * batch. Call it once done with those bytes (loaderBatches does, once they are in the GPU's
   * staging buffer): after it, the batch's views may read a later batch's bytes (NOTE [ Packet
   * slabs ], src/read/packet.ts). Without it, the buffers go back once the batch is garbage
   * collected, or to the collector.
   */
  release?: () => void;
}

/**
 * A batch's decoded images: image i is `pixels[at[i] .. at[i] + width[i]·height[i]·channels[i])`,
 * u8 HWC, rows unpadded, starting on a 4-byte boundary (channels 0: not decoded).
 */
export interface ImageTable {
  /** Every image's pixels, one after another. */
  pixels: Uint8Array<ArrayBuffer>;
  /** Where each image's pixels begin in `pixels`. */
  at: Int32Array<ArrayBuffer>;
  /** Each image's width in pixels. */
  width: Int32Array<ArrayBuffer>;
  /** Each image's height in pixels. */
  height: Int32Array<ArrayBuffer>;
  /** Each image's channels (0: not decoded). */
  channels: Int32Array<ArrayBuffer>;
  /** EXIF orientation 1-8 as decoded (src/decode/orient.ts). */
  orientation: Int32Array<ArrayBuffer>;
  /**
   * Where image i lies in the image it was cut from, when the read path decoded only the box a
   * GPU plan reads (the Loader's `decode: { plan }`): frameWidth[i] 0 where it is whole.
   * `Preprocessor.run` draws the plan on the frame, so the tensor is the whole image's.
   */
  frameX?: Int32Array<ArrayBuffer>;
  /** The box's top row in its frame. */
  frameY?: Int32Array<ArrayBuffer>;
  /** The frame's width (0: the image is whole). */
  frameWidth?: Int32Array<ArrayBuffer>;
  /** The frame's height. */
  frameHeight?: Int32Array<ArrayBuffer>;
  /**
   * With the hybrid decode (`decode: "hybrid"`): bytes of image i's DCT record at `at[i]`
   * (NOTE [ DCT record ], src/decode/dct.ts), which the GPU preprocessor finishes; 0 where
   * `pixels` holds its pixels. width, height and channels are those of the pixels it becomes.
   */
  dctBytes?: Int32Array<ArrayBuffer>;
  /**
   * With the GPU decode (`decode: "gpu"`): bytes of image i's scan record at `at[i]` (NOTE
   * [ Scan record ], src/decode/scan_record.ts), which the GPU preprocessor decodes; 0 where it
   * is not one. width, height and channels are those of the pixels it becomes.
   */
  scanBytes?: Int32Array<ArrayBuffer>;
}

/**
 * A batch that is one packet as a read worker sent it: views of its tables, the ids looked up
 * in the plan. O(1) objects; the per-sample `items` only if the consumer asks for them.
 */
export function packetBatch<T>(epoch: number, index: number, plan: readonly string[], p: Packet): Batch<T> {
  const n = p.n;
  const pos = column(p, POS);
  const ids = new Array<string>(n);
  for (let i = 0; i < n; i++) ids[i] = plan[pos[i]];
  const offsets = new Uint32Array(p.cols.buffer, p.cols.byteOffset + OFFSETS * n * 4, n + 1);
  const data = new Uint8Array(p.buf, p.dataAt, offsets[n]);
  const images: ImageTable = {
    pixels: new Uint8Array(p.buf, 0, p.dataAt), at: column(p, IMAGE_AT), width: column(p, WIDTH), height: column(p, HEIGHT),
    channels: column(p, CHANNELS), orientation: column(p, ORIENTATION),
    frameX: column(p, FRAME_X), frameY: column(p, FRAME_Y), frameWidth: column(p, FRAME_WIDTH), frameHeight: column(p, FRAME_HEIGHT),
    dctBytes: column(p, DCT_LEN), scanBytes: column(p, SCAN_LEN),
  };
  let items: T[] | undefined;
  const extra: Partial<Batch<T>> = {};
  if (n && p.floatTargets && p.cols[TARGET_LEN * n]) {
    // Float vectors, one after another in entry order (src/read/packet.ts): one view.
    const w = p.cols[TARGET_LEN * n] / 4;
    Object.assign(extra, { targets: new Float32Array(p.buf, p.cols[TARGET_AT * n], n * w), targetWidth: w });
  } else if (n && p.cols[MASK_CHANNELS * n]) {
    extra.masks = ids.map((id, i) => imageAt(p, i, MASK_AT, MASK_WIDTH, MASK_HEIGHT, MASK_CHANNELS) ?? mixed(id, "a decoded mask", undefined));
  }
  const batch = { epoch, index, ids, labels: column(p, LABEL), data, offsets, bytes: offsets[n], images, ...extra, ...(p.release ? { release: p.release } : {}) } as Omit<Batch<T>, "items">;
  return Object.defineProperty(batch, "items", {
    enumerable: true,
    get: () => (items ??= ids.map((id, i) => sampleOf(p, i, id) as T)),
  }) as Batch<T>;
}

/**
 * How packBatch hands a batch over: false, its items as a transform made them (they own what
 * they hold); or the samples as they arrived, their bytes packed into one buffer that release()
 * gives back, with `recycle` called on each sample then (its image's buffer back to the decode
 * pool that made it: NOTE [ Image buffers ], src/decode/pool.ts).
 */
export type Pack<S extends Fetched = Fetched> = false | { recycle?: (s: S) => void };

export function packBatch<T, S extends Fetched = Fetched>(epoch: number, index: number, arrived: { s: S; item: T }[], pack: Pack<S>): Batch<T> {
  const n = arrived.length;
  const ids = new Array<string>(n);
  const labels = new Int32Array(n);
  const offsets = new Uint32Array(n + 1);
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    ids[i] = arrived[i].s.id;
    labels[i] = arrived[i].s.label;
    bytes += arrived[i].s.data.length;
    offsets[i + 1] = bytes;
  }
  let data = new Uint8Array(0);
  let release: (() => void) | undefined;
  if (pack) {
    // In a buffer that release() hands back for a later batch (NOTE [ Merge buffers ], src/read/packet.ts).
    const b = batchBuffer(bytes);
    data = new Uint8Array(b.buf, 0, bytes);
    const recycle = pack.recycle;
    let released = false;
    release = !recycle ? b.release : () => {
      if (released) return;
      released = true;
      b.release();
      for (const a of arrived) recycle(a.s);
    };
    for (let i = 0; i < n; i++) data.set(arrived[i].s.data, offsets[i]);
  }
  const batch: Batch<T> = { epoch, index, ids, labels, data, offsets: pack ? offsets : new Uint32Array(0), items: arrived.map((a) => a.item), bytes, ...(release ? { release } : {}) };
  const first = n ? arrived[0].s as Fetched & Pick<Sample, "mask"> : undefined;
  if (first?.target instanceof Float32Array) {
    const w = first.target.length;
    const targets = new Float32Array(n * w);
    for (let i = 0; i < n; i++) {
      const t = arrived[i].s.target;
      if (!(t instanceof Float32Array) || t.length !== w) throw mixed(ids[i], `a vector of ${w}`, t);
      targets.set(t, i * w);
    }
    Object.assign(batch, { targets, targetWidth: w });
  } else if (first?.mask) {
    batch.masks = arrived.map((a, i) => (a.s as Fetched & Pick<Sample, "mask">).mask ?? mixed(ids[i], "a decoded mask", a.s.target));
  }
  return batch;
}

/** Samples of one dataset share a label kind: one that differs is a store written by something else. */
function mixed(id: string, want: string, got: unknown): never {
  const what = got === undefined ? "none" : got instanceof Float32Array ? `a vector of ${got.length}` : "bytes";
  throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot batch sample ${id} as the batch's labels are ${want} and its label is ${what}`);
}
