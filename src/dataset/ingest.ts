/**
 * `ingest(store, source, options)`: reads samples from a source and writes them to a store.
 *
 *   source            key                         label                 metadata columns
 *   idx:PREFIX        train/INDEX, t10k/INDEX     the idx label         split, idx, pixels_sha1
 *   DIR (ImageFolder) path below DIR              index of <class>      —
 *   FILE.jsonl|.csv   `key` column, else `path`   `label` (int or name;   every other column
 *                                                 a JSON list: ints or
 *                                                 floats), or `mask`
 *   shards (.tar)     the WebDataset `__key__`    .cls, .json "label"   —
 *
 * Ids are UUIDv5 of (dataset, key), so a re-run skips what is stored (it is not re-read or
 * re-encoded) and an interrupted ingest resumes with nothing duplicated or lost. Each sample's
 * data and metadata are written atomically by the store. A file that cannot be read or is not
 * a valid JPEG or PNG is reported with its path and skipped, or stops the run with `strict`.
 *
 * WebDataset shards (SHARD.tar, a folder of .tar files, or a brace pattern such as
 * `PREFIX-{000000..000009}.tar`) are scanned first, one entry's bytes at a time
 * (webdataset.ts): each sample's key, label and where its image lies; the image is read from
 * the shard when it is stored. A sample's key is its `__key__` alone, so the same sample
 * re-sharded keeps its id; a key met again (in another shard or later in the same one) is a
 * bad entry, and the first is kept. A manifest's `path` may be an http(s):// URL, fetched
 * with `fetchUrl` (the CLI's reads http(s):// with undici and s3:// with S3Client).
 *
 * "A valid JPEG" is a structural check (jpeg_check.ts) unless `verify` gives a decoder: then
 * every new file is decoded in full before it is stored, so corrupt scan data (which the
 * header walk cannot see) is found here, not by the epoch that first reads it. src/dataset/
 * does not import src/decode/, so the caller passes the decoder (the CLI passes the wasm one).
 */
import { crc32 } from "../util/crc32.ts";
import { createHash } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import jpeg from "jpeg-js";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { readIdxDataset } from "./idx.ts";
import { sampleId } from "./sample_id.ts";
import { labelClass, type LabelSpec, type LabelValue } from "./label.ts";
import { checkJpeg } from "./jpeg_check.ts";
import { type Column, type ColumnType, type DatasetSpec, validateSpec } from "./spec.ts";
import { readChunks } from "./object_sink.ts";
import { readTar, TarError } from "./tar.ts";
import { expandBraces, groupSamples, isLabelEntry, sampleImage, sampleLabel } from "./webdataset.ts";
import type { MetaValue, SampleInput, Store } from "./store.ts";
import { mapLimit } from "../util/map_limit.ts";

/** What `ingest` writes and how: the dataset's name, grouping, label columns, verification, limits and progress. */
export interface IngestOptions {
  /** The dataset's name in the store (letters, digits, '-', '_', '.'), as in `sampleId(name, key)`. */
  dataset: string;
  /** Columns that group samples (metadata_by_nat's partition key). */
  groupBy?: string[];
  /** JPEG quality for idx images (default 90). */
  quality?: number;
  /** Stop at the first bad file instead of skipping it. */
  strict?: boolean;
  /** Only the first N items of the source (per idx split for idx sources). */
  limit?: number;
  /** Samples per write call (default 512). */
  chunk?: number;
  /** Files read at once (default 16). */
  readConcurrency?: number;
  /**
   * Decode each new file in full with this decoder (`createJpegDecoder()`, or anything whose
   * `decode` throws on a bad file) before storing it: one that fails is a bad file like any
   * other (skipped and listed, or the end of the run with `strict`), its reason the decoder's.
   */
  verify?: IngestVerifier;
  /** With `verify`: decode only when the source has at most this many items (default: always). */
  verifyUpTo?: number;
  /**
   * Stops the ingest: the samples being written are finished (each is whole or absent anyway)
   * and the summary comes back with `interrupted` set; a re-run resumes from there.
   */
  signal?: AbortSignal;
  /** Called as the ingest goes on, with the counts so far. */
  onProgress?: (p: IngestProgress) => void;
  /**
   * Fetches an http(s):// URL of a manifest's `path` column (the CLI passes one built on
   * undici); without it such a manifest is ERR_UNSUPPORTED. It throws when the URL cannot be
   * read (the row is then a bad file).
   */
  fetchUrl?: (url: string) => Promise<Uint8Array>;
  /** The largest shard entry read (default 256 MiB); a larger one is a bad shard (ERR_TOO_LARGE). */
  maxEntryBytes?: number;
  /**
   * A manifest's label kind (src/dataset/label.ts), where its values alone would not say:
   * "floats" for lists of whole numbers that are a vector, not classes. Default: by the values
   * (a number or a name: int; lists of names or of whole numbers: ints; lists with a fraction:
   * floats; a `mask` column instead of `label`: blob).
   */
  labelKind?: "int" | "ints" | "floats" | "blob";
}

