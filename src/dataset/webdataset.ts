/**
 * WebDataset shards: tar files whose entries, grouped by key, are samples.
 *
 * Reading follows webdataset's own rule (`tariterators.py`: `base_plus_ext`, `group_by_keys`):
 * an entry's key is its path up to the first dot of its basename, directory kept
 * (`a/b.c.jpg` → key `a/b`, extension `c.jpg`); consecutive entries with the same key form one
 * sample; extensions are lower-cased; a name with no dot in its basename, and webdataset's
 * meta entries (`__…__`), belong to no sample. What a sample means here: its image is its
 * `.jpg`/`.jpeg`/`.png`, its label the integer in `.cls` (else `.cls2`, else the `.json`'s
 * "label" or "cls", else `.txt`), and a `.json` "class" string names that label.
 *
 * Writing: `ShardWriter` puts samples, in the order given, into `PREFIX-000000.tar`,
 * `PREFIX-000001.tar`, … each at most `maxShardBytes` (end blocks included) and
 * `maxSamples`; a sample too large for any shard goes alone in one. Each sample is
 * `KEY.jpg` or `KEY.png` (by the bytes' signature), `KEY.cls` (the label in decimal) and
 * `KEY.json` ({"label", "class" when the dataset names it, metadata}), written with
 * tar.ts's fixed header fields, so the same samples give the same bytes. Every shard goes
 * out through `ObjectSink.put`, whole. `widsIndex` is the shard list `wids` opens.
 */
import { CassetteError } from "../errors.ts";
import type { ObjectSink } from "./object_sink.ts";
import { tarEnd, tarEntry, tarEntrySize, type TarEntry } from "./tar.ts";

// --- the key rule and samples ----------------------------------------------------------------

/** webdataset's `base_plus_ext`: (key, extension), or undefined when the basename has no dot. */
export function splitKey(name: string): { key: string; ext: string } | undefined {
  // The same expression as base_plus_ext, so odd names ("a/.b.jpg" → key "a/") group alike.
  const m = /^((?:.*\/|)[^.]+)\.([^/]*)$/.exec(name);
  return m ? { key: m[1], ext: m[2] } : undefined;
}

/** webdataset's `skip_meta`: entries such as `__meta__.json` are not samples. */
const META = /^__[^/]*__($|\/)/;

/** Entries of one key, in archive order; `problems` says what webdataset would refuse. */
export interface WdsSample {
  key: string;
  /** By lower-cased extension. */
  files: Map<string, TarEntry>;
  /** Archive offset of its first entry's header. */
  offset: number;
  problems: string[];
}

/** Groups entries, pushed in archive order, into samples (see the file's doc). */
export class SampleGrouper {
  #cur: WdsSample | undefined;

