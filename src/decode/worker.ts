/**
 * Entry of a decode worker (pool.ts): one wasm decoder per worker, and the pool's transform
 * module when it has one. Messages in and out are plain objects; pixel buffers travel back as
 * transfers. The protocol:
 *
 *   → { t: "setup", index, claims, base, transform?, seed }    first, once
 *   ← { ready: true }  or  { ready: false, message }             decoder (and transform) loaded
 *   → { id, slot, bytes, options, decode?, sample? }             bytes' buffer transferred in
 *   ← { id, ok: true, image?, ms, gpuRefused? }                  image.data's buffer (a DCT image's arrays', a scan's) transferred out
 *   ← { id, ok: false, error, ms }                               the JpegError (or other) as plain fields
 *
 * A job with a claim slot is started only if this worker wins its claim (NOTE [ Slow lane ]
 * in pool.ts): one the pool took back is dropped without an answer.
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { rng } from "../plan/rng.ts";
import { type DctImage, decodeForRead, type DecodeOptions, type GpuReadCounts, type Image, isDctImage, TargetTooSmallError } from "./decoder.ts";
import { isJpegScan, type JpegScan } from "./jpeg_scan.ts";
import { CassetteError } from "../errors.ts";
import type { JpegImage } from "./jpeg.ts";
import type { Decoder } from "./decoder.ts";
import { createAutoDecoder } from "./decoders.ts";
import { type DecodeReply, type DecodeRequest, type PoolMessage, RUNNING, type TakenBackReply } from "./pool.ts";
import { checkTransformed, loadTransform, type TransformContext, type TransformFn } from "./transform.ts";

const scope = runtime.workerScope();
let claims: Int32Array | undefined;
let base = 0;
let transform: { fn: TransformFn; url: string; options?: unknown } | undefined;
let ctx: TransformContext | undefined;
// JPEG or PNG, by each sample's first bytes.
let images: Decoder | undefined;
let setup: Promise<void> | undefined;

async function init(msg: Extract<PoolMessage, { t: "setup" }>): Promise<void> {
  claims = new Int32Array(msg.claims);
  base = msg.base;
  const decoder = await createAutoDecoder();
  images = decoder;
  const r = rng(msg.seed, msg.index);
  ctx = { decode: (bytes, options) => decoder.decode(bytes, options), random: () => r.next() };
  if (msg.transform) transform = { fn: await loadTransform(msg.transform.url), url: msg.transform.url, options: msg.transform.options };
}

// Listen at once: jobs that arrive while the set-up loads wait on its promise.
scope.onMessage(async (data) => {
  const msg = data as PoolMessage;
  if (msg.t === "setup") {
    setup = init(msg);
    setup.then(() => scope.postMessage({ ready: true }), (e) => scope.postMessage({ ready: false, message: (e as Error)?.message ?? String(e) }));
    return;
  }
  await setup;
  const req = msg;
  if (req.slot >= 0) {
    // Stamp the start before claiming: once the pool sees RUNNING, the stamp is this job's.
    if (Atomics.load(claims!, req.slot * 2) !== req.id) return takenBack(req); // taken back
    Atomics.store(claims!, req.slot * 2 + 1, Math.floor(performance.timeOrigin + performance.now() - base));
    if (Atomics.compareExchange(claims!, req.slot * 2, req.id, RUNNING) !== req.id) return takenBack(req);
  }
  const t0 = performance.now();
  // The request's buffer goes back with the answer (NOTE [ Job buffers ], pool.ts); not past a transform, whose code may keep its input.
  const back = transform ? {} : spare(req.bytes);
  const spares = back.spare ? [back.spare] : [];
  let reply: DecodeReply;
  // A refusal of the GPU decode is counted by the pool, from the answer (an error's too).
  const counts: GpuReadCounts = { gpuRefused: 0 };
  const refused = () => (counts.gpuRefused ? { gpuRefused: true as const } : {});
  try {
    let intoOut = false;
    let image: Image | DctImage | JpegScan | undefined;
    if (req.decode === false) image = undefined;
    else if (req.outBytes !== undefined) ({ image, intoOut } = decodeOwn(images!, req.bytes, req.options, req.out, req.outBytes));
    else image = decodeForRead(images!, req.bytes, req.options, counts);
    if (image && isJpegScan(image)) {
      if (transform) throw new CassetteError("ERR_UNSUPPORTED", "a transform takes pixels, and the GPU decode leaves a JPEG's scan for the GPU");
      // The scan's file is the request's bytes: their buffer goes with it, not back as a spare.
      reply = { id: req.id, ok: true, image, ms: performance.now() - t0 };
      scope.postMessage(reply, scanBuffers(image));
      return;
    }
    if (image && isDctImage(image)) {
      if (transform) throw new CassetteError("ERR_UNSUPPORTED", "a transform takes pixels, and the hybrid decode leaves DCT blocks for the GPU");
      reply = { id: req.id, ok: true, image, ms: performance.now() - t0, ...back, ...refused() };
      scope.postMessage(reply, [...dctBuffers(image), ...spares]);
      return;
    }
    if (transform) {
      const s = req.sample ?? { id: String(req.id), label: -1 };
      let out = transform.fn({ id: s.id, label: s.label, data: req.bytes, image }, transform.options, ctx!);
      if (out instanceof Promise) out = await out;
      image = checkTransformed(out, s.id, transform.url);
    }
    reply = { id: req.id, ok: true, image: image as JpegImage | undefined, ms: performance.now() - t0, ...back, ...(intoOut ? { intoOut: true as const } : {}), ...refused() };
    // A transform may answer a view into a larger buffer (or the input itself): send only its
    // pixels. Pixels decoded here into a buffer with room to spare go with their buffer (NOTE [ Image buffers ]).
    if (transform && image && (image.data.byteOffset !== 0 || image.data.byteLength !== image.data.buffer.byteLength)) image.data = image.data.slice();
    scope.postMessage(reply, [...(image ? [image.data.buffer as ArrayBuffer] : []), ...spares]);
    return;
  } catch (e) {
    const err = e as { name?: string; code?: string; reason?: string; offset?: number; message?: string };
    reply = { id: req.id, ok: false, error: { name: err.name ?? "Error", code: err.code, reason: err.reason, offset: err.offset, message: err.message ?? String(e) }, ms: performance.now() - t0, ...back, ...refused() };
  }
  scope.postMessage(reply, spares);
});

/** A job another worker has now, not started here (a transform never saw its bytes): its buffers go back to the pool for later jobs (NOTE [ Job buffers ], NOTE [ Image buffers ]). */
function takenBack(req: DecodeRequest): void {
  const reply: TakenBackReply = { id: req.id, takenBack: true, ...spare(req.bytes), ...(req.out ? { out: req.out } : {}) };
  scope.postMessage(reply, [...(reply.spare ? [reply.spare] : []), ...(reply.out ? [reply.out] : [])]);
}

