/**
 * The hand-off from the loader to a model: each batch of decoded images that a Loader epoch
 * yields (in ready or strict order) becomes one GPU preprocessing dispatch (crop / resize /
 * normalize into the model's f32 NCHW input) and one TrainBatch with the batch's labels.
 *
 *   Loader.epoch(e) ──► Batch<DecodedImage> ──► Preprocessor.run ──► TrainBatch { x, labels, n }
 *   (fetch + decode,     ids, labels, items      (one upload,          read by the model's next
 *    exactly once)                                one dispatch)          submit, in queue order)
 *
 * The items are the decoded images themselves (a closure transform that answers them) or the
 * samples carrying them as `image` (the loader's `decode`, or a transform module, whose answer
 * becomes the sample's image): a sample without pixels is an error naming it.
 *
 * The preprocessor's output buffer is rewritten `depth` batches later (3 by default); the model
 * copies `x` in the submit that follows this yield, so no batch is overwritten before use.
 */
import { CassetteError } from "../errors.ts";
import { deviceLost } from "../gpu/device.ts";
import type { EpochOptions, Loader } from "../loader.ts";
import type { Sample } from "../read/sample.ts";
import type { ImageTable } from "../assemble/batch.ts";
import type { DecodedImage } from "../gpu/pack.ts";
import type { DctImage } from "../decode/decoder.ts";
import type { JpegScan } from "../decode/jpeg_scan.ts";
import type { PreprocessedMasks, Preprocessor } from "../gpu/preprocess.ts";
import type { TrainBatch } from "./model.ts";

/** A training batch that still knows its samples: for checkpoints and exactly-once checks. */
export interface LoaderTrainBatch extends TrainBatch {
  /** The samples' ids, in the batch's order. */
  ids: string[];
  /** The samples' classes, as the loader's Batch has them. */
  labels: Int32Array<ArrayBuffer>;
  /** Multi-label or float labels (src/dataset/label.ts): n × targetWidth, as the loader's Batch. */
  targets?: Float32Array<ArrayBuffer>;
  /** Length of each sample's vector in `targets`. */
  targetWidth?: number;
  /** Blob labels: the masks, cropped and flipped with the images on the GPU (u32, [n, h, w]). */
  masks?: PreprocessedMasks;
}

/** Options of `loaderBatches`: the epoch's options (EpochOptions), and the label range the model takes. */
export interface LoaderBatchesOptions extends EpochOptions {
  /** Labels must lie in 0 … classes − 1 (the model's outputs); a sample outside is an error naming it. */
  classes?: number;
}

/**
 * The training batches of one loader epoch, preprocessed on the GPU.
 *
 * @example
 * ```ts
 * import { Loader, openStore, ingest, requestDevice, createPreprocessor, createJpegDecoder } from "cassette";
 * import { loaderBatches } from "cassette/train";
 * const store = await openStore("sqlite:.tmp/loader-batches-example.sqlite");
 * await ingest(store, "idx:/usr/share/datasets/fashion-mnist/", { dataset: "fm", limit: 16 });
 * const ids: string[] = [];
 * for await (const page of store.scanNat("fm")) ids.push(...page.map((r) => r.id));
 * const jpeg = await createJpegDecoder();
 * const loader = new Loader({ store, dataset: "fm", ids, batchSize: 8, transform: (s) => jpeg.decode(s.data) });
 * const device = await requestDevice();
 * const pre = await createPreprocessor(device, { width: 28, height: 28, channels: 1, mean: [0.286], std: [0.353] });
 * let n = 0;
 * for await (const b of loaderBatches(loader, pre, 0, { classes: 10 })) n += b.n;
 * console.log(n); // 32
 * pre.destroy();
 * device.destroy();
 * await loader.close();
 * await store.close();
 * ```
 */
export async function* loaderBatches(
  loader: Loader<DecodedImage> | Loader<Sample>,
  pre: Preprocessor,
  epoch: number,
  o: LoaderBatchesOptions = {},
): AsyncGenerator<LoaderTrainBatch> {
  try {
    yield* preprocessed(loader, pre, epoch, o);
  } catch (e) {
    throw await deviceLost(pre.device, e, `preprocess epoch ${epoch}'s batches`);
  }
}