  /** Takes one entry; returns the sample it completes, if any. */
  push(e: TarEntry): WdsSample | undefined {
    if (META.test(e.name)) return undefined;
    const k = splitKey(e.name);
    if (!k) return undefined;
    const ext = k.ext.toLowerCase();
    let done: WdsSample | undefined;
    if (!this.#cur || this.#cur.key !== k.key) {
      done = this.#cur;
      this.#cur = { key: k.key, files: new Map(), offset: e.offset, problems: [] };
    }
    if (this.#cur.files.has(ext)) this.#cur.problems.push(`it has two '.${ext}' entries (${e.name} at offset ${e.offset})`);
    else this.#cur.files.set(ext, e);
    return done;
  }

  /** The last sample, at the end of the shard. */
  end(): WdsSample | undefined {
    const s = this.#cur;
    this.#cur = undefined;
    return s;
  }
}

/** A shard's samples as its entries arrive. */
export async function* groupSamples(entries: AsyncIterable<TarEntry> | Iterable<TarEntry>): AsyncGenerator<WdsSample> {
  const g = new SampleGrouper();
  for await (const e of entries) {
    const s = g.push(e);
    if (s) yield s;
  }
  const last = g.end();
  if (last) yield last;
}

export const IMAGE_EXTS = ["jpg", "jpeg", "png"];
/** Entries whose bytes tell the label (kept when a shard is scanned; images are not). */
export const LABEL_EXTS = ["cls", "cls2", "json", "txt"];

/** Whether a scan keeps the bytes of entry `name`: the small label and metadata entries only. */
export function isLabelEntry(name: string): boolean {
  const k = splitKey(name);
  return !!k && LABEL_EXTS.includes(k.ext.toLowerCase());
}

/** The sample's image entry, or why it has none usable. */
export function sampleImage(s: WdsSample): { ext: string; entry: TarEntry } | { reason: string } {
  const found = IMAGE_EXTS.filter((x) => s.files.has(x));
  if (found.length === 0) return { reason: `it has no image (.jpg, .jpeg or .png): it has ${[...s.files.keys()].map((x) => `.${x}`).join(", ")}` };
  if (found.length > 1) return { reason: `it has ${found.length} images (${found.map((x) => `.${x}`).join(", ")}): one is expected` };
  return { ext: found[0], entry: s.files.get(found[0])! };
}

/** The sample's integer label (and the class name its .json gives), or why it has none. */
export function sampleLabel(s: WdsSample): { label: number; className?: string } | { reason: string } {
  const dec = (e: TarEntry) => new TextDecoder().decode(e.data).trim();
  const int = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : typeof v === "string" && /^\d+$/.test(v.trim()) ? Number(v) : undefined);
  let meta: Record<string, unknown> | undefined;
  const json = s.files.get("json");
  if (json) {
    try {
      const v = JSON.parse(dec(json));
      if (typeof v === "object" && v !== null && !Array.isArray(v)) meta = v;
    } catch (e) {
      return { reason: `its .json is not JSON: ${(e as Error).message}` };
    }
  }
  const className = typeof meta?.class === "string" ? meta.class : undefined;
  for (const ext of ["cls", "cls2"]) {
    const e = s.files.get(ext);
    if (!e) continue;
    const v = int(dec(e));
    if (v === undefined) return { reason: `its .${ext} is not a non-negative integer: ${JSON.stringify(dec(e).slice(0, 40))}` };
    return { label: v, className };
  }
  for (const field of ["label", "cls"]) {
    if (meta?.[field] === undefined) continue;
    const v = int(meta[field]);
    if (v === undefined) return { reason: `its .json "${field}" is not a non-negative integer: ${JSON.stringify(meta[field])}` };
    return { label: v, className };
  }
  const txt = s.files.get("txt");
  const v = txt && int(dec(txt));
  if (v !== undefined) return { label: v, className };
  return { reason: "it has no label: no .cls, .cls2, .json \"label\"/\"cls\" or integer .txt" };
}

// --- shard names -------------------------------------------------------------------------------

const MAX_EXPANSION = 1_000_000;

/**
 * Expands brace patterns as webdataset (and bash) write shard lists: `{000000..000009}` (a
 * numeric range, zero-padded to its bounds' width) and `{a,b}` (alternatives), several braces
 * giving every combination, in order.
 */
export function expandBraces(pattern: string): string[] {
  const open = pattern.indexOf("{");
  if (open < 0) return [pattern];
  const close = pattern.indexOf("}", open);
  if (close < 0) throw new CassetteError("ERR_INVALID_OPTION", `Cannot expand '${pattern}' as its '{' at ${open} is not closed`);
  const head = pattern.slice(0, open), body = pattern.slice(open + 1, close);
  const tails = expandBraces(pattern.slice(close + 1));
  const range = /^(\d+)\.\.(\d+)$/.exec(body);
  let parts: string[];
  if (range) {
    const [a, b] = [Number(range[1]), Number(range[2])];
    const width = range[1].startsWith("0") || range[2].startsWith("0") ? Math.max(range[1].length, range[2].length) : 0;
    const n = Math.abs(b - a) + 1;
    if (n * tails.length > MAX_EXPANSION) throw new CassetteError("ERR_INVALID_OPTION", `Cannot expand '${pattern}' as it names more than ${MAX_EXPANSION} shards`);
    parts = Array.from({ length: n }, (_, i) => String(a <= b ? a + i : a - i).padStart(width, "0"));
  } else parts = body.split(",");
  const out: string[] = [];
  for (const p of parts) for (const t of tails) out.push(head + p + t);
  if (out.length > MAX_EXPANSION) throw new CassetteError("ERR_INVALID_OPTION", `Cannot expand '${pattern}' as it names more than ${MAX_EXPANSION} shards`);
  return out;
}

/** `PREFIX-000042.tar`. */
export function shardName(prefix: string, index: number): string {
  return `${prefix}-${String(index).padStart(6, "0")}.tar`;
}

/** Whether `name` is shard `PREFIX-NNNNNN.tar`, and which. */
export function shardIndex(prefix: string, name: string): number | undefined {
  if (!name.startsWith(`${prefix}-`)) return undefined;
  const m = /^(\d{6,})\.tar$/.exec(name.slice(prefix.length + 1));
  return m ? Number(m[1]) : undefined;
}

// --- writing -----------------------------------------------------------------------------------

/** Default shard bound: 256 MB. */
export const DEFAULT_SHARD_BYTES = 256_000_000;