/**
 * What `verify` needs of a decoder: `decode` throws (a JpegError or PngError, with reason and
 * offset) when a file does not decode. Its `format` says what it reads: PNGs are decoded too
 * by a "png" or "auto" one (createDecoder("auto")), else only their header is checked.
 */
export interface IngestVerifier {
  /** Decodes `data` in full; throws when it does not decode. */
  decode(data: Uint8Array): unknown;
  /** What it reads: with "png" or "auto", PNGs are decoded too (otherwise only their header is checked). */
  format?: string;
}

/** How far an `ingest` run has got: the counts so far, for `onProgress`. */
export interface IngestProgress {
  /** Items looked at. */
  done: number;
  /** Items the source holds. */
  total: number;
  /** Samples stored so far by this run. */
  written: number;
  /** Samples skipped because an earlier run had stored them. */
  existing: number;
  /** Items refused so far. */
  errors: number;
  /** Bytes written so far. */
  bytes: number;
  /** Seconds since the run began. */
  seconds: number;
}

/** A sample `ingest` refused: its key, its path when it has one, and why. */
export interface IngestError {
  /** The sample's key in the source. */
  key: string;
  /** The file it was read from, when it has one. */
  path?: string;
  /** Why it was refused. */
  reason: string;
  /** Where the check or the decoder found the problem, when it says (a JpegError's offset). */
  offset?: number;
}

/** What an `ingest` run did: counts of samples written, already stored and refused, with each refusal's reason. */
export interface IngestSummary {
  /** The dataset written to. */
  dataset: string;
  /** The source as given (`idx:PREFIX`, a folder, a manifest, shards). */
  source: string;
  /** Samples the source holds, its bad entries included. */
  total: number;
  /** Samples stored by this run. */
  written: number;
  /** Samples skipped because an earlier run had stored them. */
  existing: number;
  /** Samples refused, each with its key and reason. */
  errors: IngestError[];
  /** Bytes written this run. */
  bytes: number;
  /** Samples per label among those written this run. */
  perLabel: Record<number, number>;
  /** Seconds the run took. */
  seconds: number;
  /** Whether every JPEG stored this run was decoded in full first (`verify`, within `verifyUpTo`). */
  verified: boolean;
  /** PNGs stored this run with their header checked only (no `verify`, or a JPEG-only one). */
  pngHeaderOnly: number;
  /**
   * Stopped by `signal`: the items looked at (`written` + `existing` + `errors`) are done, and
   * the rest were not reached (some may be stored by an earlier run: ingest does not ask).
   */
  interrupted: boolean;
}

/** One sample of a source, read lazily. */
interface Item {
  key: string;
  label: LabelValue;
  /** A blob label (a mask file), read with the image. */
  loadLabel?: () => Promise<Uint8Array>;
  path?: string;
  meta: Record<string, MetaValue>;
  load(): Promise<Uint8Array>;
}

interface Source {
  spec: Omit<DatasetSpec, "name" | "groupBy">;
  items: Item[];
  /** Bad entries found while opening it (a shard's samples without label, a corrupt shard). */
  errors?: IngestError[];
}

const FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"];