async function* preprocessed(loader: Loader<DecodedImage> | Loader<Sample>, pre: Preprocessor, epoch: number, o: LoaderBatchesOptions): AsyncGenerator<LoaderTrainBatch> {
  for await (const b of (loader as Loader<DecodedImage | Sample>).epoch(epoch, o)) {
    if (o.classes !== undefined) {
      for (let i = 0; i < b.labels.length; i++) {
        const y = b.labels[i];
        if (!(y >= 0 && y < o.classes)) {
          throw new CassetteError(
            "ERR_MALFORMED_INPUT",
            `Cannot train on sample ${b.ids[i]} as its label must be a class from 0 to ${o.classes - 1} (the model's outputs): current value is ${y}`,
          );
        }
      }
    }
    // A batch of read workers' packets has its images in one buffer: one copy into the upload,
    // then the buffer goes back to its worker (Batch.release).
    // A preprocessor that mixes batches (augment.mix) takes the labels, and the loss the mix.
    const mixing = !!pre.options.augment?.mix;
    if (mixing && o.classes === undefined) throw new CassetteError("ERR_INVALID_OPTION", "Cannot mix batches (augment.mix) without 'classes': give the model's class count");
    const run = { epoch, ids: b.ids, masks: b.masks, ...(mixing && { labels: b.labels, classes: o.classes }) };
    const x = await pre.run(b.images && !b.masks ? imagesOf(b.images, b.ids) : b.items.map((item, i) => framed(imageOf(item, b.ids[i]), b.images, i)), run);
    b.release?.();
    const out: LoaderTrainBatch = { x: x.buffer, labels: b.labels, n: b.ids.length, ids: b.ids };
    if (x.mix && x.mix.kind !== "none") out.mix = { lambda: x.mix.lambda };
    // Mixed targets replace the batch's; otherwise multi-label or float labels pass as they came.
    if (x.targets) Object.assign(out, { targets: x.targets, targetWidth: o.classes });
    else if (b.targets) Object.assign(out, { targets: b.targets, targetWidth: b.targetWidth });
    if (x.masks) out.masks = x.masks;
    yield out;
  }
}

/** A batch's image table, every sample decoded (channels 0: the read path did not decode it). */
function imagesOf(t: ImageTable, ids: readonly string[]): ImageTable {
  const missing = t.channels.indexOf(0);
  if (missing >= 0) pixelsOf({ id: ids[missing], label: 0, data: new Uint8Array(0) }, ids[missing]); // names it
  return t;
}

/** An image with its frame where the read workers decoded only its box (`decode: { plan }`): the plan is drawn on the frame. */
function framed(img: DecodedImage | DctImage | JpegScan, t: ImageTable | undefined, i: number): DecodedImage | DctImage | JpegScan {
  const fw = t?.frameWidth?.[i];
  return fw ? { ...img, frame: { x: t!.frameX![i], y: t!.frameY![i], width: fw, height: t!.frameHeight![i] } } : img;
}

/** What the preprocessor takes of a batch item: its pixels, or its DCT blocks (the hybrid decode) or its scan (the GPU decode). */
function imageOf(item: DecodedImage | Sample, id: string): DecodedImage | DctImage | JpegScan {
  return ("scan" in item && item.scan) || ("coefficients" in item && item.coefficients) || pixelsOf(item, id);
}

/** A batch item's pixels: the image itself, or the sample's decoded `image`. */
export function pixelsOf(item: DecodedImage | Sample, id: string): DecodedImage {
  if ("width" in item) return item;
  if (item.image) return item.image;
  if (item.coefficients) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot take the pixels of sample ${id} as the hybrid decode left it as DCT blocks for the GPU preprocessor: read with 'decode: true' here`);
  }
  if (item.scan) {
    throw new CassetteError("ERR_UNSUPPORTED", `Cannot take the pixels of sample ${id} as the GPU decode left it as its JPEG scan for the GPU preprocessor: read with 'decode: true' here`);
  }
  throw new CassetteError(
    "ERR_INVALID_OPTION",
    `Cannot preprocess sample ${id} as it has no pixels: give the Loader 'decode', a transform module, or a transform that answers the decoded image`,
  );
}