export interface ShardSample {
  /** The sample's key: no '.' in its last path segment (the key rule would cut it there). */
  key: string;
  image: Uint8Array;
  label: number;
  /** Written into KEY.json after "label" (and "class" when given), in key order. */
  meta?: Record<string, unknown>;
  /** The label's name, when the dataset has a label map. */
  className?: string;
}

/** One WebDataset shard of an export: its name, samples and bytes. */
export interface ShardInfo {
  /** The shard's file name (PREFIX-NNNNNN.tar). */
  name: string;
  /** Samples it holds. */
  samples: number;
  /** Its size in bytes. */
  bytes: number;
  /** Its samples' keys, in the order written (the index lists them: a reader knows its ids without reading shards). */
  keys?: string[];
  /** Where each sample's first entry begins in the shard, in bytes (the index lists them: a reader can start a stream at any sample). */
  offsets?: number[];
}

export interface ShardWriterOptions {
  /** Shards are PREFIX-000000.tar, …: a name, no '/'. */
  prefix: string;
  /** Most bytes per shard, end blocks included (default 256 MB); a larger sample goes alone. */
  maxShardBytes?: number;
  /** Most samples per shard (default: no limit). */
  maxSamples?: number;
  /** The number of the first shard written (a resumed export starts after the ones there). */
  firstIndex?: number;
}

/** The extension for image bytes by their signature: JPEG SOI, or the PNG signature. */
export function imageExtension(b: Uint8Array): "jpg" | "png" | undefined {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "jpg";
  const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (b.length >= 8 && png.every((v, i) => b[i] === v)) return "png";
  return undefined;
}

/** A sample's tar entries, in the order written: image, .cls, .json. */
export function sampleEntries(s: ShardSample): { name: string; data: Uint8Array }[] {
  const last = s.key.slice(s.key.lastIndexOf("/") + 1);
  if (!last || last.includes(".")) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot write sample '${s.key}' to a shard as a key's last path segment must be non-empty and hold no '.'`);
  }
  const ext = imageExtension(s.image);
  if (!ext) throw new CassetteError("ERR_UNSUPPORTED", `Cannot write sample '${s.key}' to a shard as its bytes are neither a JPEG nor a PNG`);
  const json: Record<string, unknown> = { label: s.label };
  if (s.className !== undefined) json.class = s.className;
  for (const k of Object.keys(s.meta ?? {}).sort()) if (!(k in json)) json[k] = s.meta![k];
  const enc = new TextEncoder();
  return [
    { name: `${s.key}.${ext}`, data: s.image },
    { name: `${s.key}.cls`, data: enc.encode(String(s.label)) },
    { name: `${s.key}.json`, data: enc.encode(JSON.stringify(json)) },
  ];
}

/** Writes samples into size-bounded shards through `sink` (see the file's doc). */
export class ShardWriter {
  readonly #sink: ObjectSink;
  readonly #prefix: string;
  readonly #maxBytes: number;
  readonly #maxSamples: number;
  #index: number;
  #parts: Uint8Array[] = [];
  #bytes = 0;
  #samples = 0;
  #keys: string[] = [];
  #offsets: number[] = [];
  readonly written: ShardInfo[] = [];