/** Reads the samples of `source` (idx files, an ImageFolder, a JSONL/CSV manifest or WebDataset shards) and writes the new ones to `store`; a re-run skips what is stored. */
export async function ingest(store: Store, source: string, opts: IngestOptions): Promise<IngestSummary> {
  const t0 = runtime.now();
  const src = await openSource(source, opts);
  const spec = validateSpec({ ...src.spec, name: opts.dataset, groupBy: opts.groupBy ?? [] });
  await store.createDataset(spec);
  const items = src.items;
  const verifier = opts.verify && items.length <= (opts.verifyUpTo ?? Infinity) ? opts.verify : undefined;
  const summary: IngestSummary = {
    dataset: opts.dataset, source, total: items.length + (src.errors?.length ?? 0), written: 0, existing: 0, errors: [...(src.errors ?? [])], bytes: 0, perLabel: {}, seconds: 0,
    verified: !!verifier, pngHeaderOnly: 0, interrupted: false,
  };
  const run: IngestRun = { opts, verifier, summary, stopped: false };
  const chunk = opts.chunk ?? 512;
  let done = summary.errors.length;
  for (let start = 0; start < items.length; start += chunk) {
    // A turn of the event loop per chunk: an idx source and SQLite answer in microtasks only,
    // and a signal's handler (Ctrl-C aborting `signal`) runs between turns. A timer of 1 ms, not
    // 0: Deno may run an expired timer's callback before a signal that arrived during the chunk
    // reaches its handler, and the next chunk then ran whole (a clean-clone CI run: a Ctrl-C after
    // the second of four chunks, and the ingest completed); waiting lets the loop poll the signal first.
    if (start > 0) await new Promise((r) => setTimeout(r, 1));
    if (opts.signal?.aborted) {
      run.stopped = true;
      break;
    }
    const part = items.slice(start, start + chunk);
    await ingestChunk(store, run, part);
    if (run.stopped) break; // what was read is written and counted; the rest is the re-run's
    done += part.length;
    opts.onProgress?.({
      done, total: summary.total, written: summary.written, existing: summary.existing, errors: summary.errors.length,
      bytes: summary.bytes, seconds: (runtime.now() - t0) / 1000,
    });
  }
  summary.interrupted = run.stopped;
  summary.seconds = (runtime.now() - t0) / 1000;
  return summary;
}

/** One ingest under way: its options, the verifier (within `verifyUpTo`), the summary it fills, and whether `signal` stopped it with items not looked at. */
interface IngestRun {
  opts: IngestOptions;
  verifier?: IngestVerifier;
  summary: IngestSummary;
  stopped: boolean;
}

/** Writes the items of `part` that `store` does not hold yet, each read and checked first, and counts them. */
async function ingestChunk(store: Store, run: IngestRun, part: Item[]): Promise<void> {
  const { opts, summary } = run;
  const ids = part.map((it) => sampleId(opts.dataset, it.key));
  const stored = await store.existing(opts.dataset, ids);
  const fresh = part.filter((_, i) => !stored.has(ids[i]));
  summary.existing += part.length - fresh.length;
  const loaded = await mapLimit(fresh, opts.readConcurrency ?? 16, (it) => loadItem(run, it));
  const good = loaded.filter((s): s is SampleInput => s !== undefined);
  const r = await store.put(opts.dataset, good, { checked: true });
  summary.written += r.written;
  summary.existing += r.existing;
  for (const s of good) {
    summary.bytes += s.data.length;
    summary.perLabel[labelClass(s.label)] = (summary.perLabel[labelClass(s.label)] ?? 0) + 1;
  }
}

/** An item's bytes (and its mask's), checked: the sample to write, or undefined where it is refused (counted) or `signal` stopped the run. */
async function loadItem(run: IngestRun, it: Item): Promise<SampleInput | undefined> {
  // Interrupted: files not yet read are left for the re-run (not bad, not stored).
  if (run.opts.signal?.aborted) return void (run.stopped = true);
  let data: Uint8Array;
  try {
    data = await it.load();
  } catch (e) {
    return refuse(run, it, "it is unreadable", `cannot read: ${(e as Error).message}`);
  }
  let label = it.label;
  if (it.loadLabel) {
    try {
      label = await it.loadLabel();
    } catch (e) {
      return refuse(run, it, "its mask is unreadable", `cannot read: ${(e as Error).message}`);
    }
  }
  // The image, and a mask label the same way: checked, and decoded where the verifier reads it.
  for (const [bytes, what] of it.loadLabel ? [[data, "it"], [label as Uint8Array, "its mask"]] as const : [[data, "it"]] as const) {
    if (!(await checkImage(run, it, bytes, what))) return undefined;
  }
  return { key: it.key, label, data, meta: it.meta };
}

