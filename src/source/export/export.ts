/**
 * A dataset (or one split of it) out of a store as objects: `exportDataset` writes DIR/<id>
 * plus DIR/labels.json (the layout in file.ts), which `file:DIR` reads in place, any static
 * web server serves as `http(s)://HOST/PREFIX`, and `s3://BUCKET/PREFIX` holds for s3.ts to
 * read. `cassette export` (src/cli/export.ts) is its command.
 *
 * Each file is written under a temporary name (`.cassette-part-…`, never an id) and renamed,
 * so an interrupted export leaves no partial file under a final name; a re-run skips the
 * files already there. labels.json is written last, the same way: its presence marks a
 * complete export. One export at a time per folder (a run removes the parts it finds).
 *
 * `--format webdataset` writes WebDataset shards instead (`exportShards`): the samples in an
 * order shuffled by a seed, cut into size-bounded `PREFIX-NNNNNN.tar` files (webdataset.ts),
 * then `PREFIX.index.json`, the shard list wids opens, written last. Shards are written whole
 * or not at all, and a re-run keeps the shards already there once it has checked that they
 * hold the samples this order puts there: the rest follows as if never interrupted, so the
 * result is the same bytes either way.
 *
 * Every object goes out through an ObjectSink's `put` (src/dataset/object_sink.ts): a folder's
 * (a temporary name, then a rename) or a bucket's (s3Sink: one PUT, whole or absent).
 */
import { join } from "node:path";
import { runtime } from "../../../runtime-adapters/index.ts";
import { CassetteError } from "../../errors.ts";
import { folderSink, type ObjectSink } from "../../dataset/object_sink.ts";
import { readTar } from "../../dataset/tar.ts";
import { DEFAULT_SHARD_BYTES, groupSamples, shardIndex, type ShardInfo, ShardWriter, widsIndex } from "../../dataset/webdataset.ts";
import { hash32, rng, shuffle } from "../../plan/rng.ts";
import { formatLabels, isObjectName, LABELS_FILE, parseLabels } from "../files/file.ts";
import { mapLimit } from "../../util/map_limit.ts";
import type { S3Options } from "../http/s3.ts";
import type { MetaValue, Store } from "../../dataset/store.ts";

/** How `exportDataset` writes a dataset's samples as objects: which ids, how many at once, and where (a folder, a sink, or an S3 bucket). */
export interface ExportOptions {
  /** Only these ids (default: every sample of the dataset). */
  ids?: readonly string[];
  /** Files written at once (default 16). */
  concurrency?: number;
  /** Where the objects go (default: `folderSink(dir)`, or `s3Sink(dir)` for an s3:// address); `dir` then only names it in the summary. */
  sink?: ObjectSink;
  /** For an `s3://BUCKET/PREFIX` destination: credentials, endpoint… (S3Options), and whether to make the bucket when missing. */
  s3?: S3Options & { createBucket?: boolean };
  /** Called as the export goes on, with the counts so far. */
  onProgress?: (p: { done: number; total: number; written: number; bytes: number }) => void;
}

/** What an `exportDataset` run did: samples written now and already there, bytes, and the labels written. */
export interface ExportSummary {
  /** The dataset exported. */
  dataset: string;
  /** Where it went: the folder or s3:// address. */
  out: string;
  /** Samples of this export (written now or already there). */
  samples: number;
  /** Samples written by this run. */
  written: number;
  /** Samples already there from an earlier run, skipped. */
  existing: number;
  /** Bytes written now. */
  bytes: number;
  /** Seconds the run took. */
  seconds: number;
  /** Labels in labels.json (this export's and an earlier one's into the same folder). */
  labels: number;
}

/** Samples read from the store per request. */
const CHUNK = 64;

