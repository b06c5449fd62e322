/**
 * Ingests (Fashion-)MNIST idx files into a store: each 28×28 image becomes a JPEG (jpeg-js,
 * quality 90 by default) under the key `train/INDEX` or `t10k/INDEX`, with the idx split as
 * its group and the SHA-1 of the original pixels in its metadata, so a round trip can be
 * proven. Idempotent: ids are UUIDv5 of the key, so an interrupted ingest resumes cleanly.
 */
import { createHash } from "node:crypto";
import jpeg from "jpeg-js";
import { readIdxDataset } from "./idx.ts";
import { sampleId } from "./sample_id.ts";
import type { SampleInput, SqliteStore } from "../source/sqlite.ts";

export interface IdxIngestOptions {
  /** JPEG quality 1..100 (default 90). */
  quality?: number;
  /** Only the first N images of each idx split. */
  limit?: number;
  /** Samples per transaction (default 2000). */
  chunk?: number;
  onProgress?: (done: number, total: number) => void;
}

export interface IngestSummary {
  written: number;
  existing: number;
  bytes: number;
  perSplit: Record<string, number>;
}

export async function ingestIdx(store: SqliteStore, dataset: string, prefix: string, opts: IdxIngestOptions = {}): Promise<IngestSummary> {
  const quality = opts.quality ?? 90;
  const chunk = opts.chunk ?? 2000;
  const splits = await readIdxDataset(prefix);
  const total = splits.reduce((n, s) => n + Math.min(s.count, opts.limit ?? Infinity), 0);
  const summary: IngestSummary = { written: 0, existing: 0, bytes: 0, perSplit: {} };
  let done = 0;
  for (const split of splits) {
    const count = Math.min(split.count, opts.limit ?? Infinity);
    const px = split.height * split.width;
    const rgba = new Uint8Array(px * 4);
    for (let start = 0; start < count; start += chunk) {
      const batch: SampleInput[] = [];
      const end = Math.min(count, start + chunk);
      const keys = Array.from({ length: end - start }, (_, k) => `${split.name}/${start + k}`);
      const stored = store.has(keys.map((k) => sampleId(dataset, k)));
      for (let i = start; i < end; i++) {
        if (stored.has(sampleId(dataset, keys[i - start]))) {
          summary.existing++;
          continue;
        }
        const grey = split.images.subarray(i * px, (i + 1) * px);
        for (let p = 0; p < px; p++) {
          rgba[4 * p] = rgba[4 * p + 1] = rgba[4 * p + 2] = grey[p];
          rgba[4 * p + 3] = 255;
        }
        const data = new Uint8Array(jpeg.encode({ data: rgba, width: split.width, height: split.height }, quality).data);
        summary.bytes += data.length;
        batch.push({
          key: `${split.name}/${i}`,
          label: split.labels[i],
          data,
          group: split.name,
          meta: { split: split.name, index: i, pixelsSha1: createHash("sha1").update(grey).digest("hex") },
        });
      }
      const r = store.put(dataset, batch);
      summary.written += r.written;
      summary.existing += r.existing;
      done += end - start;
      opts.onProgress?.(done, total);
      await Promise.resolve(); // let progress output flush between chunks
    }
    summary.perSplit[split.name] = count;
  }
  return summary;
}
