/**
 * The preprocessing plan's tensor made on the CPU: the same crop, mirror, antialiased resize,
 * grey↔RGB and normalization as the GPU pass (shaders/preprocess/crop_resize_normalize.wgsl,
 * src/gpu/preprocess.ts), from the same plans (`planImage`: seed, epoch, sample id), for a
 * machine or a run without a GPU, and for loaders compared tensor for tensor with the Python
 * peers (bench/peers.bench.ts). One plan, two executors: a batch gives the same tensor on
 * either, within f32 rounding (the tests compare them, and both with test/reference/preprocess.ts).
 *
 *   images (whole, or boxes cut by a planned decode) ──► planBatch ──► rows resampled across ──► down ──► normalized f32
 *
 * The resampling is separable, as the kernel's weights are: each output column's taps and
 * weights are computed once per batch image, the rows a box reads are resampled across once,
 * then each output pixel sums its column of those.
 *
 * @example
 * ```ts
 * import { cpuTensor } from "cassette/decode";
 * // A 4×2 grey ramp to 2×1: pixels / 255, no crop, no normalization.
 * const img = { width: 4, height: 2, channels: 1, data: Uint8Array.of(0, 50, 100, 150, 0, 50, 100, 150) };
 * const t = cpuTensor([img], { width: 2, height: 1, channels: 1 });
 * console.log(t.shape.join("×"), Array.from(t.data, (v) => v.toFixed(3)).join(" ")); // 1×1×1×2 0.098 0.490
 * ```
 */
import { CassetteError } from "../errors.ts";
import { type DctImage, isDctImage } from "./decoder.ts";
import { readDct } from "./dct.ts";
import { isJpegScan, type JpegScan } from "./jpeg_scan.ts";
import { readScanRecord } from "./scan_record.ts";
import { type FrameBox, type ImagePlan, isRandom, planImage, type PlanOptions, type SampleKey } from "./crop.ts";
import { type TensorExports, tensorWasm } from "./tensor_module.ts";
import { applyAugment, checkAugment } from "./augment.ts";
import { batchMix, type BatchMixPlan, mixTensor } from "./mix.ts";

/** What becomes of each image: output size, crop and flip (PlanOptions), channels, layout, normalization, antialiasing. */
export interface TensorOptions extends PlanOptions {
  /** Output channels: 3 (gray input is repeated) or 1 (RGB input becomes BT.601 luma). Default 3. */
  channels?: 1 | 3;
  /** Tensor layout, default "nchw". */
  layout?: "nchw" | "nhwc";
  /** Per-output-channel mean in 0..1 units (torchvision's Normalize); default 0. */
  mean?: readonly number[];
  /** Per-output-channel std in 0..1 units (torchvision's Normalize); default 1. */
  std?: readonly number[];
  /** Shrink factor past which resampling widens into the antialiased triangle filter (default 2). */
  antialiasAbove?: number;
}

/** The epoch and ids of a batch: with the seed they fix every random choice. */
export interface BatchPlanOptions {
  /** Epoch of the batch (default 0). */
  epoch?: number;
  /** One id per image (sample UUIDs); required when the policy is random. */
  ids?: readonly SampleKey[];
  /** One class per image: with `augment.mix`, the batch is mixed and its targets come out. */
  labels?: ArrayLike<number>;
  /** How many classes (the targets' width), with `labels`. */
  classes?: number;
}

/** An image's shape, and its frame where it is a box of a larger image (a planned decode). */
export interface PlannedShape {
  /** Width in pixels. */
  width: number;
  /** Height in pixels. */
  height: number;
  /** Where these pixels lie in the image they were cut from (the plan is drawn on its size). */
  frame?: FrameBox;
}

/**
 * The plan of each image of a batch: drawn on the image's size, or on its frame's where it is a
 * box of a larger image (the box then in the frame's pixels, as the whole image's would be).
 * The GPU's `Preprocessor.plan` and `cpuTensor` both plan here.
 */
export function planBatch(shapes: readonly PlannedShape[], options: PlanOptions, run: BatchPlanOptions = {}): ImagePlan[] {
  if (isRandom(options) && (!run.ids || run.ids.length !== shapes.length)) {
    throw new CassetteError(
      "ERR_INVALID_OPTION",
      `Cannot plan random crops or flips as 'ids' must give one sample id per image: current value is ${run.ids ? `${run.ids.length} ids for ${shapes.length} images` : "undefined"}`,
    );
  }
  return shapes.map((s, i) => planImage(s.frame?.width ?? s.width, s.frame?.height ?? s.height, options, run.epoch ?? 0, run.ids?.[i] ?? i));
}