/** Writes `ids` (default: all) of `dataset` into `dir`; resumable, see the file's doc. */
export async function exportDataset(store: Store, dataset: string, dir: string, o: ExportOptions = {}): Promise<ExportSummary> {
  const t0 = runtime.now();
  const concurrency = o.concurrency ?? 16;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot export as 'concurrency' must be a positive integer: current value is ${concurrency}`);
  }
  const spec = await store.getDataset(dataset); // names the datasets that exist when it does not
  if (spec.label.kind !== "int") throw labelsNotExported(dataset, spec.label.kind, "an export's labels.json");
  const labels = new Map<string, number>();
  for await (const page of store.scanNat(dataset)) for (const r of page) labels.set(r.id, r.label);
  const ids = o.ids ? [...new Set(o.ids)] : [...labels.keys()];
  for (const id of ids) {
    if (!labels.has(id)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot export sample ${id} as it is not in dataset '${dataset}' of ${store.address}`);
    if (!isObjectName(id)) throw new CassetteError("ERR_UNSUPPORTED", `Cannot export sample ${id} as its id is not a file name (a letter or digit, then letters, digits, . _ -)`);
  }

  // A folder's removes parts left by an interrupted run; one opened here is closed here.
  const opened = o.sink ? undefined : await openSink(dir, o.s3);
  const sink = o.sink ?? opened!;
  try {
    const names = new Set(await sink.list());
    const all = new Map<string, number>();
    if (names.has(LABELS_FILE)) {
      const prev = parseLabels(new TextDecoder().decode(await readAll(sink.read(LABELS_FILE))), objectPath(sink.where, LABELS_FILE));
      if (prev.dataset !== dataset) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot export dataset '${dataset}' to ${dir} as it holds an export of dataset '${prev.dataset}': choose another --out`);
      }
      for (const [id, l] of prev.labels) all.set(id, l);
    }
    const todo = ids.filter((id) => !names.has(id));
    const existing = ids.length - todo.length;

    let written = 0, bytes = 0, done = existing;
    o.onProgress?.({ done, total: ids.length, written, bytes });
    const chunks: string[][] = [];
    for (let i = 0; i < todo.length; i += CHUNK) chunks.push(todo.slice(i, i + CHUNK));
    // A few chunks in flight keeps the store busy while files are written; each chunk's files
    // are written at most `concurrency` at once overall.
    const perChunk = Math.max(1, Math.ceil(concurrency / 4));
    await mapLimit(chunks, Math.min(4, concurrency), async (chunk) => {
      const samples = await store.get(dataset, chunk);
      await mapLimit(samples, perChunk, async (s) => {
        await sink.put(s.id, s.data);
        written++;
        bytes += s.data.length;
        o.onProgress?.({ done: ++done, total: ids.length, written, bytes });
      });
    });

    for (const id of ids) all.set(id, labels.get(id)!);
    await sink.put(LABELS_FILE, new TextEncoder().encode(formatLabels(dataset, all)));
    return { dataset, out: dir, samples: ids.length, written, existing, bytes, seconds: (runtime.now() - t0) / 1000, labels: all.size };
  } finally {
    await opened?.close?.();
  }
}

/**
 * The destination `out` names: `s3://BUCKET/PREFIX[?…]` (src/source/http/s3.ts, loaded only then)
 * or a folder. Its `close` lets go of the connections, where it has any.
 */
export async function openSink(out: string, s3?: S3Options & { createBucket?: boolean }): Promise<ObjectSink & { close?(): Promise<void> }> {
  if (out.startsWith("s3://")) {
    const { s3Sink } = await import("../http/s3.ts");
    return s3Sink(out, s3);
  }
  return folderSink(out);
}

/** `name` in the destination `out`, as messages show it. */
export function objectPath(out: string, name: string): string {
  return out.startsWith("s3://") ? `${out.replace(/\?.*$/, "")}/${name}` : join(out, name);
}


/** A stream's chunks as one buffer. */
async function readAll(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.length;
  return out;
}

/** How `exportShards` writes WebDataset shards: which ids, the shuffle's seed, the shards' prefix and bounds, and progress. */
export interface ShardExportOptions {
  /** Only these ids (default: every sample of the dataset). */
  ids?: readonly string[];
  /** The shuffle's seed (default 0). */
  seed?: number;
  /** Shard names' prefix (default: the dataset's name). */
  prefix?: string;
  /** Bytes at most in one shard (default 256 000 000); a larger sample gets a shard of its own. */
  maxShardBytes?: number;
  /** Samples at most in one shard (default: no bound). */
  maxSamples?: number;
  /** After each sample: `shards` counts the shards done and the one being written. */
  onProgress?: (p: { done: number; total: number; written: number; bytes: number; shards: number }) => void;
}

/** What an `exportShards` run did: the shards (written now or already there), samples, bytes and seed. */
export interface ShardExportSummary {
  /** The dataset exported. */
  dataset: string;
  /** Where it went: the folder or s3:// address. */
  out: string;
  /** The format written. */
  format: "webdataset";
  /** The shards' names' prefix: PREFIX-NNNNNN.tar and PREFIX.index.json. */
  prefix: string;
  /** The shuffle's seed the samples' order came from. */
  seed: number;
  /** Samples of this export (in shards written now or already there). */
  samples: number;
  /** Samples in shards written by this run. */
  written: number;
  /** Samples in shards already there from an earlier run, kept. */
  existing: number;
  /** Bytes of the shards written now. */
  bytes: number;
  /** Seconds the run took. */
  seconds: number;
  /** Every shard of the export, in order. */
  shards: ShardInfo[];
  /** The wids shard list, written last. */
  index: string;
}

/** Salt of the shard order's PRNG stream, so it is not the split's own draw from the same seed. */
const SHARD_ORDER = hash32("webdataset-order");

/** The order samples go into shards: the ids sorted, then shuffled by `seed`. */
export function shardOrder(ids: readonly string[], seed: number): string[] {
  return shuffle([...new Set(ids)].sort(), rng(seed, SHARD_ORDER));
}

/** Writes `ids` (default: all) of `dataset` as WebDataset shards through `sink`; resumable (see the file's doc). */
export async function exportShards(store: Store, dataset: string, sink: ObjectSink, o: ShardExportOptions = {}): Promise<ShardExportSummary> {
  const t0 = runtime.now();
  const seed = o.seed ?? 0;
  if (!Number.isSafeInteger(seed)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot export as 'seed' must be an integer: current value is ${seed}`);
  const prefix = o.prefix ?? dataset;
  const spec = await store.getDataset(dataset);
  const rows = new Map<string, { label: number; meta: Record<string, MetaValue> }>();
  for await (const page of store.scanNat(dataset)) for (const r of page) rows.set(r.id, r);
  const ids = o.ids ? [...new Set(o.ids)] : [...rows.keys()];
  for (const id of ids) {
    if (!rows.has(id)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot export sample ${id} as it is not in dataset '${dataset}' of ${store.address}`);
  }
  const order = shardOrder(ids, seed);
  const bounds = { prefix, maxShardBytes: o.maxShardBytes ?? DEFAULT_SHARD_BYTES, maxSamples: o.maxSamples ?? Infinity };
  new ShardWriter(sink, bounds); // checks the options before anything is read

  // Shards already there (an interrupted run): each must hold the next samples of this order.
  const there = (await sink.list()).map((n) => [shardIndex(prefix, n), n] as const).filter(([k]) => k !== undefined).sort((a, b) => a[0]! - b[0]!);
  const shards: ShardInfo[] = [];
  let pos = 0;
  for (const [k, name] of there) {
    if (k !== shards.length) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume the export into ${sink.where} as shard ${name} follows ${shards.length ? shards[shards.length - 1].name : "no shard 0"}: remove its shards or choose another --out`);
    }
    let n = 0, bytes = 0;
    const keys: string[] = [], offsets: number[] = [];
    const sizes = async function* () {
      for await (const c of sink.read(name)) (bytes += c.length), yield c;
    };
    for await (const s of groupSamples(readTar(sizes(), { shard: name, bodies: () => false }))) {
      if (s.key !== order[pos + n]) {
        throw new CassetteError(
          "ERR_INVALID_OPTION",
          `Cannot resume the export into ${sink.where} as ${name} holds sample ${s.key} where this export (dataset '${dataset}', seed ${seed}, these bounds) puts ${order[pos + n] ?? "none"}: remove its shards or choose another --out`,
        );
      }
      keys.push(s.key);
      offsets.push(s.offset);
      n++;
    }
    if (n > bounds.maxSamples || (n > 1 && bytes > bounds.maxShardBytes)) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot resume the export into ${sink.where} as ${name} (${n} samples, ${bytes} bytes) is over this export's bounds: remove its shards or choose another --out`);
    }
    shards.push({ name, samples: n, bytes, keys, offsets });
    pos += n;
  }
  const existing = pos;
  const writer = new ShardWriter(sink, { ...bounds, firstIndex: shards.length });

  if (spec.label.kind !== "int") throw labelsNotExported(dataset, spec.label.kind, "WebDataset shards");
  const classes = spec.label.classes;
  let written = 0, bytes = 0;
  const total = order.length;
  o.onProgress?.({ done: pos, total, written, bytes, shards: shards.length });
  const chunks: string[][] = [];
  for (let i = pos; i < order.length; i += CHUNK) chunks.push(order.slice(i, i + CHUNK));
  // One chunk read ahead of the one being written; samples go out in order.
  let next = chunks.length ? store.get(dataset, chunks[0]) : undefined;
  for (let c = 0; c < chunks.length; c++) {
    const samples = await next!;
    next = c + 1 < chunks.length ? store.get(dataset, chunks[c + 1]) : undefined;
    for (const s of samples) {
      const meta: Record<string, MetaValue> = {};
      for (const [k, v] of Object.entries(rows.get(s.id)!.meta)) if (v !== null) meta[k] = v;
      const closed = await writer.add({ key: s.id, image: s.data, label: s.label, className: classes?.[s.label], meta });
      if (closed) (bytes += closed.bytes), shards.push(closed);
      written++;
      // The shard this sample went into counts too: without it the last progress line said
      // one shard fewer than the summary (the last shard closes only at the flush below).
      o.onProgress?.({ done: existing + written, total, written, bytes, shards: shards.length + 1 });
    }
  }
  const last = await writer.flush();
  if (last) (bytes += last.bytes), shards.push(last);
  const index = `${prefix}.index.json`;
  await sink.put(index, new TextEncoder().encode(widsIndex(`${dataset} (seed ${seed})`, shards)));
  return {
    dataset, out: sink.where, format: "webdataset", prefix, seed, samples: order.length, written, existing, bytes,
    seconds: (runtime.now() - t0) / 1000, shards, index,
  };
}

/** Exports carry one integer label a sample (labels.json, .cls): other kinds are refused by name, not flattened. */
function labelsNotExported(dataset: string, kind: string, where: string): CassetteError {
  return new CassetteError("ERR_UNSUPPORTED", `Cannot export dataset '${dataset}' as its labels are of kind '${kind}' and ${where} hold one integer a sample: read it from its store`);
}

