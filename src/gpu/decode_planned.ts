/**
 * Decoding only what a GPU plan reads. The plan of an image (crop box and mirror, from the
 * seed, epoch and sample id: `planImage`, src/decode/crop.ts) needs only the image's size, and
 * the size is in the header (SOF, IHDR: src/decode/header.ts), so the box is known before any
 * pixel is decoded; `planRegion` widens it to the pixels the resampling reads, and the decoder
 * decodes that region only (`DecodeOptions.region`). The result carries its place in the frame
 * (`DecodedImage.frame`): `Preprocessor.plan` draws the same plan on the frame's size, and the
 * kernel reads the frame's pixels from the region (ORIGIN in NOTE [ Packed preprocessing input ],
 * pack.ts): the same boxes, the same tensor bit for bit, fewer pixels decoded and uploaded.
 *
 *   bytes ──► frameSize ──► planImage ──► planRegion ──► decode(region) ──► { pixels, frame } ──► Preprocessor.run
 */
import { CassetteError } from "../errors.ts";
import type { DecodeOptions, Decoder } from "../decode/decoder.ts";
import { planDecode, type PlannedDecodeOptions, type SampleKey } from "../decode/crop.ts";
import type { DecodedImage } from "./pack.ts";

export type { PlannedDecodeOptions };

/**
 * The pixels of `bytes` that preprocessing with `options` reads for sample `id` in `epoch`,
 * decoded alone, with their place in the image. A file whose size is not in a header found
 * before its data (another format; a JPEG whose height comes in a DNL) is decoded whole.
 * `decodeOptions` may not scale or turn the image: the plan is drawn on the stored frame.
 *
 * @example
 * ```ts
 * import { createPngDecoder } from "cassette/decode";
 * import { decodePlanned } from "cassette/gpu";
 * const png = await createPngDecoder();
 * const bytes = Uint8Array.from(atob( // 16×16 grey PNG, a ramp left to right
 *   "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAAAAAA6mKC9AAAAHUlEQVR4nGNgEFAwcAhIKGiYsGDDgQsPPjCMbAEAcLJ4ARHTrnUAAAAASUVORK5CYII="), (c) => c.charCodeAt(0));
 * // Resize(16) + CenterCrop(2): the box (7, 7, 2, 2) and the pixel each side bilinear reads, and one more.
 * const img = decodePlanned(png, bytes, { width: 2, height: 2, crop: { kind: "center", resize: 16 } }, 0, "a");
 * console.log(img.width, img.height, JSON.stringify(img.frame)); // 4 4 {"x":6,"y":6,"width":16,"height":16}
 * ```
 */
export function decodePlanned(
  decoder: Decoder, bytes: Uint8Array, options: PlannedDecodeOptions, epoch: number, id: SampleKey, decodeOptions: DecodeOptions = {},
): DecodedImage {
  if ((decodeOptions.scale ?? 1) !== 1 || decodeOptions.applyOrientation || decodeOptions.region) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot decode a planned box as 'decodeOptions' must not scale, turn or cut the image (the plan is drawn on the stored frame): current value is ${JSON.stringify(decodeOptions)}`);
  }
  const planned = planDecode(bytes, options, epoch, id);
  if (!planned) {
    const img = decoder.decode(bytes, decodeOptions);
    return { data: img.data, width: img.width, height: img.height, channels: img.channels };
  }
  const { region, frame } = planned;
  const whole = region.width === frame.width && region.height === frame.height;
  const img = decoder.decode(bytes, whole ? decodeOptions : { ...decodeOptions, region });
  if (img.width !== region.width || img.height !== region.height) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot decode sample ${id}'s planned box as the decoder answered ${img.width}×${img.height} for the region ${region.width}×${region.height} at (${region.x}, ${region.y}) of its ${frame.width}×${frame.height} header`);
  }
  return { data: img.data, width: img.width, height: img.height, channels: img.channels, frame };
}