/**
 * Checks tensor options, naming what is wrong (`what`: e.g. "create a preprocessor").
 */
export function checkTensorOptions(o: TensorOptions, what: string): void {
  const bad = (why: string, value: unknown): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot ${what} as ${why}: current value is ${JSON.stringify(value)}`);
  };
  if (typeof o !== "object" || o === null) bad("the options must be an object", o);
  for (const k of ["width", "height"] as const) {
    if (!(Number.isInteger(o[k]) && o[k] >= 1 && o[k] <= 65535)) bad(`'${k}' must be an integer from 1 to 65535`, o[k]);
  }
  const channels = o.channels ?? 3;
  if (channels !== 1 && channels !== 3) bad("'channels' must be 1 or 3", channels);
  if (o.layout !== undefined && o.layout !== "nchw" && o.layout !== "nhwc") bad("'layout' must be \"nchw\" or \"nhwc\"", o.layout);
  if (o.mean !== undefined && o.mean.length !== channels) bad(`'mean' must have one value per output channel (${channels})`, o.mean);
  if (o.std !== undefined && (o.std.length !== channels || o.std.some((s) => !(s > 0)))) bad(`'std' must have ${channels} values > 0`, o.std);
  if (o.flip !== undefined && !(o.flip >= 0 && o.flip <= 1)) bad("'flip' must be a probability from 0 to 1", o.flip);
  const crop = o.crop;
  if (crop?.kind === "random-resized") {
    const [s0, s1] = crop.scale ?? [0.08, 1];
    const [r0, r1] = crop.ratio ?? [3 / 4, 4 / 3];
    if (!(s0 > 0 && s0 <= s1 && s1 <= 1)) bad("'crop.scale' must be [lo, hi] with 0 < lo ≤ hi ≤ 1", crop.scale);
    if (!(r0 > 0 && r0 <= r1)) bad("'crop.ratio' must be [lo, hi] with 0 < lo ≤ hi", crop.ratio);
  } else if (crop?.kind === "center") {
    if (crop.resize !== undefined && !(Number.isInteger(crop.resize) && crop.resize >= 1)) bad("'crop.resize' must be a positive integer", crop.resize);
  } else if (crop !== undefined && crop.kind !== "resize") {
    bad("'crop.kind' must be \"resize\", \"center\" or \"random-resized\"", (crop as { kind: unknown }).kind);
  }
  if (o.antialiasAbove !== undefined && !(o.antialiasAbove >= 1)) bad("'antialiasAbove' must be ≥ 1", o.antialiasAbove);
  checkAugment(o.augment, what, channels);
}

/** A decoded image as the tensor reads it: u8 pixels, interleaved, from `offset` (default 0) of `data`. */
export interface TensorImage extends PlannedShape {
  /** The pixels, HWC, rows unpadded (a buffer of several images with `offset`). */
  data: Uint8Array;
  /** 1 (grey), 3 (RGB) or 4 (RGBA: alpha is ignored). */
  channels: number;
  /** Where the image's first byte is in `data` (a batch's images in one buffer). */
  offset?: number;
}

/**
 * A batch's images already in one buffer (a Loader batch's `images`, made by read workers):
 * image i is `pixels[at[i] …]`, width·height·channels bytes, `at[i]` a multiple of 4. The GPU
 * packs it with one copy (src/gpu/pack.ts); the CPU's tensor reads it in place.
 */
export interface PackedImages {
  /** Every image's pixels, one after another. */
  pixels: Uint8Array;
  /** Where each image's pixels begin in `pixels`. */
  at: ArrayLike<number>;
  /** Each image's width in pixels. */
  width: ArrayLike<number>;
  /** Each image's height in pixels. */
  height: ArrayLike<number>;
  /** Each image's channels. */
  channels: ArrayLike<number>;
  /** Where each image lies in the image it was cut from (`DecodedImage.frame` by columns; frameWidth 0: whole). */
  frameX?: ArrayLike<number>;
  /** The box's top row in its frame. */
  frameY?: ArrayLike<number>;
  /** The frame's width (0: the image is whole). */
  frameWidth?: ArrayLike<number>;
  /** The frame's height. */
  frameHeight?: ArrayLike<number>;
  /** Bytes of image i's DCT record at `at[i]` (the hybrid decode, src/decode/dct.ts), for the GPU to finish; 0: pixels. */
  dctBytes?: ArrayLike<number>;
  /** Bytes of image i's scan record at `at[i]` (the GPU decode, src/decode/scan_record.ts), for the GPU to decode; 0: not one. */
  scanBytes?: ArrayLike<number>;
}

/** Whether any image of the table is a DCT record (the hybrid decode) rather than pixels. */
export function hasDct(t: PackedImages): boolean {
  return anyOf(t.dctBytes);
}

/** Whether any image of the table is a scan record (the GPU decode, `decode: "gpu"`). */
export function hasScan(t: PackedImages): boolean {
  return anyOf(t.scanBytes);
}

/** Whether any image of the table is a record (DCT blocks or a scan) for the GPU to finish, rather than pixels. */
export function hasRecords(t: PackedImages): boolean {
  return hasDct(t) || hasScan(t);
}

function anyOf(lengths: ArrayLike<number> | undefined): boolean {
  if (lengths) for (let i = 0; i < lengths.length; i++) if (lengths[i]) return true;
  return false;
}

/** A table's images as a list, no pixel copied: views of its pixels (with their frames), or its records read as DCT images and scan images. */
export function tableImages(t: PackedImages): (TensorImage | DctImage | JpegScan)[] {
  return Array.from({ length: t.at.length }, (_, i) => {
    const len = t.dctBytes?.[i];
    if (len) return readDct(t.pixels, t.at[i], len);
    const scan = t.scanBytes?.[i];
    if (scan) return readScanRecord(t.pixels, t.at[i], scan);
    const s = tableShape(t, i);
    return { ...s, data: t.pixels.subarray(t.at[i], t.at[i] + s.width * s.height * s.channels) };
  });
}

/** Image i of a table's shape, with its frame where it is a box of one. */
export function tableShape(t: PackedImages, i: number): { width: number; height: number; channels: number; frame?: FrameBox } {
  const s: { width: number; height: number; channels: number; frame?: FrameBox } = { width: t.width[i], height: t.height[i], channels: t.channels[i] };
  const fw = t.frameWidth?.[i];
  if (fw) s.frame = { x: t.frameX![i], y: t.frameY![i], width: fw, height: t.frameHeight![i] };
  return s;
}

/** Whether `x` is a PackedImages table rather than a list of images. */
export function isPackedImages(x: unknown): x is PackedImages {
  return typeof x === "object" && x !== null && !Array.isArray(x) && "pixels" in x && "at" in x;
}

/** A batch's tensor on the CPU. */
export interface CpuTensor {
  /** The values, laid out as `shape` says. */
  data: Float32Array;
  /** [n, c, h, w] or [n, h, w, c]. */
  shape: [number, number, number, number];
  /** The tensor's layout. */
  layout: "nchw" | "nhwc";
  /** What was done to each image (boxes in the frame's pixels). */
  plans: ImagePlan[];
  /** With `augment.mix` and the batch's labels: how the batch was mixed. */
  mix?: BatchMixPlan;
  /** With `augment.mix`: the mixed labels, n × classes. */
  targets?: Float32Array<ArrayBuffer>;
}

/** The images of a list or of a table, one at a time, without copying pixels. */
function imagesOf(images: readonly TensorImage[] | PackedImages): TensorImage[] {
  const scan = isPackedImages(images) ? hasScan(images) : images.some((img) => isJpegScan(img));
  if (scan) throw new CassetteError("ERR_UNSUPPORTED", "Cannot make a tensor on the CPU of a JPEG's scan (the GPU decode, `decode: \"gpu\"`): the GPU preprocessor decodes it; decode to pixels for the CPU");
  const dct = isPackedImages(images) ? hasDct(images) : images.some((img) => isDctImage(img));
  if (dct) throw new CassetteError("ERR_UNSUPPORTED", "Cannot make a tensor on the CPU of DCT blocks (the hybrid decode, `decode: \"hybrid\"`): the GPU preprocessor finishes them; decode to pixels for the CPU");
  if (!isPackedImages(images)) return images as TensorImage[];
  return Array.from({ length: images.at.length }, (_, i) => ({ ...tableShape(images, i), data: images.pixels, offset: images.at[i] }));
}

