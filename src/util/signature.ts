/**
 * What a file is by its first bytes, for error messages: a text file named `.png` should be
 * reported as text, not as "a JPEG without its SOI marker". Used by ingest's checks
 * (src/dataset/) and the decoders (src/decode/), which name what they expected themselves.
 */

/** Signatures of formats cassette does not read, and of things often saved under an image's name. */
const KNOWN: { name: string; test: (b: Uint8Array, ascii: string) => boolean }[] = [
  { name: "a JPEG file", test: (b) => b[0] === 0xff && b[1] === 0xd8 },
  { name: "a PNG file", test: (b) => b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47 },
  { name: "a GIF file", test: (_, a) => a.startsWith("GIF8") },
  { name: "a WebP file", test: (_, a) => a.startsWith("RIFF") && a.slice(8, 12) === "WEBP" },
  { name: "a BMP file", test: (_, a) => a.startsWith("BM") },
  { name: "a TIFF file", test: (_, a) => a.startsWith("II*\0") || a.startsWith("MM\0*") },
  { name: "a HEIF/AVIF file", test: (_, a) => a.slice(4, 8) === "ftyp" },
  { name: "a PDF file", test: (_, a) => a.startsWith("%PDF") },
  { name: "gzip data", test: (b) => b[0] === 0x1f && b[1] === 0x8b },
  { name: "a zip archive", test: (_, a) => a.startsWith("PK\x03\x04") },
];

/**
 * The format `b` starts with ("a GIF file", "gzip data", "text", …), or undefined when its first
 * bytes match no signature and are not text. "text" is printable UTF-8 (an HTML page saved
 * as `.jpg` is text too, and `head` shows which).
 */
export function formatOf(b: Uint8Array): string | undefined {
  const ascii = String.fromCharCode(...b.subarray(0, 12));
  const known = KNOWN.find((k) => k.test(b, ascii));
  if (known) return known.name;
  return b.length > 0 && isText(b.subarray(0, 512)) ? "text" : undefined;
}

/** Whether `b` decodes as UTF-8 without control characters other than tab, CR, LF and FF. */
function isText(b: Uint8Array): boolean {
  let s: string;
  try {
    // A multi-byte character cut at the end of the slice is not a reason to call it binary.
    s = new TextDecoder("utf-8", { fatal: true }).decode(b.subarray(0, wholeLength(b)));
  } catch {
    return false;
  }
  return s.length > 0 && !/[\x00-\x08\x0b\x0e-\x1f\x7f]/.test(s);
}

/** The length of `b` less a UTF-8 sequence cut short at its end (a lead byte 0xC2–0xF4 and fewer continuation bytes than it announces). */
function wholeLength(b: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, b.length); back++) {
    const x = b[b.length - back];
    if ((x & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const needs = x >= 0xf0 && x <= 0xf4 ? 4 : x >= 0xe0 ? 3 : x >= 0xc2 ? 2 : 1;
    return needs > back && x >= 0xc2 && x <= 0xf4 ? b.length - back : b.length;
  }
  return b.length;
}

/**
 * `it starts with 68 65 6C 6C ("hell"), text` — the first `n` bytes in hex and as ASCII, and
 * the format they name where one is known; `the input is empty` for no bytes.
 */
export function describeStart(b: Uint8Array, n = 8): string {
  if (b.length === 0) return "the input is empty";
  const seen = b.subarray(0, n);
  const hex = [...seen].map((x) => x.toString(16).toUpperCase().padStart(2, "0")).join(" ");
  const text = [...seen].map((x) => (x >= 0x20 && x < 0x7f ? String.fromCharCode(x) : ".")).join("");
  const format = formatOf(b);
  return `it starts with ${hex} ("${text}")${format ? `, ${format}` : ""}`;
}
