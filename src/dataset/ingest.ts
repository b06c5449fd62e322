/**
 * `ingest(store, source, options)`: reads samples from a source and writes them to a store.
 *
 *   source            key                         label                 metadata columns
 *   idx:PREFIX        train/INDEX, t10k/INDEX     the idx label         split, idx, pixels_sha1
 *   DIR (ImageFolder) path below DIR              index of <class>      —
 *   FILE.jsonl|.csv   `key` column, else `path`   `label` (int or name) every other column
 *
 * Ids are UUIDv5 of (dataset, key), so a re-run skips what is stored (it is not re-read or
 * re-encoded) and an interrupted ingest resumes with nothing duplicated or lost. Each sample's
 * data and metadata are written atomically by the store. A file that cannot be read or is not
 * a valid JPEG is reported with its path and skipped, or stops the run with `strict`.
 *
 * "A valid JPEG" is a structural check (jpeg_check.ts) unless `verify` gives a decoder: then
 * every new file is decoded in full before it is stored, so corrupt scan data (which the
 * header walk cannot see) is found here, not by the epoch that first reads it. src/dataset/
 * does not import src/decode/, so the caller passes the decoder (the CLI passes the wasm one).
 */
import { createHash } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import jpeg from "jpeg-js";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { readIdxDataset } from "./idx.ts";
import { sampleId } from "./sample_id.ts";
import { checkJpeg } from "./jpeg_check.ts";
import { type Column, type ColumnType, type DatasetSpec, validateSpec } from "./spec.ts";
import type { MetaValue, SampleInput, Store } from "./store.ts";
import { mapLimit } from "../util/map_limit.ts";

export interface IngestOptions {
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
  onProgress?: (p: IngestProgress) => void;
}

/** What `verify` needs of a decoder: `decode` throws (a JpegError, with reason and offset) when a file does not decode. */
export interface IngestVerifier {
  decode(data: Uint8Array): unknown;
}

export interface IngestProgress {
  done: number;
  total: number;
  written: number;
  existing: number;
  errors: number;
  bytes: number;
  seconds: number;
}

export interface IngestError {
  key: string;
  path?: string;
  reason: string;
  /** Where the check or the decoder found the problem, when it says (a JpegError's offset). */
  offset?: number;
}

export interface IngestSummary {
  dataset: string;
  source: string;
  total: number;
  written: number;
  existing: number;
  errors: IngestError[];
  /** Bytes written this run. */
  bytes: number;
  /** Samples per label among those written this run. */
  perLabel: Record<number, number>;
  seconds: number;
  /** Whether every file stored this run was decoded in full first (`verify`, within `verifyUpTo`). */
  verified: boolean;
  /**
   * Stopped by `signal`: the items looked at (`written` + `existing` + `errors`) are done, and
   * the rest were not reached (some may be stored by an earlier run: ingest does not ask).
   */
  interrupted: boolean;
}

/** One sample of a source, read lazily. */
interface Item {
  key: string;
  label: number;
  path?: string;
  meta: Record<string, MetaValue>;
  load(): Promise<Uint8Array>;
}

interface Source {
  spec: Omit<DatasetSpec, "name" | "groupBy">;
  items: Item[];
}

const FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"];

