/**
 * Owner of shaders/preprocess/crop_resize_normalize.wgsl: decoded images of any size in, one
 * f32 batch tensor out, in one upload and one dispatch per batch. The plans come from pack.ts,
 * the upload goes through a staging ring (staging.ts), and JPEG coefficient images are turned
 * into pixels on the GPU first (idct.ts) when the batch holds any.
 */
import code from "../../shaders/preprocess/crop_resize_normalize.wgsl" with { type: "text" };
import maskCode from "../../shaders/preprocess/mask_nearest.wgsl" with { type: "text" };
import recordCode from "../../shaders/preprocess/record.wgsl" with { type: "text" };
import warpCode from "../../shaders/preprocess/warp.wgsl" with { type: "text" };
import sampleCode from "../../shaders/preprocess/sample.wgsl" with { type: "text" };
import { CassetteError } from "../errors.ts";
import { Kernel } from "./kernel.ts";
import { isPackedImages, packImages, packLayout, packTable, RECORD_BYTES, tableLayout, tableShape } from "./pack.ts";
import type { DecodedImage, FrameBox, ImagePlan, PackedImages, PackLayout, SampleKey } from "./pack.ts";
import { StagingRing, type StagingSlot } from "./staging.ts";
import { decodePlanned } from "./decode_planned.ts";
import { type BatchPlanOptions, checkTensorOptions, hasRecords, planBatch, type PlannedShape, tableImages, type TensorOptions } from "../decode/tensor.ts";
import type { DecodeOptions, Decoder } from "../decode/decoder.ts";
import { coefficientImageShape, encodeCoefficients, isCoefficientImage, planCoefficients } from "./idct.ts";
import type { JpegCoefficients } from "./idct.ts";
import { describeFlags, encodeHuffman, planScans, STATUS_IMAGES } from "./huffman.ts";
import { isJpegScan, type JpegScan } from "../decode/jpeg_scan.ts";
import { createJpegDecoder, type JpegDecoder } from "../decode/jpeg.ts";
import { augmentBytes, augments, blurs, compileAugmented, encodeAugmented, encodeBlur, meanBytes, meanPasses, packAugment } from "./augment.ts";
import { hasAugment } from "../decode/augment.ts";
import { batchMix, type BatchMixPlan } from "../decode/mix.ts";
import { encodeMix } from "./mix.ts";

const kernel = new Kernel({
  name: "preprocess/crop_resize_normalize",
  code: recordCode + sampleCode + code,
  bindings: ["uniform", "read-only-storage", "storage"],
});
const maskKernel = new Kernel({
  name: "preprocess/mask_nearest",
  code: recordCode + warpCode + maskCode,
  bindings: ["uniform", "read-only-storage", "storage", "read-only-storage"],
});
const WORKGROUP = 64;

/** What a `Preprocessor` makes of each batch: the tensor's options (src/decode/tensor.ts, which the CPU's `cpuTensor` takes too) and batches in flight. */
export interface PreprocessOptions extends TensorOptions {
  /** Batches in flight at once: slots of the staging ring, and output buffers (default 3). */
  depth?: number;
}

/** Options of one `Preprocessor.run`: the epoch and ids that fix random choices, an output buffer to write into, and masks to transform with the images. */
export interface PreprocessRunOptions extends BatchPlanOptions {
  /**
   * Write the tensor here (STORAGE usage, at least n·c·h·w·4 bytes) instead of into one of the
   * preprocessor's own output buffers: a training tensor, say.
   */
  output?: GPUBuffer;
  /**
   * One mask per image (a blob label decoded by the read path: `Batch.masks`): each is cropped
   * and mirrored with its image (the image's plan, scaled to the mask's size) and resampled by
   * nearest neighbour into `PreprocessedBatch.masks`, a u32 tensor of the mask's first channel.
   */
  masks?: readonly DecodedImage[];
}

/** The masks of a batch on the GPU: u32 values, [n, h, w]. */
export interface PreprocessedMasks {
  /** Belongs to the preprocessor, like `PreprocessedBatch.buffer`. */
  buffer: GPUBuffer;
  /** [n, h, w]. */
  shape: [number, number, number];
  /** Bytes of the masks in `buffer`. */
  bytes: number;
  /** Each mask's box, in its own pixels. */
  plans: ImagePlan[];
}