/** Checks an image's header, and decodes it where the verifier reads its format: false where it is refused (counted). */
async function checkImage(run: IngestRun, it: Item, bytes: Uint8Array, what: string): Promise<boolean> {
  const { verifier } = run;
  const png = isPng(bytes);
  const h = png ? checkPng(bytes) : checkJpeg(bytes);
  if ("reason" in h) return refuse(run, it, `${what} is not a valid ${png ? "PNG" : "JPEG"}`, h.reason) ?? false;
  // A PNG is decoded when the verifier reads PNGs; otherwise its header check stands.
  const decodes = verifier && (!png || verifier.format === "png" || verifier.format === "auto");
  if (decodes) {
    try {
      await verifier.decode(bytes);
    } catch (e) {
      const offset = (e as { offset?: unknown }).offset;
      return refuse(run, it, `${what} does not decode`, (e as Error).message, typeof offset === "number" ? offset : undefined, e) ?? false;
    }
  }
  if (png && !decodes) run.summary.pngHeaderOnly++;
  return true;
}

/** A refused item: counted in the summary's errors, or with `strict` the end of the ingest. */
function refuse(run: IngestRun, it: Item, what: string, reason: string, offset?: number, cause?: unknown): undefined {
  if (run.opts.strict) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest ${it.path ?? it.key} as ${what}: ${reason} (stopped: --strict)`, { cause });
  }
  run.summary.errors.push({ key: it.key, path: it.path, reason, ...(offset === undefined ? {} : { offset }) });
  return undefined;
}

// --- sources ---------------------------------------------------------------------------------

/**
 * Which kind of source `source` is: idx:PREFIX; a brace pattern (`{…..…}` or `{a,b}`) or a
 * `.tar` file: WebDataset shards; a folder with class folders: an ImageFolder; a folder with
 * .tar files and no sub-folder: its shards, in name order; a .jsonl/.csv file: a manifest.
 */
async function openSource(source: string, opts: IngestOptions): Promise<Source> {
  if (source.startsWith("idx:")) return idxSource(source.slice(4), opts);
  if (/\{[^{}]*(\.\.|,)[^{}]*\}/.test(source)) {
    const shards = expandBraces(source);
    const notTar = shards.find((p) => !/\.tar$/i.test(p));
    if (notTar) throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest '${source}' as a brace pattern must name .tar shards: it names '${notTar}'`);
    const missing = shards.filter((p) => !statSync(p, { throwIfNoEntry: false })?.isFile());
    if (missing.length) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest '${source}' as ${missing.length} of its ${shards.length} shards do not exist: ${missing.slice(0, 3).join(", ")}${missing.length > 3 ? ", …" : ""}`);
    }
    return shardSource(source, shards, opts);
  }
  let st;
  try {
    st = statSync(source);
  } catch {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest '${source}' as it does not exist (SOURCE: a folder, SHARD.tar, 'PREFIX-{000000..000009}.tar', idx:PATH-PREFIX, or a .jsonl/.csv manifest)`);
  }
  if (st.isDirectory()) {
    const names = readdirSync(source).filter((n) => !n.startsWith("."));
    const tars = names.filter((n) => /\.tar$/i.test(n)).sort();
    if (tars.length > 0 && !names.some((n) => statSync(join(source, n)).isDirectory())) return shardSource(source, tars.map((n) => join(source, n)), opts);
    return folderSource(source, opts);
  }
  if (/\.tar$/i.test(source)) return shardSource(source, [source], opts);
  if (/\.(jsonl|ndjson|csv)$/i.test(source)) return manifestSource(source, opts);
  throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest '${source}' as it is neither a folder, a .tar shard, idx:PREFIX, nor a .jsonl/.csv manifest`);
}

/**
 * WebDataset shards, scanned in order one entry's bytes at a time (images are skipped over,
 * not kept): each good sample becomes an item that reads its image from the shard when it is
 * stored. Bad samples and corrupt shards are listed (a shard is read up to its corruption:
 * the samples wholly before it count, not the one it may cut), or stop the scan with `strict`.
 */
async function shardSource(source: string, shards: string[], opts: IngestOptions): Promise<Source> {
  const items: Item[] = [], errors: IngestError[] = [];
  const firstShard = new Map<string, string>(); // key → the shard that holds it
  const names = new Map<number, string>(); // label → class name from the samples' .json
  let conflict = false;
  const limit = opts.limit ?? Infinity;
  const bad = (e: IngestError) => {
    if (opts.strict) {
      throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest ${e.path} as ${e.reason}${e.offset === undefined ? "" : ` (offset ${e.offset})`} (stopped: --strict)`);
    }
    errors.push(e);
  };
  for (const shard of shards) {
    if (items.length >= limit) break;
    try {
      const entries = readTar(readChunks(shard), { shard, maxEntryBytes: opts.maxEntryBytes, bodies: isLabelEntry });
      for await (const s of groupSamples(entries)) {
        const where = { key: s.key, path: `${shard}:${s.key}`, offset: s.offset };
        if (s.problems.length) { bad({ ...where, reason: s.problems.join("; ") }); continue; }
        const img = sampleImage(s);
        if ("reason" in img) { bad({ ...where, reason: img.reason }); continue; }
        const lab = sampleLabel(s);
        if ("reason" in lab) { bad({ ...where, reason: lab.reason }); continue; }
        const first = firstShard.get(s.key);
        if (first !== undefined) { bad({ ...where, reason: `its key is also in ${first}, which is kept: keys must be unique across the shards` }); continue; }
        firstShard.set(s.key, shard);
        if (lab.className !== undefined) {
          if (names.has(lab.label) && names.get(lab.label) !== lab.className) conflict = true;
          names.set(lab.label, lab.className);
        }
        const { dataOffset, size } = img.entry;
        items.push({ key: s.key, label: lab.label, path: `${shard}:${img.entry.name}`, meta: {}, load: () => readRange(shard, dataOffset, size) });
        if (items.length >= limit) break;
      }
    } catch (e) {
      if (e instanceof TarError) bad({ key: basename(shard), path: shard, reason: `${e.reason} at offset ${e.offset}: the samples wholly before it are kept`, offset: e.offset });
      else if (e instanceof CassetteError) throw e;
      else bad({ key: basename(shard), path: shard, reason: `cannot read: ${(e as Error).message}` });
    }
  }
  // A label map when every label from 0 to the largest is named, and always the same way.
  const top = Math.max(-1, ...items.map((it) => it.label as number));
  const classes = !conflict && names.size > 0 && top >= 0 && names.size === top + 1 ? Array.from({ length: top + 1 }, (_, l) => names.get(l)!) : undefined;
  const origin = { source: /[{]/.test(source) ? source : resolve(source), format: "webdataset", shards: shards.length };
  return { spec: { version: 1, columns: [], label: { kind: "int", classes }, origin }, items, errors };
}

