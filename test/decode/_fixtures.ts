/** Shared by the decoder tests: the corpus in test/fixtures/jpeg, its references, diff images. */
import { readdirSync, readFileSync, mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parsePnm, type Pixels } from "../reference/jpeg_compare.ts";
import { pnm } from "../_support/cjpeg.ts";

export const FIXTURES = fileURLToPath(new URL("../fixtures/jpeg/", import.meta.url));

/** Files listed in disabled.txt (name → reason): not compared with djpeg. */
export function disabled(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(FIXTURES + "disabled.txt", "utf8").split("\n")) {
    const m = /^(\S+\.jpg)\s+(.+)$/.exec(line.trim());
    if (m && !line.startsWith("#")) out.set(m[1], m[2]);
  }
  return out;
}

/** Every corpus JPEG, sorted. */
export function corpus(): string[] {
  return readdirSync(FIXTURES).filter((f) => f.endsWith(".jpg")).sort();
}

export function jpegBytes(name: string): Uint8Array {
  return new Uint8Array(readFileSync(FIXTURES + name));
}

/** djpeg's output for `name` (".jpg" → ".pnm", or ".sN.pnm" at scale 1/N). */
export function djpegRef(name: string, scale = 1): Pixels {
  const base = name.replace(/\.jpg$/, "");
  return parsePnm(new Uint8Array(readFileSync(FIXTURES + (scale === 1 ? `${base}.pnm` : `${base}.s${scale}.pnm`))));
}

/**
 * Writes |a − b| × 16 as a PNM into .tmp/jpeg-diff/ and returns its path, for the failure
 * message: a failed comparison leaves an image to look at, not only a number.
 */
export function writeDiffImage(name: string, w: number, h: number, ch: number, a: Uint8Array, b: Uint8Array): string {
  const dir = fileURLToPath(new URL("../../.tmp/jpeg-diff/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Math.min(255, Math.abs(a[i] - b[i]) * 16);
  const path = `${dir}${name.replace(/\.jpg$/, "")}-diff.pnm`;
  writeFileSync(path, pnm(out, w, h, ch as 1 | 3));
  return path;
}