/**
 * The batch's tensor, made here: each image planned (`planBatch`) and resampled as the GPU
 * kernel does. `out`, when given, receives the values (it must hold n·c·h·w); else a new array.
 */
export function cpuTensor(
  images: readonly TensorImage[] | PackedImages, options: TensorOptions, run: BatchPlanOptions = {}, out?: Float32Array,
): CpuTensor {
  checkTensorOptions(options, "make a tensor");
  const list = imagesOf(images);
  const n = list.length;
  if (n < 1) throw new CassetteError("ERR_INVALID_OPTION", "Cannot make a tensor of no images: give at least one");
  const { width: W, height: H } = options;
  const C = options.channels ?? 3, layout = options.layout ?? "nchw";
  const size = n * C * W * H;
  if (out && out.length < size) throw new CassetteError("ERR_INVALID_OPTION", `Cannot make the tensor in 'out' as the batch needs ${size} values: current value is ${out.length}`);
  const data = out ?? new Float32Array(size);
  list.forEach(checkImage);
  const plans = planBatch(list, options, run);
  const mixed = batchMix(options, run, n);
  // Per channel: scale (lanes 0-3), then bias (lanes 4-7), as wasm/tensor's `down` reads them.
  const norm = new Float32Array(8);
  for (let c = 0; c < C; c++) {
    const std = options.std?.[c] ?? 1;
    norm[c] = 1 / (255 * std);
    norm[4 + c] = -(options.mean?.[c] ?? 0) / std;
  }
  const aa = options.antialiasAbove ?? 2;
  // A sample with colour ops or an erase is resampled to [0, 1] first, then augmented and
  // normalized (augment.ts), as the GPU's augment pass does.
  const raw = Float32Array.of(1 / 255, 1 / 255, 1 / 255, 1 / 255, 0, 0, 0, 0);
  const mean = options.mean ?? [], std = options.std ?? [];
  for (let i = 0; i < n; i++) {
    const base = i * C * W * H, aug = plans[i].augment;
    if (aug?.warp) resampleWarped(list[i], plans[i], W, H, C, layout, aa, data, base);
    else resampleOne(list[i], plans[i], W, H, C, layout, aa, aug ? raw : norm, data, base);
    if (aug) applyAugment(data, base, W, H, C, layout, aug, mean, std);
  }
  const shape: [number, number, number, number] = layout === "nchw" ? [n, C, H, W] : [n, H, W, C];
  if (!mixed) return { data, shape, layout, plans };
  mixTensor(mixed.plan, data.subarray(0, size), shape, layout);
  return { data, shape, layout, plans, mix: mixed.plan, targets: mixed.targets };
}