export async function ingest(store: Store, source: string, opts: IngestOptions): Promise<IngestSummary> {
  const t0 = runtime.now();
  const src = await openSource(source, opts);
  const spec = validateSpec({ ...src.spec, name: opts.dataset, groupBy: opts.groupBy ?? [] });
  await store.createDataset(spec);
  const items = src.items;
  const verifier = opts.verify && items.length <= (opts.verifyUpTo ?? Infinity) ? opts.verify : undefined;
  const summary: IngestSummary = {
    dataset: opts.dataset, source, total: items.length, written: 0, existing: 0, errors: [], bytes: 0, perLabel: {}, seconds: 0,
    verified: !!verifier, interrupted: false,
  };
  const chunk = opts.chunk ?? 512;
  const signal = opts.signal;
  let done = 0;
  let stopped = false; // by `signal`, with items not looked at
  for (let start = 0; start < items.length; start += chunk) {
    // A turn of the event loop per chunk: an idx source and SQLite answer in microtasks only,
    // and a signal's handler (Ctrl-C aborting `signal`) runs between turns.
    if (start > 0) await new Promise((r) => setTimeout(r, 0));
    if (signal?.aborted) {
      stopped = true;
      break;
    }
    const part = items.slice(start, start + chunk);
    const ids = part.map((it) => sampleId(opts.dataset, it.key));
    const stored = await store.existing(opts.dataset, ids);
    const fresh = part.filter((_, i) => !stored.has(ids[i]));
    summary.existing += part.length - fresh.length;
    const loaded = await mapLimit(fresh, opts.readConcurrency ?? 16, async (it): Promise<SampleInput | undefined> => {
      // Interrupted: files not yet read are left for the re-run (not bad, not stored).
      if (signal?.aborted) return void (stopped = true);
      let data: Uint8Array;
      try {
        data = await it.load();
      } catch (e) {
        return fail(it, "it is unreadable", `cannot read: ${(e as Error).message}`);
      }
      const h = checkJpeg(data);
      if ("reason" in h) return fail(it, "it is not a valid JPEG", h.reason);
      if (verifier) {
        try {
          await verifier.decode(data);
        } catch (e) {
          const offset = (e as { offset?: unknown }).offset;
          return fail(it, "it does not decode", (e as Error).message, typeof offset === "number" ? offset : undefined, e);
        }
      }
      return { key: it.key, label: it.label, data, meta: it.meta };
    });
    const good = loaded.filter((s): s is SampleInput => s !== undefined);
    const r = await store.put(opts.dataset, good, { checked: true });
    summary.written += r.written;
    summary.existing += r.existing;
    for (const s of good) {
      summary.bytes += s.data.length;
      summary.perLabel[s.label] = (summary.perLabel[s.label] ?? 0) + 1;
    }
    if (stopped) break; // what was read is written and counted; the rest is the re-run's
    done += part.length;
    opts.onProgress?.({
      done, total: items.length, written: summary.written, existing: summary.existing, errors: summary.errors.length,
      bytes: summary.bytes, seconds: (runtime.now() - t0) / 1000,
    });
  }
  summary.interrupted = stopped;
  summary.seconds = (runtime.now() - t0) / 1000;
  return summary;

  function fail(it: Item, what: string, reason: string, offset?: number, cause?: unknown): undefined {
    if (opts.strict) {
      throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest ${it.path ?? it.key} as ${what}: ${reason} (stopped: --strict)`, { cause });
    }
    summary.errors.push({ key: it.key, path: it.path, reason, ...(offset === undefined ? {} : { offset }) });
    return undefined;
  }
}

// --- sources ---------------------------------------------------------------------------------

async function openSource(source: string, opts: IngestOptions): Promise<Source> {
  if (source.startsWith("idx:")) return idxSource(source.slice(4), opts);
  let st;
  try {
    st = statSync(source);
  } catch {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest '${source}' as it does not exist (SOURCE: a folder, idx:PATH-PREFIX, or a .jsonl/.csv manifest)`);
  }
  if (st.isDirectory()) return folderSource(source, opts);
  if (/\.(jsonl|ndjson|csv)$/i.test(source)) return manifestSource(source, opts);
  throw new CassetteError("ERR_INVALID_OPTION", `Cannot ingest '${source}' as it is neither a folder, idx:PREFIX, nor a .jsonl/.csv manifest`);
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
  for (const [i, r] of records.entries()) {
    if (typeof r.path !== "string" || !r.path) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as row ${i + 1} has no 'path'`);
    if (r.label === undefined || r.label === null || r.label === "") {
      throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot ingest manifest '${file}' as row ${i + 1} (${r.path}) has no 'label'`);
    }
  }
  // Labels: integers as they are, or class names numbered in sorted order.
  const labelsAreInts = records.every((r) => Number.isInteger(typeof r.label === "string" ? Number(r.label) : r.label));
  const classes = labelsAreInts ? undefined : [...new Set(records.map((r) => String(r.label)))].sort();
  const names = [...new Set(records.flatMap((r) => Object.keys(r)))].filter((k) => !["path", "label", "key"].includes(k));
  const columns: Column[] = names.map((name) => ({ name, type: inferType(records.map((r) => r[name])) }));
  const base = dirname(file);
  const items: Item[] = records.slice(0, opts.limit ?? Infinity).map((r) => {
    const path = isAbsolute(r.path as string) ? (r.path as string) : join(base, r.path as string);
    const meta: Record<string, MetaValue> = {};
    for (const c of columns) meta[c.name] = coerce(r[c.name], c.type);
    return {
      key: String(r.key ?? r.path),
      label: classes ? classes.indexOf(String(r.label)) : Number(r.label),
      path,
      meta,
      load: () => runtime.readFile(path),
    };
  });
  return { spec: { version: 1, columns, label: { kind: "int", classes }, origin: { source: resolve(file) } }, items };
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
