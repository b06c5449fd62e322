/**
 * The weight file of a Sequential model:
 *
 *   ┌────────────┬──────────────┬─────────────────────┬─────────┬──────────────────────────┐
 *   │ "CSTWGT01" │ u32 LE: H    │ H bytes of UTF-8    │ 0…3 pad │ f32 LE values, tensor by │
 *   │ 8 bytes    │ header bytes │ JSON header         │ to 4    │ tensor, in header order  │
 *   └────────────┴──────────────┴─────────────────────┴─────────┴──────────────────────────┘
 *
 * The header names the model and lists every tensor (parameters, then state such as batch
 * norm's running statistics) with its shape and dtype, so a file loads only into a model of the
 * same architecture, and the error says which tensor differs. `normalize` (where the model's
 * `normalize` is set: train.ts sets it) is the input normalization it was trained with, which
 * predict applies. A checkpoint (checkpoint.ts) is
 * the same container with format "cassette-checkpoint": the model's tensors, the optimizer's,
 * and the run's state in its header.
 */
import { CassetteError } from "../errors.ts";

const MAGIC = "CSTWGT01";

/** What a weights container holds: a model's weights, or a whole checkpoint. */
export type WeightFormat = "cassette-weights" | "cassette-checkpoint";

/** The header of a weights file: the format, the model's spec, its tensors' names and shapes, and the input normalization. */
export interface WeightHeader {
  /** What the file holds. */
  format: WeightFormat;
  /** The container's version, 1. */
  version: 1;
  /** The model's spec (a ModelSpec). */
  model: unknown;
  /** dtype is "f32" (the only one written; files from before it was recorded have none). */
  tensors: { name: string; shape: number[]; dtype?: "f32" }[];
  /** The input normalization the model was trained with (model.ts `Normalization`); absent in older files. */
  normalize?: { mean: number[]; std: number[] };
  /** Anything else the container carries (a checkpoint's run state). */
  [more: string]: unknown;
}

export function encodeWeights(header: WeightHeader, values: Float32Array[]): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const start = Math.ceil((12 + json.length) / 4) * 4;
  const total = values.reduce((a, v) => a + v.length, 0);
  const out = new Uint8Array(start + total * 4);
  out.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(out.buffer).setUint32(8, json.length, true);
  out.set(json, 12);
  const view = new DataView(out.buffer, start);
  let at = 0;
  for (const v of values) for (let i = 0; i < v.length; i++, at += 4) view.setFloat32(at, v[i], true);
  return out;
}

export function decodeWeights(bytes: Uint8Array, where: string, format: WeightFormat = "cassette-weights"): { header: WeightHeader; values: Float32Array<ArrayBuffer>[] } {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot load weights from ${where} as ${why}`);
  };
  if (bytes.length < 12 || new TextDecoder().decode(bytes.subarray(0, 8)) !== MAGIC) bad(`it does not start with "${MAGIC}"`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = dv.getUint32(8, true);
  if (12 + len > bytes.length) bad(`its header of ${len} bytes is truncated (file is ${bytes.length} bytes)`);
  let header: WeightHeader;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len)));
  } catch {
    return bad("its header is not JSON");
  }
  if (header.format !== format || header.version !== 1) {
    bad(`its header is ${JSON.stringify(header.format)} version ${header.version}, not ${format} version 1` +
      (header.format === "cassette-checkpoint" ? " (a checkpoint: its folder is what --resume takes)" : ""));
  }
  if (!Array.isArray(header.tensors)) bad("its header lists no tensors");
  let at = Math.ceil((12 + len) / 4) * 4;
  const values = header.tensors.map((t) => {
    if ((t.dtype ?? "f32") !== "f32") bad(`tensor ${t.name} has dtype ${JSON.stringify(t.dtype)}: this cassette reads f32`);
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (at + n * 4 > bytes.length) bad(`tensor ${t.name} [${t.shape}] runs past the end of the file (${bytes.length} bytes)`);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++, at += 4) v[i] = dv.getFloat32(at, true);
    return v;
  });
  if (at !== bytes.length) bad(`${bytes.length - at} bytes follow the last tensor`);
  return { header, values };
}
