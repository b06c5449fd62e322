/**
 * Real JPEGs (cjpeg) whose headers are sound and whose scan data is corrupt: the structural
 * check at ingest passes them, a full decode does not. For the ingest --verify tests and the
 * read-time decode error tests.
 */
import * as assert from "uvu/assert";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cjpeg } from "../_support/cjpeg.ts";
import { checkJpeg } from "../../src/dataset/jpeg_check.ts";

/** Where a JPEG's entropy-coded data starts: after the first SOS segment. */
export function scanStart(b: Uint8Array): number {
  const sos = b.findIndex((v, k) => v === 0xff && b[k + 1] === 0xda);
  return sos + 2 + ((b[sos + 2] << 8) | b[sos + 3]);
}

/**
 * An ImageFolder of 8 good 48×48 RGB cjpeg files and two corrupt ones that the header check
 * passes: `cut.jpg` ends half-way through its scan (then EOI, as a file whose tail was lost
 * and "repaired"), `marker.jpg` has two bytes of its scan overwritten with an RST marker.
 */
export function corruptFolder(root: string): { root: string; cutAt: number; markerAt: number } {
  for (const cls of ["a", "b"]) mkdirSync(join(root, cls), { recursive: true });
  const px = new Uint8Array(48 * 48 * 3).map((_, i) => (i * 37 + (i >> 7)) % 251);
  for (let i = 0; i < 4; i++) {
    for (const cls of ["a", "b"]) writeFileSync(join(root, cls, `g${i}.jpg`), cjpeg(px.map((v) => v ^ (i * 16)), 48, 48, 3));
  }
  const good = cjpeg(px, 48, 48, 3);
  const s = scanStart(good);
  const cutAt = s + Math.floor((good.length - 2 - s) / 2);
  const cut = new Uint8Array(cutAt + 2);
  cut.set(good.subarray(0, cutAt));
  cut.set([0xff, 0xd9], cutAt);
  const markerAt = s + Math.floor((good.length - 2 - s) / 3);
  const marker = good.slice();
  marker.set([0xff, 0xd3], markerAt);
  for (const b of [cut, marker]) assert.not.ok("reason" in checkJpeg(b), "the header check alone passes it");
  writeFileSync(join(root, "b", "cut.jpg"), cut);
  writeFileSync(join(root, "a", "marker.jpg"), marker);
  return { root, cutAt, markerAt };
}

