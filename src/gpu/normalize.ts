/**
 * Owner of shaders/preprocess/normalize_u8.wgsl: decoded bytes → normalized f32, per-channel
 * mean and std. The full crop/resize/mirror kernel (a later stage) builds on the same base.
 */
import code from "../../shaders/preprocess/normalize_u8.wgsl" with { type: "text" };
import { CassetteError } from "../errors.ts";
import { grid, Kernel } from "./kernel.ts";

const kernel = new Kernel({ name: "preprocess/normalize_u8", code, bindings: ["uniform", "read-only-storage", "storage"] });
const WORKGROUP = 256;

export interface NormalizeParams {
  /** Channels interleaved in the bytes (1 to 4). */
  channels: number;
  /** Per-channel mean and std in 0..1 units (as torchvision's Normalize). */
  mean: readonly number[];
  std: readonly number[];
}

/**
 * Records the conversion of `count` bytes of `src` into `dst` (f32, 4·count bytes).
 * Returns the params buffer, which the caller destroys after submitting.
 */
export async function encodeNormalize(
  device: GPUDevice,
  encoder: GPUCommandEncoder,
  src: GPUBuffer,
  dst: GPUBuffer,
  count: number,
  p: NormalizeParams,
): Promise<GPUBuffer> {
  if (!(p.channels >= 1 && p.channels <= 4) || p.mean.length !== p.channels || p.std.length !== p.channels) {
    throw new CassetteError(
      "ERR_INVALID_OPTION",
      `Cannot normalize as 'mean' and 'std' need one value per channel (1 to 4): channels ${p.channels}, mean ${p.mean.length}, std ${p.std.length}`,
    );
  }
  if (p.std.some((s) => !(s > 0))) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot normalize as every 'std' must be > 0: current value is [${p.std}]`);
  }
  const words = Math.ceil(count / 4);
  const [x, y] = grid(words, WORKGROUP);
  const params = new ArrayBuffer(48);
  new Uint32Array(params, 0, 4).set([count, p.channels, x * WORKGROUP, 0]);
  const f = new Float32Array(params, 16, 8);
  for (let c = 0; c < p.channels; c++) {
    f[c] = 1 / (255 * p.std[c]);
    f[4 + c] = -p.mean[c] / p.std[c];
  }
  const paramBuf = device.createBuffer({ size: 48, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(paramBuf, 0, params);
  await kernel.encode(device, encoder, [paramBuf, src, dst], [x, y]);
  return paramBuf;
}