/** Image `i`'s shape and bytes, named when wrong (the GPU's packing says the same: src/gpu/pack.ts). */
function checkImage(img: TensorImage, i: number): void {
  const bad = (why: string): never => {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot make a tensor of image ${i} as ${why}`);
  };
  if (!(Number.isInteger(img.width) && img.width >= 1 && Number.isInteger(img.height) && img.height >= 1)) {
    bad(`its width and height must be positive integers: current value is ${img.width}×${img.height}`);
  }
  if (img.channels !== 1 && img.channels !== 3 && img.channels !== 4) bad(`'channels' must be 1, 3 or 4: current value is ${img.channels}`);
  const n = img.width * img.height * img.channels, off = img.offset ?? 0;
  if (!(img.data instanceof Uint8Array) || off < 0 || img.data.length - off < n) {
    bad(`its data must hold width·height·channels = ${n} bytes from ${off}: current value is ${img.data?.length} bytes`);
  }
}

/** One axis's taps: for output o, source pixels [lo[o], lo[o] + count[o]) with weights w[start[o]…], already divided by their sum. */
interface Taps {
  lo: Int32Array;
  count: Int32Array;
  start: Int32Array;
  w: Float32Array;
}

/**
 * The kernel's `axis` and `weight` (crop_resize_normalize.wgsl) for every output index of one
 * axis: t = crop0 + (o + ½)·s − ½, support r = 1, or s past `aa`, taps j with |j − t| < r within
 * the pixels held [origin, origin + n − 1], weights 1 − |j − t| / r normalized; a box wholly
 * outside repeats the nearest edge pixel. In f32, as the kernel reckons t, s and r.
 */
function taps(outLen: number, crop0: number, cropLen: number, n: number, origin: number, aa: number, mirror: boolean): Taps {
  const f = Math.fround;
  const s = f(f(cropLen) / outLen);
  const r = s > aa ? s : 1;
  const first = origin, last = origin + n - 1;
  const lo = new Int32Array(outLen), count = new Int32Array(outLen), start = new Int32Array(outLen);
  // At most 2r + 1 taps an output: |j − t| < r.
  const w = new Float32Array(outLen * (Math.ceil(2 * r) + 1));
  let k = 0;
  for (let o = 0; o < outLen; o++) {
    const oo = mirror ? outLen - 1 - o : o;
    const t = f(f(f(crop0) + f(f(oo + 0.5) * s)) - 0.5);
    let a = Math.max(Math.floor(f(t - r)) + 1, first);
    let b = Math.min(Math.ceil(f(t + r)) - 1, last);
    start[o] = k;
    if (a > b) {
      a = b = Math.min(Math.max(Math.round(t), first), last);
      w[k++] = 1;
    } else {
      let sum = 0;
      for (let j = a; j <= b; j++) sum += Math.max(0, 1 - Math.abs(j - t) / r);
      for (let j = a; j <= b; j++) w[k++] = Math.max(0, 1 - Math.abs(j - t) / r) / sum;
    }
    lo[o] = a - origin;
    count[o] = b - a + 1;
  }
  return { lo, count, start, w: w.subarray(0, k) };
}

/**
 * One image into `dst` at `base`, by wasm/tensor: the rows the box reads copied in, resampled
 * across (one pixel's channels in a v128, f32 as the kernel's sums), each output row summed
 * down from those rows and normalized into the layout, the result copied out.
 */
function resampleOne(
  img: TensorImage, p: ImagePlan, W: number, H: number, C: number, layout: "nchw" | "nhwc", aa: number,
  norm: Float32Array, dst: Float32Array, base: number,
): void {
  const xs = taps(W, p.x, p.w, img.width, img.frame?.x ?? 0, aa, p.mirror);
  const ys = taps(H, p.y, p.h, img.height, img.frame?.y ?? 0, aa, false);
  let rowLo = img.height, rowHi = -1;
  for (let o = 0; o < H; o++) {
    rowLo = Math.min(rowLo, ys.lo[o]);
    rowHi = Math.max(rowHi, ys.lo[o] + ys.count[o] - 1);
  }
  const ic = img.channels, stride = img.width * ic, rows = rowHi - rowLo + 1, size = C * W * H;
  const m = tensorWasm();
  m.reset();
  // One readable byte past the last pixel: `across` reads a 3-channel pixel as 4 bytes.
  const src = m.alloc(rows * stride + 4), xt = placeTaps(m, xs), yt = placeTaps(m, ys);
  const mid = m.alloc((rows + 1) * W * 16), out = m.alloc(size * 4 + 16), nm = m.alloc(32), acc = m.alloc(W * 16);
  if (!out || !nm || !acc) throw new CassetteError("ERR_RUNTIME", `Cannot make the tensor of a ${img.width}×${img.height} image as the resampler's memory cannot grow to ${rows * (stride + W * 16) + size * 4} bytes`);
  const heap = new Uint8Array(m.memory.buffer);
  const off = (img.offset ?? 0) + rowLo * stride;
  heap.set(img.data.subarray(off, off + rows * stride), src);
  for (const [t, at] of [[xs, xt], [ys, yt]] as const) {
    new Int32Array(m.memory.buffer, at.lo, t.lo.length).set(t.lo);
    new Int32Array(m.memory.buffer, at.count, t.count.length).set(t.count);
    new Int32Array(m.memory.buffer, at.start, t.start.length).set(t.start);
    new Float32Array(m.memory.buffer, at.w, t.w.length).set(t.w);
  }
  new Float32Array(m.memory.buffer, nm, 8).set(norm);
  m.across(src, stride, ic, rows, xt.lo, xt.count, xt.start, xt.w, W, mid);
  m.down(mid, W, yt.lo, yt.count, yt.start, yt.w, H, rowLo, out, C, layout === "nhwc" ? 1 : 0, ic === 1 ? 1 : 0, nm, acc);
  dst.set(new Float32Array(m.memory.buffer, out, size), base);
}

/**
 * One image whose plan has geometric ops (augment.ts) into `dst` at `base`, as values in [0, 1]:
 * each output pixel mapped back through the ops, last first (the fill where it leaves the
 * image), mirrored, then sampled at its own position with the kernel's taps and weights
 * (augment.wgsl's `unit`). Not separable, so in plain code, pixel by pixel.
 */
function resampleWarped(img: TensorImage, p: ImagePlan, W: number, H: number, C: number, layout: "nchw" | "nhwc", aa: number, dst: Float32Array, base: number): void {
  const warp = p.augment!.warp!;
  const ops = Float64Array.from(warp.ops.flat()), count = warp.ops.length;
  const ic = img.channels, data = img.data, off = img.offset ?? 0, iw = img.width;
  const xFirst = img.frame?.x ?? 0, yFirst = img.frame?.y ?? 0, xLast = xFirst + iw - 1, yLast = yFirst + img.height - 1;
  const sx = p.w / W, sy = p.h / H, rx = sx > aa ? sx : 1, ry = sy > aa ? sy : 1;
  const cx = W / 2 - 0.5, cy = H / 2 - 0.5;
  const ks = layout === "nchw" ? 1 : C, cs = layout === "nchw" ? W * H : 1;
  for (let k = 0; k < W * H; k++) {
    let qx = k % W, qy = (k - qx) / W, inside = true;
    for (let i = count - 1; i >= 0 && inside; i--) {
      const m = i * 6, x = qx - cx, y = qy - cy;
      qx = ops[m] * x + ops[m + 1] * y + ops[m + 2] + cx;
      qy = ops[m + 3] * x + ops[m + 4] * y + ops[m + 5] + cy;
      inside = qx >= -0.5 && qx < W - 0.5 && qy >= -0.5 && qy < H - 0.5;
    }
    const at = base + k * ks;
    if (!inside) {
      for (let ch = 0; ch < C; ch++) dst[at + ch * cs] = warp.fill[ch];
      continue;
    }
    if (p.mirror) qx = W - 1 - qx;
    // The kernel's taps (sample.wgsl's axisAt): |j − t| < r within the pixels held, else the nearest edge pixel alone.
    let tx = p.x + (qx + 0.5) * sx - 0.5, wrx = rx;
    let xl = Math.max(Math.floor(tx - rx) + 1, xFirst), xh = Math.min(Math.ceil(tx + rx) - 1, xLast);
    if (xl > xh) (xl = xh = tx = Math.min(Math.max(Math.round(tx), xFirst), xLast)), (wrx = 1);
    let ty = p.y + (qy + 0.5) * sy - 0.5, wry = ry;
    let yl = Math.max(Math.floor(ty - ry) + 1, yFirst), yh = Math.min(Math.ceil(ty + ry) - 1, yLast);
    if (yl > yh) (yl = yh = ty = Math.min(Math.max(Math.round(ty), yFirst), yLast)), (wry = 1);
    let r = 0, g = 0, b = 0, sumX = 0, sumY = 0;
    for (let x = xl; x <= xh; x++) sumX += Math.max(0, 1 - Math.abs(x - tx) / wrx);
    for (let y = yl; y <= yh; y++) {
      const wy = Math.max(0, 1 - Math.abs(y - ty) / wry);
      sumY += wy;
      let src = off + ((y - yFirst) * iw + (xl - xFirst)) * ic;
      for (let x = xl; x <= xh; x++, src += ic) {
        const w = wy * Math.max(0, 1 - Math.abs(x - tx) / wrx);
        r += w * data[src];
        if (ic !== 1) (g += w * data[src + 1]), (b += w * data[src + 2]);
      }
    }
    const norm = 255 * sumX * sumY;
    if (ic === 1) g = b = r;
    if (C === 1) dst[at] = (ic === 1 ? r : 0.299 * r + 0.587 * g + 0.114 * b) / norm;
    else (dst[at] = r / norm), (dst[at + cs] = g / norm), (dst[at + 2 * cs] = b / norm);
  }
}

/** Room in the resampler's memory for one axis's taps. */
function placeTaps(m: TensorExports, t: Taps): { lo: number; count: number; start: number; w: number } {
  const n = t.lo.length * 4;
  return { lo: m.alloc(n), count: m.alloc(n), start: m.alloc(n), w: m.alloc(t.w.length * 4) };
}
