/**
 * A batch as the loader hands it over: ids, labels and the samples' bytes in one contiguous
 * buffer with an offsets table (one allocation per batch), or the transformed items when the
 * loader was given a `transform` (e.g. decoding).
 *
 *   data:    [ sample 0 bytes | sample 1 bytes | … | sample n-1 bytes ]
 *   offsets: [ 0, end0, end1, …, end(n-1) ]      sample i = data[offsets[i] .. offsets[i+1])
 */
import type { Sample } from "../read/sample.ts";
import type { Fetched } from "../source/source.ts";

export interface Batch<T = Sample> {
  epoch: number;
  /** 0, 1, 2 … in the order handed over. */
  index: number;
  ids: string[];
  labels: Int32Array<ArrayBuffer>;
  /** The raw bytes, contiguous (empty when a transform produced `items`). */
  data: Uint8Array;
  offsets: Uint32Array;
  /** The samples as read (Sample records), or the transform's results. */
  items: T[];
  /** Bytes fetched for this batch. */
  bytes: number;
}

export function packBatch<T>(epoch: number, index: number, arrived: { s: Fetched; item: T }[], pack: boolean): Batch<T> {
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
  if (pack) {
    data = new Uint8Array(bytes);
    for (let i = 0; i < n; i++) data.set(arrived[i].s.data, offsets[i]);
  }
  return { epoch, index, ids, labels, data, offsets: pack ? offsets : new Uint32Array(0), items: arrived.map((a) => a.item), bytes };
}
