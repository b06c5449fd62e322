/**
 * A quick structural check of a JPEG at ingest: SOI, a walk over the marker segments to a
 * frame header (SOF, T.81 B.2.2) with a non-zero size, and EOI at the end. It catches files
 * that are not JPEGs, truncated files and broken headers without decoding; corrupt entropy
 * data is the decoder's to find (ingest's `verify`, `cassette ingest --verify`). It also refuses valid JPEGs in a process cassette's decoder
 * does not read (arithmetic, lossless, hierarchical, 12-bit): stored, each would fail every
 * epoch that reads it.
 */
import { describeStart } from "../util/signature.ts";

export interface JpegHeader {
  width: number;
  height: number;
  components: number;
  progressive: boolean;
}

/** The header of a plausible JPEG, or a reason (with byte offset) why it is not one. */
export function checkJpeg(b: Uint8Array): JpegHeader | { reason: string } {
  if (b[0] !== 0xff || b[1] !== 0xd8) {
    // Named by what it is (text, a GIF, …): "no SOI marker" sent users looking for a broken JPEG.
    return { reason: `not a JPEG (FF D8) nor a PNG (89 50 4E 47): ${describeStart(b)} (offset 0)` };
  }
  let header: JpegHeader | undefined;
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return { reason: `marker expected at offset ${i}, found 0x${b[i].toString(16)}` };
    const m = b[i + 1];
    if (m === 0xff) { i++; continue; } // fill byte (B.1.1.2)
    if (m === 0xd9) return header ? header : { reason: `EOI at offset ${i} before any frame header` };
    if (m >= 0xd0 && m <= 0xd7) { i += 2; continue; }
    const len = (b[i + 2] << 8) | b[i + 3];
    if (len < 2 || i + 2 + len > b.length) return { reason: `segment 0xff${m.toString(16)} at offset ${i} runs past the end (truncated)` };
    if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc) {
      const height = (b[i + 5] << 8) | b[i + 6];
      const width = (b[i + 7] << 8) | b[i + 8];
      if (width === 0 || height === 0) return { reason: `frame header at offset ${i} gives size ${width}×${height}` };
      const unread = unsupportedProcess(m, b[i + 4]);
      if (unread) {
        // Arithmetic files re-code to Huffman losslessly.
        const fix = unread === "arithmetic coding" ? " (jpegtran FILE > OUT re-codes it with Huffman tables, losslessly)" : "";
        return { reason: `frame header at offset ${i} (SOF${m - 0xc0}) uses ${unread}, which cassette's decoder does not read${fix}` };
      }
      header = { width, height, components: b[i + 9], progressive: m === 0xc2 };
    }
    if (m === 0xda) {
      // Entropy-coded data follows the scan header: the file must end with EOI.
      if (!header) return { reason: `scan at offset ${i} before any frame header` };
      let end = b.length;
      while (end > 2 && b[end - 1] === 0) end--; // some writers pad
      if (b[end - 2] !== 0xff || b[end - 1] !== 0xd9) return { reason: `no EOI marker at the end (offset ${b.length}): truncated` };
      return header;
    }
    i += 2 + len;
  }
  return { reason: `truncated at offset ${i} before the image data` };
}

/** What of the frame's process (its SOF marker, T.81 Table B.1) and precision we cannot decode. */
function unsupportedProcess(marker: number, precision: number): string | undefined {
  if (marker === 0xc3 || marker === 0xcb) return "lossless coding";
  if ((marker >= 0xc5 && marker <= 0xc7) || marker >= 0xcd) return "hierarchical coding";
  if (marker >= 0xc9) return "arithmetic coding";
  if (precision !== 8) return `${precision}-bit samples`;
  return undefined;
}
