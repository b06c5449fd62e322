/**
 * What the read path hands the loader for one id: a source's answer (bytes and label) and,
 * where the read path decodes (a Loader's `decode` option), the pixels.
 */
import type { DctImage, Image } from "../decode/decoder.ts";
import type { JpegScan } from "../decode/jpeg_scan.ts";
import type { Fetched, Source } from "../source/source.ts";

/** What the read path answers for one id: the stored bytes and label (Fetched), with the decoded image (and mask) when it decodes. */
export interface Sample extends Fetched {
  /** The decoded pixels, when the read path decodes (decode_source.ts, in a read worker or here). */
  image?: Image;
  /**
   * With `decode: "hybrid"`: the image as its DCT blocks instead of `image`, for the GPU
   * preprocessor to finish (src/gpu/idct.ts); a file the GPU pass cannot finish (a PNG, a CMYK
   * JPEG) comes as `image`.
   */
  coefficients?: DctImage;
  /**
   * With `decode: "gpu"`: a JPEG as its header and entropy-coded data instead of `image`, for
   * the GPU preprocessor to decode (src/gpu/huffman.ts; NOTE [ What the GPU decodes ] in
   * src/decode/jpeg_scan.ts); a file the GPU cannot decode (a PNG, a progressive or CMYK
   * JPEG) comes as `image`, and `Loader.stats().gpuRefused` counts the JPEGs among them.
   */
  scan?: JpegScan;
  /** A blob label decoded with the image's decoder (src/dataset/label.ts): a segmentation mask, say. */
  mask?: Image;
}

/**
 * The root module's older name of `Sample` (before 0.2.0).
 * @deprecated Use `Sample`: inside the read path `Fetched` is a source's answer without pixels (src/source/source.ts), one name for one meaning.
 */
export type FetchedSample = Sample;

/** A source whose answers may carry pixels: what every wrapper in this folder takes and gives. */
export type ReadSource = Source<Sample>;