/** `length` bytes of the file at `path` from `position`: a shard entry's image, read in place. */
async function readRange(path: string, position: number, length: number): Promise<Uint8Array> {
  const f = await open(path, "r");
  try {
    const buf = new Uint8Array(length);
    for (let got = 0; got < length;) {
      const { bytesRead } = await f.read(buf, got, length - got, position + got);
      if (bytesRead === 0) throw new Error(`${path} ends at offset ${position + got}, inside the ${length} bytes at ${position}`);
      got += bytesRead;
    }
    return buf;
  } finally {
    await f.close();
  }
}

async function idxSource(prefix: string, opts: IngestOptions): Promise<Source> {
  const quality = opts.quality ?? 90;
  if (!(quality >= 1 && quality <= 100)) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest as 'quality' must be 1..100: current value is ${quality}`);
  }
  const splits = await readIdxDataset(prefix);
  const items: Item[] = [];
  for (const s of splits) {
    const px = s.height * s.width;
    const n = Math.min(s.count, opts.limit ?? Infinity);
    for (let i = 0; i < n; i++) {
      const grey = s.images.subarray(i * px, (i + 1) * px);
      items.push({
        key: `${s.name}/${i}`,
        label: s.labels[i],
        meta: { split: s.name, idx: i, pixels_sha1: createHash("sha1").update(grey).digest("hex") },
        load: () => Promise.resolve(encodeGrey(grey, s.width, s.height, quality)),
      });
    }
  }
  const columns: Column[] = [{ name: "split", type: "text" }, { name: "idx", type: "int" }, { name: "pixels_sha1", type: "text" }];
  const classes = /fashion/i.test(prefix) ? FASHION_CLASSES : undefined;
  return { spec: { version: 1, columns, label: { kind: "int", classes }, origin: { source: `idx:${prefix}`, encoder: "jpeg-js", quality } }, items };
}

/** A grey image as a JPEG (jpeg-js writes three components; R = G = B). */
export function encodeGrey(grey: Uint8Array, width: number, height: number, quality: number): Uint8Array {
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < grey.length; p++) {
    rgba[4 * p] = rgba[4 * p + 1] = rgba[4 * p + 2] = grey[p];
    rgba[4 * p + 3] = 255;
  }
  return new Uint8Array(jpeg.encode({ data: rgba, width, height }, quality).data);
}

function folderSource(root: string, opts: IngestOptions): Source {
  const classes = readdirSync(root).filter((n) => !n.startsWith(".") && statSync(join(root, n)).isDirectory()).sort();
  if (classes.length === 0) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest folder '${root}' as it has no class folders (expected ROOT/<class>/<image>)`);
  }
  const items: Item[] = [];
  classes.forEach((cls, label) => {
    for (const path of walk(join(root, cls))) {
      if (items.length >= (opts.limit ?? Infinity)) return;
      items.push({ key: relative(root, path), label, path, meta: {}, load: () => runtime.readFile(path) });
    }
  });
  return { spec: { version: 1, columns: [], label: { kind: "int", classes }, origin: { source: resolve(root) } }, items };
}

