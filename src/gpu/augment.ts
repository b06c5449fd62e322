/**
 * Owner of shaders/preprocess/augment.wgsl: the preprocessing pass of a batch whose plans carry
 * augmentations (src/decode/augment.ts draws them; its NOTE [ Augmentations ] says what each op
 * does). The colour ops and the erase are fused into the pass that samples and normalizes; a
 * contrast step, which blends towards its image's mean, costs one reduction dispatch before it
 * (per contrast or autocontrast step of the longest chain: at most two).
 */
import recordCode from "../../shaders/preprocess/record.wgsl" with { type: "text" };
import sampleCode from "../../shaders/preprocess/sample.wgsl" with { type: "text" };
import warpCode from "../../shaders/preprocess/warp.wgsl" with { type: "text" };
import code from "../../shaders/preprocess/augment.wgsl" with { type: "text" };
import blurCode from "../../shaders/preprocess/blur.wgsl" with { type: "text" };
import { type AugmentPlan, MAX_MEANS, MAX_STEPS, MAX_WARPS, OP_CODES } from "../decode/augment.ts";
import type { ImagePlan } from "../decode/crop.ts";
import { grid, Kernel } from "./kernel.ts";

const BINDINGS = ["uniform", "read-only-storage", "storage", "read-only-storage", "storage"] as const;
const source = recordCode + sampleCode + warpCode + code;
const mainKernel = new Kernel({ name: "preprocess/augment", code: source, bindings: BINDINGS });
const meanKernel = new Kernel({ name: "preprocess/augment.stats", code: source, entryPoint: "stats", bindings: BINDINGS });
const combineKernel = new Kernel({ name: "preprocess/augment.combine", code: source, entryPoint: "combine", bindings: BINDINGS });
const BLUR_BINDINGS = ["uniform", "read-only-storage", "storage", "read-only-storage"] as const;
const blurAcross = new Kernel({ name: "preprocess/blur.across", code: warpCode + blurCode, entryPoint: "across", bindings: BLUR_BINDINGS });
const blurDown = new Kernel({ name: "preprocess/blur.down", code: warpCode + blurCode, entryPoint: "down", bindings: BLUR_BINDINGS });

/** Words of one image's entry in the augmentation table (warp.wgsl's AUG_WORDS). */
export const AUG_WORDS = 40;
/** Slices of one image's figures for a contrast or autocontrast step (augment.wgsl's PARTS), 64 a workgroup. */
const PARTS = 256;
/** Bytes of the per-image figures (augment.wgsl's MEANS × (PARTS + 1) × 8 per image). */
export function meanBytes(n: number): number {
  return n * MAX_MEANS * (PARTS + 1) * 8 * 4;
}

/** Whether any plan of the batch augments. */
export function augments(plans: readonly ImagePlan[]): boolean {
  return plans.some((p) => p.augment !== undefined);
}

/** Bytes of a batch's augmentation table. */
export function augmentBytes(n: number): number {
  return n * AUG_WORDS * 4;
}

/** Writes each plan's steps and erased box into `dst` (augmentBytes(n) bytes), as augment.wgsl reads them. */
export function packAugment(dst: Uint8Array, plans: readonly ImagePlan[]): void {
  const words = new Uint32Array(dst.buffer, dst.byteOffset, plans.length * AUG_WORDS);
  const floats = new Float32Array(dst.buffer, dst.byteOffset, plans.length * AUG_WORDS);
  words.fill(0);
  plans.forEach((p, i) => writeEntry(words, floats, i * AUG_WORDS, p.augment));
}

