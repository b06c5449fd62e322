/**
 * Tar archives, read incrementally and written byte-reproducibly: what WebDataset shards are.
 *
 * Read: POSIX ustar (name + prefix), pax extended headers (`x`: `path`, `size`; `g` is read
 * and ignored), GNU long names (`L`; `K` long link names skipped), base-256 sizes. Regular
 * files (`0`, NUL, `7`) are returned; directories, links, devices, FIFOs and sparse files are
 * skipped. Every header's checksum is verified (unsigned sum, or the signed sum old tars
 * wrote). Two zero blocks end the archive; what follows them (GNU tar's record padding) is
 * ignored. Write: ustar, a pax `path` record for a name over 100 bytes, fixed mode, owner
 * and mtime, so the same entries give the same bytes.
 *
 *   one entry:  ┌ header 512 ┐┌ data … ┐┌ zeros to the next 512 ┐
 *   header:     name 0..100 · mode 100 · uid 108 · gid 116 · size 124..136 (octal) ·
 *               mtime 136 · chksum 148..156 · typeflag 156 · linkname 157 ·
 *               magic 257 "ustar\0" · version 263 "00" · uname 265 · gname 297 ·
 *               devmajor 329 · devminor 337 · prefix 345..500
 *   (POSIX.1-2017, pax "ustar Interchange Format" and "pax Extended Header")
 *
 * `TarReader.push(chunk)` takes chunks of any size and returns the entries they complete, so
 * a shard arriving over the network yields its files as it comes; it holds at most one
 * entry's bytes (up to `maxEntryBytes`) and one header. Errors are `TarError`s
 * (ERR_MALFORMED_INPUT, or ERR_TOO_LARGE for an entry over the limit) naming the shard and
 * the byte offset.
 */
import { CassetteError, type ErrorCode } from "../errors.ts";

export const BLOCK = 512;
/** Default largest entry kept in memory: 256 MiB. */
export const DEFAULT_MAX_ENTRY_BYTES = 256 * 1024 * 1024;
/** Pax and GNU long-name headers are small; a larger one is refused before it is buffered. */
const MAX_META_BYTES = 1024 * 1024;
const EMPTY = new Uint8Array(0);

/** A regular file of the archive. */
export interface TarEntry {
  /** Its path in the archive (pax `path` or GNU long name when present), UTF-8. */
  name: string;
  size: number;
  /** Byte offset of its own header (after any pax or long-name header) in the archive. */
  offset: number;
  /** Byte offset of its first data byte: `offset + 512`. */
  dataOffset: number;
  /** Its bytes; empty when `bodies` declined them. */
  data: Uint8Array;
}

export interface TarReaderOptions {
  /** The archive's name in errors (a path or URL). */
  shard?: string;
  /** A regular file larger than this is an error (ERR_TOO_LARGE), default 256 MiB. */
  maxEntryBytes?: number;
  /** Whether to keep a file's bytes (default: all); a declined file is returned with empty `data`. */
  bodies?: (name: string, size: number) => boolean;
}

/** A malformed or over-large archive: the shard, the byte offset and what is wrong. */
export class TarError extends CassetteError {
  readonly shard: string;
  readonly offset: number;
  readonly reason: string;
  constructor(code: ErrorCode, shard: string, offset: number, reason: string) {
    super(code, `Cannot read tar shard '${shard}' as ${reason} (offset ${offset})`);
    this.name = "TarError";
    this.shard = shard;
    this.offset = offset;
    this.reason = reason;
  }
}

/** Where the reader is: in a header, an entry's data, padding after it, or past the end blocks. */
const State = { Header: 0, Data: 1, Skip: 2, Done: 3 } as const;
type State = (typeof State)[keyof typeof State];

/** What the next header's pax or GNU records change. */
interface Pending {
  path?: string;
  size?: number;
}

/**
 * An incremental tar parser: `push` chunks as they come, `end()` at the end of the stream
 * (it throws when the archive stops inside an entry).
 */
export class TarReader {
  readonly #shard: string;
  readonly #max: number;
  readonly #bodies?: (name: string, size: number) => boolean;
  #state: State = State.Header;
  /** Bytes consumed so far: the archive offset of the next byte pushed. */
  #pos = 0;
  readonly #header = new Uint8Array(BLOCK);
  #headerFill = 0;
  #zeros = 0;
  #pending: Pending = {};
  // The entry being read.
  #kind: "file" | "pax" | "gpax" | "longname" | "skip" = "file";
  #name = "";
  #size = 0;
  #offset = 0;
  #buf: Uint8Array | null = null;
  #fill = 0;
  /** Data bytes left to read (Data) or padding/skipped bytes left (Skip). */
  #left = 0;
  #padAfter = 0;
  /** An error found after entries that `push` returned: thrown by the next call. */
  #error: unknown;

