/**
 * Decoders by format: the one place that names each implementation, so the read path, the
 * read workers and the pool ask for "a decoder" and a new format is added here.
 */
import { CassetteError } from "../errors.ts";
import type { Decoder } from "./decoder.ts";
import { createJpegDecoder } from "./jpeg.ts";

export type DecoderFormat = "jpeg";

const FACTORIES: Record<DecoderFormat, () => Promise<Decoder>> = {
  jpeg: createJpegDecoder,
};

/** A decoder instance for `format` (default "jpeg"); one per thread. */
export async function createDecoder(format: DecoderFormat = "jpeg"): Promise<Decoder> {
  const make = FACTORIES[format];
  if (!make) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot create a decoder as 'format' must be one of ${Object.keys(FACTORIES).join(", ")}: current value is ${format}`);
  }
  return await make();
}