function writeEntry(words: Uint32Array, floats: Float32Array, at: number, a: AugmentPlan | undefined): void {
  if (!a) return;
  if (a.blur) {
    floats[at + 32] = a.blur.sigma;
    words[at + 33] = a.blur.kernel;
  }
  if (a.steps.length > MAX_STEPS) throw new RangeError(`an augmentation chain has ${a.steps.length} steps, more than ${MAX_STEPS}`);
  let codes = 0;
  a.steps.forEach((s, k) => {
    codes |= OP_CODES[s.op] << (4 * k);
    floats[at + 2 + k] = s.factor;
  });
  words[at] = a.steps.length;
  words[at + 1] = codes >>> 0;
  const e = a.erase;
  if (e) {
    words.set([e.x, e.y, e.w, e.h], at + 9);
    floats.set(e.value.slice(0, 3), at + 13);
  }
  const w = a.warp;
  if (w && w.ops.length) {
    if (w.ops.length > MAX_WARPS) throw new RangeError(`an augmentation has ${w.ops.length} geometric ops, more than ${MAX_WARPS}`);
    words[at + 16] = w.ops.length;
    w.ops.forEach((m, k) => floats.set(m, at + 17 + 6 * k));
    floats.set(w.fill.slice(0, 3), at + 29);
  }
}

/** Contrast and autocontrast steps of the longest chain: how many figure dispatches the batch needs. */
export function meanPasses(plans: readonly ImagePlan[]): number {
  let most = 0;
  for (const p of plans) most = Math.max(most, p.augment?.steps.filter((s) => s.op === "contrast" || s.op === "autocontrast").length ?? 0);
  return most;
}

/**
 * Records the augmented pass over `count` packed images: the mean dispatches the plans' contrast
 * steps need, then the pass itself. `params` holds the output size and scale 1 / std, bias
 * −mean / std; `constants` are the preprocessing kernel's.
 */
export async function encodeAugmented(
  device: GPUDevice, encoder: GPUCommandEncoder, buffers: { params: GPUBuffer; input: GPUBuffer; output: GPUBuffer; table: GPUBuffer; means: GPUBuffer },
  count: number, pixels: number, passes: number, constants: Record<string, number>,
): Promise<void> {
  const bound = [buffers.params, buffers.input, buffers.output, buffers.table, buffers.means];
  for (let slot = 0; slot < passes; slot++) {
    await meanKernel.encode(device, encoder, bound, [PARTS / 64, count], { ...constants, SLOT: slot });
    await combineKernel.encode(device, encoder, bound, [1, count], { ...constants, SLOT: slot });
  }
  await mainKernel.encode(device, encoder, bound, [Math.ceil(pixels / 64), count], constants);
}

/** Whether any plan of the batch blurs. */
export function blurs(plans: readonly ImagePlan[]): boolean {
  return plans.some((p) => p.augment?.blur !== undefined);
}

/**
 * Records the blur of the batch's blurring images over the augmented tensor `output` (n images
 * of `channels` × `height` × `width` in `layout`): rows into `scratch` (as large), then columns
 * back, with their erased boxes. `params` is a 32-byte uniform buffer.
 */
export async function encodeBlur(
  device: GPUDevice, encoder: GPUCommandEncoder, s: { n: number; channels: number; height: number; width: number; layout: "nchw" | "nhwc" },
  buffers: { output: GPUBuffer; scratch: GPUBuffer; table: GPUBuffer; params: GPUBuffer },
): Promise<void> {
  const groups = grid(s.n * s.channels * s.height * s.width, 64);
  device.queue.writeBuffer(buffers.params, 0, Uint32Array.of(s.n, s.channels, s.height, s.width, groups[0] * 64, 0, 0, 0));
  const constants = { NCHW: s.layout === "nchw" ? 1 : 0 };
  await blurAcross.encode(device, encoder, [buffers.params, buffers.output, buffers.scratch, buffers.table], groups, constants);
  await blurDown.encode(device, encoder, [buffers.params, buffers.scratch, buffers.output, buffers.table], groups, constants);
}

/** The augmented pass's pipelines for these constants, compiled ahead of the first batch. */
export function compileAugmented(device: GPUDevice, constants: Record<string, number>): Promise<unknown> {
  return Promise.all([mainKernel.compile(device, constants), meanKernel.compile(device, { ...constants, SLOT: 0 }), combineKernel.compile(device, { ...constants, SLOT: 0 })]);
}