/** One batch on the GPU. */
export interface PreprocessedBatch {
  /**
   * The f32 tensor (STORAGE | COPY_SRC), or `PreprocessRunOptions.output`. Unless given, it
   * belongs to the preprocessor and is rewritten by the `depth`-th following `run`: submit the
   * work that reads it before then (queue order does the rest).
   */
  buffer: GPUBuffer;
  /** [n, c, h, w] or [n, h, w, c]. */
  shape: [number, number, number, number];
  /** The tensor's layout, as the preprocessor's `layout` option said. */
  layout: "nchw" | "nhwc";
  /** Bytes of the tensor at the start of `buffer` (which may be larger). */
  bytes: number;
  /** What was done to each image: the box in its pixels (an image cut from a frame: the frame's). */
  plans: ImagePlan[];
  /** Bytes written into the staging upload for this batch: the table, pixels, coefficients and masks. */
  uploadBytes: number;
  /** With `PreprocessRunOptions.masks`: the masks, cropped and flipped as the images were. */
  masks?: PreprocessedMasks;
  /** With `augment.mix` and the run's `labels`: how the batch was mixed (src/decode/mix.ts). */
  mix?: BatchMixPlan;
  /** With `augment.mix`: the mixed labels, n × classes, on the CPU. */
  targets?: Float32Array<ArrayBuffer>;
  /** With scan images (`decode: "gpu"`): what the GPU's Huffman decode did (src/gpu/huffman.ts). */
  gpuDecode?: GpuDecodeReport;
}

/** What the GPU's Huffman decode did with a batch's scan images. */
export interface GpuDecodeReport {
  /** Scan images in the batch. */
  images: number;
  /** Batch indices of those the GPU handed back, which the CPU decoded (NOTE [ What the GPU decodes ]). */
  cpuDecoded: number[];
  /** Chunks of entropy-coded data, one thread each. */
  chunks: number;
  /** Chunks decoded again by the resync rounds (NOTE [ Parallel Huffman decoding ]). */
  resynced: number;
  /** Chunks decoded again by settle, one interval at a time. */
  settled: number;
}

/**
 * Batch preprocessing on one device: random-resized or centre crop, mirror, antialiased resize,
 * gray↔RGB and mean/std normalization of variable-size u8 images, one dispatch per batch.
 * Create with `createPreprocessor`.
 */
export class Preprocessor {
  /** The device the preprocessor runs on. */
  readonly device: GPUDevice;
  /** The options it was created with. */
  readonly options: Readonly<PreprocessOptions>;
  readonly #ring: StagingRing;
  readonly #params: GPUBuffer;
  /** The CPU's decoder for scan images the GPU hands back (made on the first). */
  #jpeg: Promise<JpegDecoder> | undefined;
  /** The augmented pass's: scale 1 / std and bias −mean / std on values in [0, 1]. */
  readonly #augmentParams: GPUBuffer | undefined;
  readonly #constants: Record<string, number>;

  /** @internal use createPreprocessor */
  constructor(device: GPUDevice, options: PreprocessOptions) {
    this.device = device;
    this.options = options;
    const channels = options.channels ?? 3;
    this.#constants = { NCHW: (options.layout ?? "nchw") === "nchw" ? 1 : 0, OUT_CHANNELS: channels, ANTIALIAS_ABOVE: options.antialiasAbove ?? 2 };
    this.#ring = new StagingRing(device, { depth: options.depth ?? 3, label: "preprocess" });
    const params = new ArrayBuffer(48);
    new Uint32Array(params, 0, 4).set([options.width, options.height, 0, 0]);
    const f = new Float32Array(params, 16, 8);
    for (let c = 0; c < channels; c++) {
      const mean = options.mean?.[c] ?? 0, std = options.std?.[c] ?? 1;
      f[c] = 1 / (255 * std);
      f[4 + c] = -mean / std;
    }
    this.#params = device.createBuffer({ label: "preprocess.params", size: 48, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(this.#params, 0, params);
    if (hasAugment(options.augment)) {
      for (let c = 0; c < channels; c++) f[c] = 1 / (options.std?.[c] ?? 1);
      this.#augmentParams = device.createBuffer({ label: "preprocess.augment-params", size: 48, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(this.#augmentParams, 0, params);
    }
  }