  constructor(sink: ObjectSink, o: ShardWriterOptions) {
    const bad = (why: string): never => {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot write shards as ${why}`);
    };
    if (!o.prefix || /[/\\]/.test(o.prefix) || o.prefix.startsWith(".")) bad(`'prefix' must be a file name not starting with '.': current value is ${JSON.stringify(o.prefix)}`);
    const maxBytes = o.maxShardBytes ?? DEFAULT_SHARD_BYTES, maxSamples = o.maxSamples ?? Infinity;
    if (!(Number.isSafeInteger(maxBytes) && maxBytes > 0)) bad(`'maxShardBytes' must be a positive integer: current value is ${maxBytes}`);
    if (!(maxSamples === Infinity || (Number.isSafeInteger(maxSamples) && maxSamples > 0))) bad(`'maxSamples' must be a positive integer: current value is ${maxSamples}`);
    this.#sink = sink;
    this.#prefix = o.prefix;
    this.#maxBytes = maxBytes;
    this.#maxSamples = maxSamples;
    this.#index = o.firstIndex ?? 0;
  }

  /** Adds a sample; resolves with the shard it closed, if adding it closed one. */
  async add(s: ShardSample): Promise<ShardInfo | undefined> {
    const entries = sampleEntries(s);
    const size = entries.reduce((n, e) => n + tarEntrySize(e.name, e.data.length), 0);
    let closed: ShardInfo | undefined;
    const full = this.#samples >= this.#maxSamples || this.#bytes + size + 2 * 512 > this.#maxBytes;
    if (this.#samples > 0 && full) closed = await this.flush();
    this.#offsets.push(this.#bytes);
    for (const e of entries) this.#parts.push(tarEntry(e.name, e.data));
    this.#bytes += size;
    this.#samples++;
    this.#keys.push(s.key);
    return closed;
  }

  /** Writes the shard being filled, if it holds a sample; the next sample starts another. */
  async flush(): Promise<ShardInfo | undefined> {
    if (this.#samples === 0) return undefined;
    this.#parts.push(tarEnd());
    const out = new Uint8Array(this.#bytes + 2 * 512);
    let at = 0;
    for (const p of this.#parts) out.set(p, at), at += p.length;
    const info = { name: shardName(this.#prefix, this.#index), samples: this.#samples, bytes: out.length, keys: this.#keys, offsets: this.#offsets };
    this.#parts = [];
    this.#keys = [];
    this.#offsets = [];
    this.#bytes = 0;
    this.#samples = 0;
    await this.#sink.put(info.name, out);
    this.#index++;
    this.written.push(info);
    return info;
  }
}

/**
 * The shard index `wids` (webdataset's indexed reader) opens: URLs relative to the index file.
 * Each entry also lists its samples' `keys` in shard order, where known, so a reader knows
 * every id and its shard without reading a shard, and their `offsets` (where each sample's first
 * entry begins), so a reader can stream a shard's part from its first sample (wids reads `url`
 * and `nsamples` and ignores other fields).
 */
export function widsIndex(name: string, shards: readonly ShardInfo[]): string {
  return JSON.stringify({
    __kind__: "wids-shard-index-v1",
    wids_version: 1,
    name,
    shardlist: shards.map((s) => ({ url: s.name, nsamples: s.samples, filesize: s.bytes, ...(s.keys ? { keys: s.keys } : {}), ...(s.offsets ? { offsets: s.offsets } : {}) })),
  }, null, 1);
}

/** One shard of a wids index: its URL (relative to the index, or absolute), its sample count, and its keys and offsets when listed. */
export interface IndexedShard {
  url: string;
  nsamples: number;
  keys?: string[];
  /** Where each sample's first entry begins, in bytes (increasing), where the index lists them. */
  offsets?: number[];
}

/** A wids shard index's shards (`where` names it in errors): `url` and `nsamples` as wids reads them, `keys` when there. */
export function parseShardIndex(text: string, where: string): { name?: string; shards: IndexedShard[] } {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot read shard index ${where} as ${why}`);
  };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return bad(`it is not JSON: ${(e as Error).message}`);
  }
  const list = (v as { shardlist?: unknown } | null)?.shardlist;
  if (!Array.isArray(list)) return bad("it has no 'shardlist' array (a wids-shard-index-v1 file)");
  const shards = list.map((s: { url?: unknown; nsamples?: unknown; keys?: unknown; offsets?: unknown }, i): IndexedShard => {
    if (typeof s?.url !== "string" || !s.url) bad(`shard ${i} has no 'url': current value is ${JSON.stringify(s?.url)}`);
    if (!(Number.isSafeInteger(s.nsamples) && (s.nsamples as number) >= 0)) bad(`shard ${i}'s 'nsamples' must be a whole number: current value is ${JSON.stringify(s.nsamples)}`);
    const out: IndexedShard = { url: s.url as string, nsamples: s.nsamples as number };
    if (s.keys !== undefined) {
      if (!Array.isArray(s.keys) || !s.keys.every((k) => typeof k === "string")) bad(`shard ${i}'s 'keys' must be an array of strings`);
      if ((s.keys as string[]).length !== out.nsamples) bad(`shard ${i} lists ${(s.keys as string[]).length} keys for its ${out.nsamples} samples (nsamples)`);
      out.keys = s.keys as string[];
    }
    if (s.offsets !== undefined) {
      const o = s.offsets;
      const increasing = Array.isArray(o) && o.every((v, k) => Number.isSafeInteger(v) && v >= 0 && v % 512 === 0 && (k === 0 || v > o[k - 1]));
      if (!increasing) bad(`shard ${i}'s 'offsets' must be increasing whole numbers of 512-byte blocks`);
      if ((o as number[]).length !== out.nsamples) bad(`shard ${i} lists ${(o as number[]).length} offsets for its ${out.nsamples} samples (nsamples)`);
      out.offsets = o as number[];
    }
    return out;
  });
  const name = (v as { name?: unknown }).name;
  return { ...(typeof name === "string" ? { name } : {}), shards };
}