  constructor(o: TarReaderOptions = {}) {
    this.#shard = o.shard ?? "tar";
    this.#max = o.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
    this.#bodies = o.bodies;
  }

  /** Bytes consumed so far. */
  get offset(): number {
    return this.#pos;
  }

  /** Whether the two zero blocks that end the archive were read. */
  get done(): boolean {
    return this.#state === State.Done;
  }

  /**
   * Parses `chunk`; returns the entries it completes, in archive order. When the archive
   * breaks inside `chunk` after some entries, those are returned and the error is thrown by
   * the next `push` or `end`: what came before a corruption is never lost.
   */
  push(chunk: Uint8Array): TarEntry[] {
    if (this.#error) throw this.#error;
    const out: TarEntry[] = [];
    try {
      this.#parse(chunk, out);
    } catch (e) {
      if (out.length === 0) throw e;
      this.#error = e;
    }
    return out;
  }

  #parse(chunk: Uint8Array, out: TarEntry[]): void {
    let i = 0;
    while (i < chunk.length) {
      switch (this.#state) {
        case State.Done:
          this.#pos += chunk.length - i; // GNU tar pads to its record size: ignored
          return;
        case State.Header: {
          const n = Math.min(BLOCK - this.#headerFill, chunk.length - i);
          this.#header.set(chunk.subarray(i, i + n), this.#headerFill);
          this.#headerFill += n;
          i += n;
          this.#pos += n;
          if (this.#headerFill === BLOCK) {
            this.#headerFill = 0;
            this.#onHeader(this.#pos - BLOCK, out);
          }
          break;
        }
        case State.Data: {
          const n = Math.min(this.#left, chunk.length - i);
          if (this.#buf) this.#buf.set(chunk.subarray(i, i + n), this.#fill);
          this.#fill += n;
          this.#left -= n;
          i += n;
          this.#pos += n;
          if (this.#left === 0) this.#onData(out);
          break;
        }
        case State.Skip: {
          const n = Math.min(this.#left, chunk.length - i);
          this.#left -= n;
          i += n;
          this.#pos += n;
          if (this.#left === 0) this.#state = State.Header;
          break;
        }
      }
    }
  }

  /** The stream ended: throws a TarError when it ended inside a header or an entry. */
  end(): void {
    if (this.#error) throw this.#error;
    if (this.#state === State.Done) return;
    if (this.#state === State.Header) {
      const partial = this.#header.subarray(0, this.#headerFill);
      if (partial.some((b) => b !== 0)) this.#fail(this.#pos - this.#headerFill, `it ends inside a header (${this.#headerFill} of 512 bytes): truncated`);
      if (this.#pending.path !== undefined || this.#pending.size !== undefined) {
        this.#fail(this.#pos, "it ends after a pax or long-name header, before the entry it describes: truncated");
      }
      return; // no end-of-archive blocks: accepted, as GNU tar and Python's tarfile do
    }
    // Only padding is missing after a whole entry: accepted, unless a pax or long-name
    // header is still waiting for its entry.
    if (this.#state === State.Skip && this.#pending.path === undefined && this.#pending.size === undefined) return;
    const need = this.#offset + BLOCK + this.#size;
    this.#fail(this.#pos, `entry '${this.#name}' at offset ${this.#offset} needs its ${this.#size} bytes up to offset ${need}, but the shard ends: truncated`);
  }

  #fail(offset: number, reason: string, code: ErrorCode = "ERR_MALFORMED_INPUT"): never {
    throw new TarError(code, this.#shard, offset, reason);
  }

  #onHeader(at: number, out: TarEntry[]): void {
    const h = this.#header;
    if (h.every((b) => b === 0)) {
      if (++this.#zeros === 2) this.#state = State.Done;
      return;
    }
    this.#zeros = 0;
    const stored = octal(h, 148, 8);
    if (stored === undefined) this.#fail(at, `the header's checksum field is not octal: ${JSON.stringify(text(h, 148, 8))}`);
    let unsigned = 0, signed = 0;
    for (let k = 0; k < BLOCK; k++) {
      const b = k >= 148 && k < 156 ? 0x20 : h[k];
      unsigned += b;
      signed += b > 127 ? b - 256 : b;
    }
    if (stored !== unsigned && stored !== signed) {
      this.#fail(at, `the header has a bad checksum: stored ${stored.toString(8)}, computed ${unsigned.toString(8)} (octal)`);
    }
    const type = String.fromCharCode(h[156]);
    let size = this.#pending.size;
    if (size === undefined || type === "x" || type === "g" || type === "L" || type === "K") {
      const s = sizeField(h);
      if (s === undefined) this.#fail(at, `the header's size field is not octal: ${JSON.stringify(text(h, 124, 12))}`);
      size = s;
    }
    const ustar = h[257] === 0x75 && h[258] === 0x73 && h[259] === 0x74 && h[260] === 0x61 && h[261] === 0x72 && h[262] === 0; // "ustar\0": POSIX, prefix field valid
    let name = this.#pending.path;
    if (name === undefined) {
      name = decodeName(h, 0, 100);
      const prefix = ustar ? decodeName(h, 345, 155) : "";
      if (prefix) name = `${prefix}/${name}`;
    }
    this.#offset = at;
    this.#name = name;
    this.#size = size;
    this.#fill = 0;
    this.#left = size;
    this.#padAfter = (BLOCK - (size % BLOCK)) % BLOCK;
    this.#buf = null;
    if (type === "x" || type === "g" || type === "L") {
      this.#kind = type === "x" ? "pax" : type === "g" ? "gpax" : "longname";
      if (size > MAX_META_BYTES) this.#fail(at, `its ${type === "L" ? "long-name" : "pax"} header holds ${size} bytes: more than ${MAX_META_BYTES}`, "ERR_TOO_LARGE");
      this.#buf = new Uint8Array(size);
      return this.#startData(out);
    }
    this.#pending = {};
    if (type === "0" || type === "\0" || type === "7") {
      this.#kind = "file";
      if (size > this.#max) {
        this.#fail(at, `entry '${name}' has ${size} bytes: more than the limit of ${this.#max} (maxEntryBytes)`, "ERR_TOO_LARGE");
      }
      const keep = this.#bodies ? this.#bodies(name, size) : true;
      this.#buf = keep ? new Uint8Array(size) : null;
      return this.#startData(out);
    }
    // Directories, links, devices, FIFOs, GNU sparse or volume headers, long link names: skipped.
    this.#kind = "skip";
    this.#startData(out);
  }

  #startData(out: TarEntry[]): void {
    if (this.#left === 0) return this.#onData(out);
    this.#state = State.Data;
  }

  #onData(out: TarEntry[]): void {
    const data = this.#buf ?? EMPTY;
    this.#buf = null;
    switch (this.#kind) {
      case "file":
        out.push({ name: this.#name, size: this.#size, offset: this.#offset, dataOffset: this.#offset + BLOCK, data });
        break;
      case "pax":
        this.#pending = { ...this.#pending, ...this.#parsePax(data) };
        break;
      case "longname": {
        const end = data.indexOf(0);
        this.#pending = { ...this.#pending, path: new TextDecoder().decode(end < 0 ? data : data.subarray(0, end)) };
        break;
      }
    }
    this.#left = this.#padAfter;
    this.#state = this.#left > 0 ? State.Skip : State.Header;
  }

  /** pax records: "LEN key=value\n", LEN counting the whole record (POSIX pax, Extended Header). */
  #parsePax(data: Uint8Array): Pending {
    const p: Pending = {};
    let k = 0;
    while (k < data.length) {
      if (data[k] === 0) break; // some writers pad with NULs
      let sp = k;
      while (sp < data.length && data[sp] !== 0x20) sp++;
      const len = Number(new TextDecoder().decode(data.subarray(k, sp)));
      if (!Number.isInteger(len) || len <= sp - k + 1 || k + len > data.length || data[k + len - 1] !== 0x0a) {
        this.#fail(this.#offset + BLOCK + k, "a pax record has a bad length");
      }
      const rec = new TextDecoder().decode(data.subarray(sp + 1, k + len - 1));
      const eq = rec.indexOf("=");
      if (eq < 0) this.#fail(this.#offset + BLOCK + k, "a pax record has no '='");
      const key = rec.slice(0, eq), value = rec.slice(eq + 1);
      if (key === "path") p.path = value;
      else if (key === "size") {
        if (!/^\d+$/.test(value)) this.#fail(this.#offset + BLOCK + k, `the pax size record is not a decimal number: ${JSON.stringify(value)}`);
        p.size = Number(value);
      }
      k += len;
    }
    return p;
  }
}

/** An archive's entries as the chunks of `stream` arrive (a file read in pieces, an HTTP body). */
export async function* readTar(stream: AsyncIterable<Uint8Array>, o: TarReaderOptions = {}): AsyncGenerator<TarEntry> {
  const r = new TarReader(o);
  for await (const chunk of stream) yield* r.push(chunk);
  r.end();
}

/** Every regular file of a whole archive in memory. */
export function parseTar(bytes: Uint8Array, o: TarReaderOptions = {}): TarEntry[] {
  const r = new TarReader(o);
  const out = r.push(bytes);
  r.end();
  return out;
}

// --- fields ----------------------------------------------------------------------------------

function text(h: Uint8Array, at: number, len: number): string {
  return String.fromCharCode(...h.subarray(at, at + len));
}

/** A NUL-terminated name field, UTF-8. */
function decodeName(h: Uint8Array, at: number, len: number): string {
  let end = at;
  while (end < at + len && h[end] !== 0) end++;
  return new TextDecoder().decode(h.subarray(at, end));
}

/** An octal number field: optional leading spaces, digits, then NULs or spaces; undefined when not octal. */
function octal(h: Uint8Array, at: number, len: number): number | undefined {
  let k = at;
  const end = at + len;
  while (k < end && h[k] === 0x20) k++;
  let v = 0, digits = 0;
  for (; k < end && h[k] >= 0x30 && h[k] <= 0x37; k++, digits++) v = v * 8 + (h[k] - 0x30);
  for (; k < end; k++) if (h[k] !== 0 && h[k] !== 0x20) return undefined;
  return digits > 0 ? v : undefined;
}

/** The size field: octal, or GNU's base-256 (high bit of the first byte set) for large files. */
function sizeField(h: Uint8Array): number | undefined {
  if (h[124] & 0x80) {
    if (h[124] !== 0x80) return undefined; // negative
    let v = 0;
    for (let k = 125; k < 136; k++) v = v * 256 + h[k];
    return Number.isSafeInteger(v) ? v : undefined;
  }
  return octal(h, 124, 12);
}

// --- writing ---------------------------------------------------------------------------------

const MAX_OCTAL_SIZE = 8 ** 11 - 1;

/** Bytes that `tarEntry(name, data)` takes for `size` bytes of data. */
export function tarEntrySize(name: string, size: number): number {
  const nameBytes = new TextEncoder().encode(name).length;
  const pax = nameBytes > 100 ? BLOCK + padded(paxRecord("path", name).length) : 0;
  return pax + BLOCK + padded(size);
}

/** The two zero blocks that end an archive. */
export function tarEnd(): Uint8Array {
  return new Uint8Array(2 * BLOCK);
}

/**
 * One regular file as tar bytes: its header (behind a pax header carrying `path` when the
 * name is over 100 bytes), its data, zeros to the block. Mode 0644, uid/gid 0, mtime 0 and no
 * owner names, so equal input gives equal bytes.
 */
export function tarEntry(name: string, data: Uint8Array): Uint8Array {
  if (!name || name.includes("\0")) throw new CassetteError("ERR_INVALID_OPTION", `Cannot write tar entry ${JSON.stringify(name)} as a name must be non-empty and hold no NUL`);
  if (data.length > MAX_OCTAL_SIZE) throw new CassetteError("ERR_UNSUPPORTED", `Cannot write tar entry '${name}' of ${data.length} bytes: entries over 8 GiB are not supported`);
  const out = new Uint8Array(tarEntrySize(name, data.length));
  const nameBytes = new TextEncoder().encode(name);
  let at = 0;
  if (nameBytes.length > 100) {
    const rec = paxRecord("path", name);
    out.set(header(new TextEncoder().encode("././@PaxHeader"), rec.length, "x"), 0);
    out.set(rec, BLOCK);
    at = BLOCK + padded(rec.length);
  }
  out.set(header(nameBytes.subarray(0, 100), data.length, "0"), at);
  out.set(data, at + BLOCK);
  return out;
}

/** A whole archive of `entries`, end blocks included. */
export function writeTar(entries: Iterable<{ name: string; data: Uint8Array }>): Uint8Array {
  const parts = [...entries].map((e) => tarEntry(e.name, e.data));
  parts.push(tarEnd());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.length;
  return out;
}

function padded(n: number): number {
  return Math.ceil(n / BLOCK) * BLOCK;
}

/** "LEN key=value\n" where LEN counts the record's own bytes, its digits included. */
function paxRecord(key: string, value: string): Uint8Array {
  const body = new TextEncoder().encode(` ${key}=${value}\n`);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  const out = new Uint8Array(len);
  out.set(new TextEncoder().encode(String(len)));
  out.set(body, String(len).length);
  return out;
}

function header(name: Uint8Array, size: number, type: string): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const put = (at: number, s: string) => h.set(new TextEncoder().encode(s), at);
  h.set(name, 0);
  put(100, "0000644\0");
  put(108, "0000000\0");
  put(116, "0000000\0");
  put(124, size.toString(8).padStart(11, "0") + "\0");
  put(136, "00000000000\0");
  h[156] = type.charCodeAt(0);
  put(257, "ustar\0");
  put(263, "00");
  put(329, "0000000\0");
  put(337, "0000000\0");
  put(148, "        ");
  let sum = 0;
  for (const b of h) sum += b;
  put(148, sum.toString(8).padStart(6, "0") + "\0 ");
  return h;
}