  /** The pipelines, compiled once per device and specialization (done by createPreprocessor). */
  compile(): Promise<unknown> {
    const plain = kernel.compile(this.device, this.#constants);
    return this.#augmentParams ? Promise.all([plain, compileAugmented(this.device, this.#constants)]) : plain;
  }

  /**
   * The box of each mask: its image's plan in the mask's own pixels (a mask may be stored at
   * another size, and covers the whole frame where the image is a box of one).
   */
  maskPlans(images: readonly { width: number; height: number; frame?: FrameBox }[], masks: readonly DecodedImage[], plans: readonly ImagePlan[]): ImagePlan[] {
    if (masks.length !== images.length) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess masks as 'masks' must give one mask per image: current value is ${masks.length} masks for ${images.length} images`);
    }
    return masks.map((m, i) => {
      const f = images[i].frame ?? images[i];
      const sx = m.width / f.width, sy = m.height / f.height, p = plans[i];
      return { x: p.x * sx, y: p.y * sy, w: p.w * sx, h: p.h * sy, mirror: p.mirror };
    });
  }

  /**
   * Decodes only the pixels this preprocessor's plan reads for sample `id` (decode_planned.ts):
   * give the result to `run` with the same epoch and id, and the tensor is the whole image's.
   */
  decodePlanned(decoder: Decoder, bytes: Uint8Array, epoch: number, id: SampleKey, decodeOptions?: DecodeOptions): DecodedImage {
    return decodePlanned(decoder, bytes, this.options, epoch, id, decodeOptions);
  }

  /** GPU buffers created so far; constant once batches stop growing (see NOTE [ Staging ring ]). */
  get allocations(): number {
    return this.#ring.allocations;
  }

  /**
   * The plan of each image, exactly as `run` would make it: drawn on the image's size, or on
   * its frame's where it is a box of a larger image (`DecodedImage.frame`; the box then in the
   * frame's pixels, as the whole image's would be).
   */
  plan(shapes: readonly PlannedShape[], run: PreprocessRunOptions = {}): ImagePlan[] {
    return planBatch(shapes, this.options, run);
  }


  /**
   * Uploads, preprocesses and returns one batch. Images are decoded pixels or, for the hybrid
   * JPEG path, the decoder's coefficients (see idct.ts). Resolves once the work is submitted,
   * not when it has run.
   *
   * @example
   * ```ts
   * import { createJpegDecoder, createPreprocessor, requestDevice } from "cassette";
   * // The hybrid path: the CPU stops after entropy decoding, the GPU does IDCT and colour.
   * const jpeg = await createJpegDecoder();
   * const bytes = Uint8Array.from(atob( // 1×1 grey (128) baseline JPEG
   *   "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/wAALCAABAAEBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/ACv/2Q=="), (c) => c.charCodeAt(0));
   * const device = await requestDevice();
   * const pre = await createPreprocessor(device, { width: 4, height: 4, channels: 1 });
   * const batch = await pre.run([jpeg.decodeCoefficients(bytes)]);
   * const read = device.createBuffer({ size: batch.bytes, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
   * const enc = device.createCommandEncoder();
   * enc.copyBufferToBuffer(batch.buffer, 0, read, 0, batch.bytes);
   * device.queue.submit([enc.finish()]);
   * await read.mapAsync(GPUMapMode.READ);
   * console.log(new Float32Array(read.getMappedRange())[0].toFixed(3)); // 0.502
   * pre.destroy();
   * device.destroy();
   * ```
   */
  async run(images: readonly (DecodedImage | JpegCoefficients | JpegScan)[] | PackedImages, run: PreprocessRunOptions = {}): Promise<PreprocessedBatch> {
    // A table holding DCT or scan records (the hybrid or GPU decode in read workers) goes as a
    // list of views: the coefficient upload is laid out image by image (src/gpu/idct.ts).
    if (isPackedImages(images) && hasRecords(images)) images = tableImages(images) as (DecodedImage | JpegCoefficients | JpegScan)[];
    const table = isPackedImages(images) ? images : undefined;
    const n = table ? table.at.length : (images as readonly unknown[]).length;
    if (n < 1 || n > 65535) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess a batch as it must hold 1 to 65535 images: current value is ${n}`);
    }
    const { width: W, height: H } = this.options;
    const C = this.options.channels ?? 3;
    const layout = this.options.layout ?? "nchw";
    // A table (read workers' packets) is packed with one copy of its buffer; a list image by image.
    const list = table ? [] : (images as readonly (DecodedImage | JpegCoefficients | JpegScan)[]);
    const pixels = table
      ? Array.from({ length: n }, (_, i) => tableShape(table, i))
      : list.map((img) => (isCoefficientImage(img) || isJpegScan(img) ? { ...coefficientImageShape(img), data: undefined } : img));
    if (table && run.masks) throw new CassetteError("ERR_UNSUPPORTED", "Cannot preprocess masks with a table of images: give the images as a list");
    const plans = this.plan(pixels, run);
    const mixed = batchMix(this.options, run, n);
    if (mixed && run.masks) throw new CassetteError("ERR_UNSUPPORTED", "Cannot mix a batch that has masks (augment.mix): MixUp and CutMix blend images, and a mask's classes cannot blend");
    const pack = table ? tableLayout(table) : packLayout(pixels);
    const coef = table ? undefined : planCoefficients(list, pack);
    const coefAt = Math.ceil(pack.bytes / 256) * 256;
    const afterCoef = coef ? coefAt + coef.uploadBytes : pack.bytes;
    const outBytes = n * C * W * H * 4;
    // Masks ride in the same upload, after the images (and coefficients), in the same packed form.
    const masks = run.masks;
    const maskPlans = masks ? this.maskPlans(pixels, masks, plans) : undefined;
    const maskPack = masks ? packLayout(masks) : undefined;
    const maskAt = Math.ceil(afterCoef / 256) * 256;
    const afterMasks = maskPack ? maskAt + maskPack.bytes : afterCoef;
    // The augmentation table too, when any image of the batch has ops or an erase, or masks
    // come (their kernel reads the geometric ops there).
    const augmented = augments(plans);
    const withTable = augmented || !!maskPack;
    const augAt = Math.ceil(afterMasks / 256) * 256;
    const afterTable = withTable ? augAt + augmentBytes(n) : afterMasks;
    // Scan images' entropy-coded data and Huffman tables (src/gpu/huffman.ts), last.
    const scans = coef && coef.scans.length ? planScans(coef.scans) : undefined;
    const scanAt = Math.ceil(afterTable / 256) * 256;
    const upload = scans ? scanAt + scans.uploadBytes : afterTable;

    const slot = await this.#ring.acquire(upload);
    try {
      if (table) packTable(slot.bytes, table, plans, pack);
      else packImages(slot.bytes, pixels, plans, pack);
      if (coef) coef.write(slot.bytes.subarray(coefAt));
      if (maskPack) packImages(slot.bytes.subarray(maskAt), masks!, maskPlans!, maskPack);
      if (withTable) packAugment(slot.bytes.subarray(augAt), plans);
      if (scans) scans.write(slot.bytes.subarray(scanAt));
      const input = slot.target("input", pack.bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
      if (run.output && run.output.size < outBytes) {
        throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess into 'output' as the batch needs ${outBytes} bytes: current value is ${run.output.size}`);
      }
      const output = run.output ?? slot.target("output", outBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      let encoder = this.device.createCommandEncoder({ label: "preprocess" });
      const copies: { from: number; to: GPUBuffer; at?: number; bytes: number }[] = coef ? inputCopies(list, pack, input) : [{ from: 0, to: input, bytes: pack.bytes }];
      let coefBuf: GPUBuffer | undefined;
      if (coef) {
        coefBuf = slot.target("coefficients", coef.bufferBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
        copies.push({ from: coefAt, to: coefBuf, bytes: coef.uploadBytes });
      }
      let maskIn: GPUBuffer | undefined, maskOut: GPUBuffer | undefined;
      if (maskPack) {
        maskIn = slot.target("mask-input", maskPack.bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
        maskOut = slot.target("mask-output", n * W * H * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
        copies.push({ from: maskAt, to: maskIn, bytes: maskPack.bytes });
      }
      let augTable: GPUBuffer | undefined;
      if (withTable) {
        augTable = slot.target("augment", augmentBytes(n), GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
        copies.push({ from: augAt, to: augTable, bytes: augmentBytes(n) });
      }
      let scanBuf: GPUBuffer | undefined;
      if (scans) {
        scanBuf = slot.target("scans", scans.uploadBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
        copies.push({ from: scanAt, to: scanBuf, bytes: scans.uploadBytes });
      }
      this.#ring.commit(slot, encoder, copies);
      let gpuDecode: GpuDecodeReport | undefined;
      if (scans) {
        ({ encoder, report: gpuDecode } = await this.#decodeScans(slot, encoder, coef!, scans, scanBuf!, coefBuf!));
      }
      if (coef) {
        const planes = slot.target("planes", coef.planeBytes, GPUBufferUsage.STORAGE);
        await encodeCoefficients(this.device, encoder, coef, coefBuf!, planes, input);
      }
      if (augmented) {
        const means = slot.target("means", meanBytes(n), GPUBufferUsage.STORAGE);
        this.#checkGroups();
        await encodeAugmented(this.device, encoder, { params: this.#augmentParams!, input, output, table: augTable!, means }, n, W * H, meanPasses(plans), this.#constants);
        if (blurs(plans)) {
          const scratch = slot.target("blur-scratch", outBytes, GPUBufferUsage.STORAGE);
          const params = slot.target("blur-params", 32, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
          await encodeBlur(this.device, encoder, { n, channels: C, height: H, width: W, layout }, { output, scratch, table: augTable!, params });
        }
      } else await this.encode(encoder, input, output, n);
      if (mixed && mixed.plan.kind !== "none") {
        const scratch = slot.target("mix-scratch", outBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
        const params = slot.target("mix-params", 48, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
        await encodeMix(this.device, encoder, mixed.plan, { n, channels: C, height: H, width: W, layout }, output, scratch, params);
      }
      if (maskIn) await maskKernel.encode(this.device, encoder, [this.#params, maskIn, maskOut!, augTable!], [Math.ceil((W * H) / WORKGROUP), n]);
      this.device.queue.submit([encoder.finish()]);
      this.#ring.submitted(slot);
      const shape: [number, number, number, number] = layout === "nchw" ? [n, C, H, W] : [n, H, W, C];
      const uploaded = copies.reduce((a, c) => a + c.bytes, 0);
      const out: PreprocessedBatch = { buffer: output, shape, layout, bytes: outBytes, plans, uploadBytes: uploaded };
      if (maskOut) out.masks = { buffer: maskOut, shape: [n, H, W], bytes: n * W * H * 4, plans: maskPlans! };
      if (mixed) Object.assign(out, { mix: mixed.plan, targets: mixed.targets });
      if (gpuDecode) out.gpuDecode = gpuDecode;
      return out;
    } catch (e) {
      this.#ring.abandon(slot);
      throw e;
    }
  }

  /**
   * The scan images' Huffman decode (src/gpu/huffman.ts): recorded after the uploads and
   * submitted, its status read back, and any image the GPU hands back decoded on the CPU into
   * its blocks (NOTE [ What the GPU decodes ]); returns the encoder the rest goes on. A file the
   * CPU cannot decode either is its decoder's error, naming the image.
   */
  async #decodeScans(
    slot: StagingSlot,
    encoder: GPUCommandEncoder,
    coef: NonNullable<ReturnType<typeof planCoefficients>>,
    scans: ReturnType<typeof planScans>,
    scanBuf: GPUBuffer,
    coefBuf: GPUBuffer,
  ): Promise<{ encoder: GPUCommandEncoder; report: GpuDecodeReport }> {
    encoder.clearBuffer(coefBuf, coef.uploadBytes, coef.bufferBytes - coef.uploadBytes);
    const status = slot.target("scan-status", scans.statusBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST);
    const read = slot.target("scan-status-read", scans.statusBytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    const stateA = slot.target("scan-state-a", scans.stateBytes, GPUBufferUsage.STORAGE);
    const stateB = slot.target("scan-state-b", scans.stateBytes, GPUBufferUsage.STORAGE);
    await encodeHuffman(this.device, encoder, scans, { scan: scanBuf, coef: coefBuf, stateA, stateB, status });
    encoder.copyBufferToBuffer(status, 0, read, 0, scans.statusBytes);
    this.device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const words = new Uint32Array(read.getMappedRange().slice(0));
    read.unmap();
    const report: GpuDecodeReport = { images: coef.scans.length, cpuDecoded: [], chunks: scans.chunks, resynced: words[1], settled: words[0] };
    for (let k = 0; k < coef.scans.length; k++) {
      const flags = words[STATUS_IMAGES + k];
      if (!flags) continue;
      const { scan, index, words: at } = coef.scans[k];
      this.#jpeg ??= createJpegDecoder();
      let cpu: JpegCoefficients;
      try {
        cpu = (await this.#jpeg).decodeCoefficients(scan.file);
      } catch (e) {
        throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot decode image ${index} of the batch as ${(e as Error).message} (the GPU found ${describeFlags(flags)})`, { cause: e });
      }
      cpu.components.forEach((c, j) => {
        const want = scan.components[j];
        if (!want || c.blocksW !== want.blocksW || c.blocksH !== want.blocksH) {
          throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot decode image ${index} of the batch as the CPU's blocks of component ${j} (${c.blocksW}×${c.blocksH}) are not its header's`);
        }
        this.device.queue.writeBuffer(coefBuf, at[j] * 4, c.coefficients as Int16Array<ArrayBuffer>);
      });
      report.cpuDecoded.push(index);
    }
    return { encoder: this.device.createCommandEncoder({ label: "preprocess" }), report };
  }

  /**
   * Records the preprocessing kernel alone over `count` images already packed on the GPU
   * (`input`, laid out as NOTE [ Packed preprocessing input ] in pack.ts says) into `output`.
   * `run` calls it; it is public for callers that fill the input themselves, and for
   * measuring the kernel without the upload.
   */
  async encode(encoder: GPUCommandEncoder, input: GPUBuffer, output: GPUBuffer, count: number): Promise<void> {
    const groups = this.#checkGroups();
    await kernel.encode(this.device, encoder, [this.#params, input, output], [groups, count], this.#constants);
  }

  /** Workgroups of one image's output pixels, within what a dispatch allows. */
  #checkGroups(): number {
    const { width: W, height: H } = this.options;
    const groups = Math.ceil((W * H) / WORKGROUP);
    if (groups > 65535) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot preprocess to ${W}×${H} as an output image may have at most ${65535 * WORKGROUP} pixels`);
    }
    return groups;
  }

  /** Frees every buffer of the preprocessor (outputs of earlier batches included). */
  destroy(): void {
    this.#ring.destroy();
    this.#params.destroy();
    this.#augmentParams?.destroy();
    void this.#jpeg?.then((j) => j.close());
  }
}

/**
 * A batch preprocessor for `device`, its pipeline compiled. The CPU plans each image's crop
 * and flip from (seed, epoch, sample id); the GPU does the rest in one dispatch per batch.
 *
 * @example
 * ```ts
 * import { createPreprocessor, requestDevice } from "cassette";
 * const device = await requestDevice();
 * const pre = await createPreprocessor(device, {
 *   width: 32, height: 32, crop: { kind: "random-resized" }, flip: 0.5, seed: 1,
 *   mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225],
 * });
 * const images = [
 *   { data: new Uint8Array(60 * 40 * 3).fill(200), width: 60, height: 40, channels: 3 },
 *   { data: new Uint8Array(17 * 90).fill(50), width: 17, height: 90, channels: 1 },
 * ];
 * const batch = await pre.run(images, { epoch: 0, ids: ["a", "b"] });
 * console.log(batch.shape.join("x")); // 2x3x32x32
 * pre.destroy();
 * device.destroy();
 * ```
 */
export async function createPreprocessor(device: GPUDevice, options: PreprocessOptions): Promise<Preprocessor> {
  check(options);
  const pre = new Preprocessor(device, options);
  await pre.compile();
  return pre;
}

function check(o: PreprocessOptions): void {
  checkTensorOptions(o, "create a preprocessor");
}

/**
 * What of the packed input goes to the GPU when some images are coefficient images: the records,
 * and the pixels of the others, run by run. A coefficient image's span is written by the colour
 * pass (src/gpu/idct.ts), so copying it from staging would only move bytes to be overwritten.
 */
function inputCopies(list: readonly object[], pack: PackLayout, input: GPUBuffer): { from: number; to: GPUBuffer; at: number; bytes: number }[] {
  const copies: { from: number; to: GPUBuffer; at: number; bytes: number }[] = [];
  let start = 0, end = list.length * RECORD_BYTES;
  list.forEach((img, i) => {
    const next = i + 1 < list.length ? pack.offsets[i + 1] : pack.bytes;
    if (!isCoefficientImage(img) && !isJpegScan(img)) return void (end = next);
    if (end > start) copies.push({ from: start, to: input, at: start, bytes: end - start });
    start = end = next;
  });
  if (end > start) copies.push({ from: start, to: input, at: start, bytes: end - start });
  return copies;
}
