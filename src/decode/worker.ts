/**
 * Entry of a decode worker (pool.ts): one wasm decoder per worker. Messages in and out are
 * plain objects; pixel buffers travel back as transfers. The protocol:
 *
 *   → { id, bytes: Uint8Array, options }          bytes' buffer transferred in
 *   ← { ready: true }                              once, when the decoder is instantiated
 *   ← { id, ok: true, image: JpegImage }           image.data's buffer transferred out
 *   ← { id, ok: false, error: SerializedError }    the JpegError (or other) as plain fields
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { createJpegDecoder } from "./jpeg.ts";
import type { DecodeRequest, DecodeReply } from "./pool.ts";

const scope = runtime.workerScope();
const decoder = createJpegDecoder();
// Listen at once: messages that arrive while the wasm instantiates wait on the promise.
scope.onMessage(async (data) => {
  const req = data as DecodeRequest;
  const jpeg = await decoder;
  let reply: DecodeReply;
  try {
    const image = jpeg.decode(req.bytes, req.options);
    reply = { id: req.id, ok: true, image };
    scope.postMessage(reply, [image.data.buffer]);
    return;
  } catch (e) {
    const err = e as { name?: string; code?: string; reason?: string; offset?: number; message?: string };
    reply = { id: req.id, ok: false, error: { name: err.name ?? "Error", code: err.code, reason: err.reason, offset: err.offset, message: err.message ?? String(e) } };
  }
  scope.postMessage(reply);
});
decoder.then(() => scope.postMessage({ ready: true }), (e) => scope.postMessage({ ready: false, message: String(e) }));
