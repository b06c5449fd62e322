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
 *   ← { t: "done", packet: Packet }                              buffer transferred
 *   → { t: "close" }                                             ← { t: "closed" }
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
import { open } from "./open.ts";
import { isRetryable } from "../source/retryable.ts";
import type { ReadSource, Sample } from "./sample.ts";
import type { PixelSink } from "./decode_source.ts";
import { type DecodeOptions, type Decoder, type Image, TargetTooSmallError } from "../decode/decoder.ts";
import { META, type Packet, type ToWorker, type SerializedError } from "./worker_source.ts";

const scope = runtime.workerScope();
let source: ReadSource | undefined;
let saturated = false;
const waiting: [number, string][] = []; // [seq, id] not yet handed to the source
let head = 0;

const MIN_PACKET = 4096;

/**
 * The packet being filled: the buffer that is transferred at the flush. Images are decoded into
 * it as they arrive; one that does not fit grows it and is decoded again (a JPEG decoder names
 * the size it needs from the headers, before the scan: a misfit costs little; a PNG's is known
 * after inflating). Its size starts at the last packet's, so that a steady stream neither grows
 * nor transfers much unused room.
 */
class PacketArena implements PixelSink {
  buf = new ArrayBuffer(MIN_PACKET);
  u8 = new Uint8Array(this.buf);
  at = 0;
  /** Images that lie in the arena, by where they start. */
  readonly placed = new Map<Image, number>();

  decode(decoder: Decoder, bytes: Uint8Array, options?: DecodeOptions): Image {
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
    const buf = new ArrayBuffer(Math.max(this.at + n, Math.ceil(this.buf.byteLength * 1.5)));
    const u8 = new Uint8Array(buf);
    u8.set(this.u8.subarray(0, this.at));
    this.buf = buf;
    this.u8 = u8;
  }

  /** Hands the buffer over (to be transferred) and starts the next one as large as this one's use. */
  take(): ArrayBuffer {
    const buf = this.buf;
    const used = this.at;
    this.buf = new ArrayBuffer(Math.max(MIN_PACKET, used));
    this.u8 = new Uint8Array(this.buf);
    this.at = 0;
    this.placed.clear();
    return buf;
  }
}

const arena = new PacketArena();
/** CASSETTE_READ_INTO=0 decodes into arrays of their own, copied at the flush, as before (for A/B runs). */
const into = runtime.env("CASSETTE_READ_INTO") !== "0";

// The packet being filled: answers since the last flush.
let answers: { seq: number; s: Sample }[] = [];
let failures: SerializedError[] = [];
let flushTimer: ReturnType<typeof setTimeout> | undefined;

function serialize(seq: number, id: string, e: unknown): SerializedError {
  const err = e as { name?: string; code?: unknown; message?: string };
  return { seq, id, name: err?.name ?? "Error", code: typeof err?.code === "string" ? err.code : undefined, message: err?.message ?? String(e), retryable: isRetryable(e) };
}

function flush(): void {
  flushTimer = undefined;
  const n = answers.length;
  if (n === 0 && failures.length === 0) return;
  // The arena holds the images decoded into it; the samples' bytes and any other image (a
  // transform's) are copied in after them.
  let more = 0;
  for (const { s } of answers) more += s.data.length + (s.image && !arena.placed.has(s.image) ? s.image.data.length : 0);
  arena.reserve(more);
  const u8 = arena.u8;
  const meta = new Int32Array(n * META);
  const conns: string[] = [];
  const connIndex = new Map<string, number>();
  let at = arena.at;
  for (let i = 0; i < n; i++) {
    const { seq, s } = answers[i];
    const m = i * META;
    meta[m] = seq;
    meta[m + 1] = s.label;
    u8.set(s.data, at);
    meta[m + 2] = at;
    meta[m + 3] = s.data.length;
    at += s.data.length;
    let c = -1;
    if (s.conn !== undefined) {
      c = connIndex.get(s.conn) ?? -1;
      if (c < 0) connIndex.set(s.conn, (c = conns.push(s.conn) - 1));
    }
    meta[m + 4] = c;
    const img = s.image;
    if (img) {
      let p = arena.placed.get(img);
      if (p === undefined) {
        u8.set(img.data, at);
        p = at;
        at += img.data.length;
      }
      meta[m + 5] = p;
      meta[m + 6] = img.width;
      meta[m + 7] = img.height;
      meta[m + 8] = img.channels;
      meta[m + 9] = img.orientation;
    }
  }
  arena.at = at;
  const buf = arena.take();
  const packet: Packet = { meta, conns, buf, errors: failures };
  answers = [];
  failures = [];
  scope.postMessage({ t: "done", packet }, [buf]);
}

function answered(seq: number, id: string, err: Error | null, s?: Sample): void {
  if (err || !s) failures.push(serialize(seq, id, err ?? new Error(`no answer for ${id}`)));
  else if (s.target) failures.push(serialize(seq, id, new CassetteError("ERR_UNSUPPORTED", `Cannot read sample ${id} of ${source?.name} in a read worker as its label is not one integer (a ${s.target instanceof Float32Array ? "float vector" : "blob"}): the workers' packets carry one integer a sample; read it with workers: 0 (decodeWorkers still decode off the loader's thread)`)));
  else answers.push({ seq, s });
  // One packet per event-loop turn: every answer that a socket read completed goes together.
  flushTimer ??= setTimeout(flush, 0);
}

function pump(): void {
  while (source && !saturated && head < waiting.length) {
    const [seq, id] = waiting[head++];
    if (!source.fetch(id, (err, s) => answered(seq, id, err, s))) saturated = true;
  }
  if (head > 1024 && head * 2 > waiting.length) waiting.splice(0, head), head = 0;
}

scope.onMessage(async (data) => {
  const msg = data as ToWorker;
  switch (msg.t) {
    case "open":
      try {
        // The same open() as in the loader's thread, with no workers of its own.
        // Decoding and the transform run here, in this worker's thread (decodeWorkers: 0).
        const src = await open(msg.address, {
          mode: "read", dataset: msg.dataset, maxInFlight: msg.maxInFlight, balance: msg.balance, decode: msg.decode, decodeWorkers: 0,
          transform: msg.transform && { module: msg.transform.url, options: msg.transform.options }, seed: msg.seed,
          sink: into ? arena : undefined,
        });
        src.onDrain(() => {
          saturated = false;
          pump();
        });
        source = src;
        scope.postMessage({ t: "opened", name: src.name, dataset: src.dataset });
        pump();
      } catch (e) {
        scope.postMessage({ t: "failed", error: serialize(-1, "", e) });
      }
      return;
    case "fetch":
      msg.ids.split("\n").forEach((id, i) => waiting.push([msg.seqs[i], id]));
      pump();
      return;
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