function walk(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((n) => {
    if (n.startsWith(".")) return [];
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

async function manifestSource(file: string, opts: IngestOptions): Promise<Source> {
  const text = new TextDecoder().decode(await runtime.readFile(file));
  const records = /\.csv$/i.test(file) ? parseCsv(text, file) : parseJsonl(text, file);
  if (records.length === 0) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as it has no rows`);
  const masks = records.some((r) => r.mask !== undefined);
  for (const [i, r] of records.entries()) {
    if (typeof r.path !== "string" || !r.path) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as row ${i + 1} has no 'path'`);
    if (masks) {
      if (typeof r.mask !== "string" || !r.mask) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as row ${i + 1} (${r.path}) has no 'mask' where other rows have one`);
      if (r.label !== undefined) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as row ${i + 1} (${r.path}) has both 'label' and 'mask': a sample's label is one or the other`);
    } else if (r.label === undefined || r.label === null || r.label === "") {
      throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as row ${i + 1} (${r.path}) has no 'label'`);
    }
  }
  const { label: labelSpec, value } = masks ? { label: { kind: "blob" } as LabelSpec, value: () => 0 } : manifestLabels(records, file, opts.labelKind);
  if (masks && opts.labelKind && opts.labelKind !== "blob") {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest manifest '${file}' with labels of kind '${opts.labelKind}' as its rows give a 'mask' (kind 'blob')`);
  }
  const names = [...new Set(records.flatMap((r) => Object.keys(r)))].filter((k) => !["path", "label", "key", "mask"].includes(k));
  const columns: Column[] = names.map((name) => ({ name, type: inferType(records.map((r) => r[name])) }));
  const base = dirname(file);
  const items: Item[] = records.slice(0, opts.limit ?? Infinity).map((r, i) => {
    const meta: Record<string, MetaValue> = {};
    for (const c of columns) meta[c.name] = coerce(r[c.name], c.type);
    const where = `manifest '${file}' row ${i + 1}`;
    const { path, load } = manifestPath(r.path as string, base, where, opts);
    const item: Item = { key: String(r.key ?? r.path), label: value(r.label, i), path, meta, load };
    if (masks) item.loadLabel = manifestPath(r.mask as string, base, `${where} 'mask'`, opts).load;
    return item;
  });
  return { spec: { version: 1, columns, label: labelSpec, origin: { source: resolve(file) } }, items };
}