/**
 * Pixels into `out`, a buffer a released batch gave back (NOTE [ Image buffers ], pool.ts), or
 * when it is missing or too small into a new one with room for `room` bytes (the pool's recent
 * largest image): the image is a view of its buffer's first bytes.
 */
function decodeOwn(decoder: Decoder, bytes: Uint8Array, options: DecodeOptions | undefined, out: ArrayBuffer | undefined, room: number): { image: Image; intoOut: boolean } {
  let target = new Uint8Array(out ?? new ArrayBuffer(0));
  for (;;) {
    try {
      const r = decoder.decodeInto(bytes, target, 0, options);
      const image: Image = { width: r.width, height: r.height, channels: r.channels, orientation: r.orientation, data: target.subarray(0, r.bytes) as Uint8Array<ArrayBuffer> };
      return { image, intoOut: out !== undefined && target.buffer === out };
    } catch (e) {
      // Thrown before any pixel is written, with what the image needs.
      if (!(e instanceof TargetTooSmallError) || target.byteLength >= e.needed) throw e;
      const n = Math.max(e.needed, room);
      target = new Uint8Array(new ArrayBuffer(n + (n >> 3)));
    }
  }
}

/** The request's buffer, to go back to the pool (the decoders copy what they read into wasm memory and keep no view of it). */
function spare(bytes: Uint8Array): { spare?: ArrayBuffer } {
  return bytes.buffer instanceof ArrayBuffer && bytes.buffer.byteLength > 0 ? { spare: bytes.buffer } : {};
}

/** A scan's large arrays' buffers, to transfer: its data and intervals (each its own, made by the unstuffing) and its file's (the request's bytes). */
function scanBuffers(scan: JpegScan): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const a of [scan.entropy, scan.intervals, scan.file]) if (a.buffer instanceof ArrayBuffer && a.buffer.byteLength > 0) out.add(a.buffer);
  return [...out];
}

/** A DCT image's arrays' buffers, each its own (decodeCoefficients copies them out of wasm memory), to transfer. */
function dctBuffers(img: DctImage): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const c of img.components) out.add(c.quant.buffer as ArrayBuffer).add(c.coefficients.buffer as ArrayBuffer);
  return [...out];
}