/**
 * A manifest's label column: its kind (see IngestOptions.labelKind) and each row's value.
 * Names become class numbers in sorted order; whole numbers stay as they are.
 */
function manifestLabels(records: Record<string, unknown>[], file: string, forced?: IngestOptions["labelKind"]): { label: LabelSpec; value: (v: unknown, row: number) => LabelValue } {
  const bad = (row: number, why: string): never => {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as row ${row + 1}'s label ${why}`);
  };
  const values = records.map((r) => r.label);
  const lists = values.map((v) => Array.isArray(v));
  if (lists.some((l) => l !== lists[0])) bad(lists.indexOf(!lists[0]), "is a list where row 1's is not, or the other way round: all rows give one kind");
  if (!lists[0]) {
    if (forced && forced !== "int") throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest manifest '${file}' with labels of kind '${forced}' as its labels are single values (kind 'int')`);
    // Integers as they are, or class names numbered in sorted order.
    const ints = values.every((v) => Number.isInteger(typeof v === "string" ? Number(v) : v));
    const classes = ints ? undefined : [...new Set(values.map((v) => String(v)))].sort();
    return { label: { kind: "int", classes }, value: (v) => (classes ? classes.indexOf(String(v)) : Number(v)) };
  }
  const all = (values as unknown[][]).flat();
  const numbers = all.every((x) => typeof x === "number");
  const strings = all.every((x) => typeof x === "string");
  values.forEach((v, row) => (v as unknown[]).forEach((x) => typeof x === "number" || typeof x === "string" || bad(row, `holds ${JSON.stringify(x)}: a list holds numbers or class names`)));
  if (!numbers && !strings) bad(0, "lists mix numbers and class names across rows: use one or the other");
  const kind = forced ?? (strings || all.every((x) => Number.isInteger(x)) ? "ints" : "floats");
  if (kind === "floats") {
    if (strings) bad(0, "lists hold class names, not numbers (kind 'floats')");
    const length = (values[0] as unknown[]).length;
    values.forEach((v, row) => (v as unknown[]).length !== length && bad(row, `holds ${(v as unknown[]).length} numbers where row 1's holds ${length}: a float label has one length`));
    return { label: { kind: "floats", length }, value: (v) => v as number[] };
  }
  if (kind !== "ints") throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest manifest '${file}' with labels of kind '${kind}' as its labels are lists (kind 'ints' or 'floats')`);
  if (strings) {
    const classes = [...new Set(all as string[])].sort();
    return { label: { kind: "ints", classes }, value: (v) => (v as string[]).map((c) => classes.indexOf(c)) };
  }
  values.forEach((v, row) => (v as number[]).forEach((x) => (Number.isInteger(x) && x >= 0) || bad(row, `holds ${x}: class numbers are whole and not negative`)));
  const top = Math.max(-1, ...(all as number[]));
  return { label: { kind: "ints", classes: Array.from({ length: top + 1 }, (_, c) => String(c)) }, value: (v) => v as number[] };
}

/**
 * Where a manifest row's `path` is read from: a local path (relative to the manifest), a
 * file:// URL, or an http(s):// or s3:// URL through `fetchUrl`. Other schemes are
 * ERR_UNSUPPORTED at open, naming the row.
 */
function manifestPath(p: string, base: string, where: string, opts: IngestOptions): { path: string; load: () => Promise<Uint8Array> } {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(p)?.[1].toLowerCase();
  if (scheme === undefined) {
    const path = isAbsolute(p) ? p : join(base, p);
    return { path, load: () => runtime.readFile(path) };
  }
  if (scheme === "file") {
    const path = fileURLToPath(p);
    return { path, load: () => runtime.readFile(path) };
  }
  if (scheme === "http" || scheme === "https" || scheme === "s3") {
    const fetchUrl = opts.fetchUrl;
    if (!fetchUrl) throw new CassetteError("ERR_UNSUPPORTED", `Cannot ingest ${where} (${p}) as no 'fetchUrl' was given to read ${scheme}:// paths`);
    return { path: p, load: () => fetchUrl(p) };
  }
  throw new CassetteError("ERR_UNSUPPORTED", `Cannot ingest ${where} (${p}) as ${scheme}:// paths are not supported: use local paths, file://, http(s):// or s3://`);
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Whether `b` starts with the PNG signature (PNG spec §5.2). */
function isPng(b: Uint8Array): boolean {
  return b.length >= 8 && PNG_SIGNATURE.every((v, i) => b[i] === v);
}

/**
 * A structural check of a PNG: signature, then IHDR first (PNG spec §5.6, §11.2.2) with
 * length 13, its CRC, a non-zero size and a valid bit depth for its colour type, and IEND at
 * the end of the file. Pixels are the decoder's to check.
 */
export function checkPng(b: Uint8Array): { width: number; height: number } | { reason: string } {
  const no = (why: string) => ({ reason: `not a JPEG (it is a PNG) nor a valid PNG: ${why}` });
  if (!isPng(b)) return no("no PNG signature at offset 0");
  if (b.length < 33) return no(`truncated at offset ${b.length}: the IHDR chunk needs bytes 8 to 33`);
  const u32 = (at: number) => ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
  const type = String.fromCharCode(b[12], b[13], b[14], b[15]);
  if (type !== "IHDR" || u32(8) !== 13) return no(`the first chunk at offset 8 is ${JSON.stringify(type)} of ${u32(8)} bytes, not IHDR of 13`);
  if (crc32(b.subarray(12, 29)) !== u32(29)) return no("the IHDR chunk's CRC (offset 29) does not match its bytes");
  const width = u32(16), height = u32(20), depth = b[24], colour = b[25];
  if (width === 0 || height === 0) return no(`its size is ${width}x${height} (offset 16)`);
  const depths: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };
  if (!depths[colour]?.includes(depth)) return no(`colour type ${colour} with bit depth ${depth} is not a PNG format (offset 24)`);
  if (b[26] !== 0 || b[27] !== 0 || b[28] > 1) return no("its compression, filter or interlace method is unknown (offset 26)");
  const iend = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];
  if (!iend.every((v, i) => b[b.length - 12 + i] === v)) return no(`no IEND chunk at the end (offset ${b.length - 12}): truncated`);
  return { width, height };
}

function inferType(values: unknown[]): ColumnType {
  const present = values.filter((v) => v !== undefined && v !== null && v !== "");
  if (present.every((v) => Number.isSafeInteger(typeof v === "string" ? Number(v) : v) && !(typeof v === "string" && !/^-?\d+$/.test(v)))) return "int";
  if (present.every((v) => typeof v === "number" || (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))))) return "float";
  return "text";
}

function coerce(v: unknown, type: ColumnType): MetaValue {
  if (v === undefined || v === null || v === "") return null;
  return type === "text" ? String(v) : Number(v);
}

function parseJsonl(text: string, file: string): Record<string, unknown>[] {
  return text.split("\n").flatMap((line, i) => {
    if (!line.trim()) return [];
    try {
      const v = JSON.parse(line);
      if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not an object");
      return [v as Record<string, unknown>];
    } catch (e) {
      throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read manifest '${file}' as line ${i + 1} is not a JSON object: ${(e as Error).message}`);
    }
  });
}

/** RFC 4180 CSV: a header row, fields optionally quoted with "" for a quote. */
export function parseCsv(text: string, file = "csv"): Record<string, string>[] {
  const rows: string[][] = [];
  let row: string[] = [], field = "", quoted = false, i = 0;
  for (; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"' && field === "") quoted = true;
    else if (ch === ",") { row.push(field); field = ""; }
    else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      if (row.some((f) => f !== "")) rows.push(row);
      row = []; field = "";
    } else field += ch;
  }
  if (quoted) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read manifest '${file}' as a quoted field is not closed`);
  row.push(field);
  if (row.some((f) => f !== "")) rows.push(row);
  const [header, ...body] = rows;
  if (!header) return [];
  return body.map((r, n) => {
    if (r.length !== header.length) {
      throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read manifest '${file}' as row ${n + 2} has ${r.length} fields: the header has ${header.length}`);
    }
    return Object.fromEntries(header.map((h, k) => [h.trim(), r[k]]));
  });
}
