/**
 * Region decode (issue 37; DecodeOptions.region, wasm/jpeg/output.ts planRegion): the pixels of
 * a box are those of the whole decode there, at every scale and for every kind of file the
 * JPEG decoder reads (and PNG, cut after its decode), on fresh cjpeg files; the decoder reads no row below the box; bad regions
 * are named.
 */
import * as assert from "uvu/assert";
import { afterAll, test } from "../_support/harness.ts";
import { cjpeg, cmykJpeg, removeCmykTool } from "../_support/cjpeg.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { expectError } from "../_support/expect.ts";
import { createJpegDecoder, type JpegImage } from "../../src/decode/jpeg.ts";
import { createPngDecoder } from "../../src/decode/png.ts";
import { buildPng } from "../_support/png_build.ts";
import type { DecodeScale } from "../../src/decode/decoder.ts";

afterAll(() => removeCmykTool());

const SCALES: DecodeScale[] = [1, 0.5, 0.25, 0.125];

/** The box [⌊x·s⌋, ⌈(x + w)·s⌉) × … of `img` (the whole decode at scale s), clipped to it, or undefined where empty. */
function cropOf(img: JpegImage, s: number, x: number, y: number, w: number, h: number): { x0: number; y0: number; width: number; height: number } | undefined {
  const x0 = Math.floor(x * s), y0 = Math.floor(y * s);
  const x1 = Math.min(img.width, Math.ceil((x + w) * s)), y1 = Math.min(img.height, Math.ceil((y + h) * s));
  return x1 > x0 && y1 > y0 ? { x0, y0, width: x1 - x0, height: y1 - y0 } : undefined;
}

function assertRegion(got: JpegImage, full: JpegImage, c: { x0: number; y0: number; width: number; height: number }, what: string): void {
  assert.equal([got.width, got.height, got.channels], [c.width, c.height, full.channels], `${what}: the region's size`);
  const ch = full.channels, row = c.width * ch;
  for (let y = 0; y < c.height; y++) {
    const from = ((c.y0 + y) * full.width + c.x0) * ch;
    const want = full.data.subarray(from, from + row), have = got.data.subarray(y * row, (y + 1) * row);
    for (let i = 0; i < row; i++) {
      if (have[i] !== want[i]) assert.unreachable(`${what}: row ${y} byte ${i} is ${have[i]}, the whole decode's is ${want[i]}`);
    }
  }
}

/** Smooth pixels with noise: codes of every length, blocks that differ. */
function photoLike(next: () => number, w: number, h: number, ch: number): Uint8Array {
  const px = randomBytes(next, w * h * ch);
  const f = 0.02 + next() * 0.1, phase = next() * 6;
  for (let i = 0; i < px.length; i++) px[i] = (Math.sin(i * f + phase) * 70 + 128 + (px[i] >> 2) - 32) & 255;
  return px;
}

test("a region's pixels are the whole decode's there: sampling 4:4:4 to 4:1:1, grey, progressive, restart intervals, every scale, boxes at and past every edge", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const dec = await createJpegDecoder();
  let checked = 0, streamed = 0;
  for (let t = 0; t < 24; t++) {
    // Some large enough that rows leave as the scan goes (a ring of planes), most small.
    const big = t % 4 === 0;
    const w = big ? randomInt(next, 300, 560) : randomInt(next, 1, 160), h = big ? randomInt(next, 220, 400) : randomInt(next, 1, 160);
    const ch = next() < 0.2 ? 1 : 3;
    const sampling = ["1x1", "2x1", "2x2", "1x2", "4x1", "4x2"][randomInt(next, 0, 5)];
    const args = ["-quality", String(randomInt(next, 30, 98)), "-sample", `${sampling},1x1,1x1`];
    if (next() < 0.3) args.push("-progressive");
    // Restart intervals in MCU rows, or in MCUs (not aligned with rows: some skipped beside a window).
    if (next() < 0.4) args.push("-restart", next() < 0.5 ? String(randomInt(next, 1, 3)) : `${randomInt(next, 1, 7)}B`);
    const jpg = cjpeg(photoLike(next, w, h, ch), w, h, ch as 1 | 3, args);
    if (big && !args.includes("-progressive")) streamed++;
    for (const scale of SCALES) {
      for (const grey of [false, true]) {
        const full = dec.decode(jpg, { scale, grey });
        for (let k = 0; k < 4; k++) {
          // Corners, edges and boxes reaching past the image, as well as inside ones.
          const x = k === 0 ? 0 : randomInt(next, 0, w - 1), y = k === 0 ? 0 : randomInt(next, 0, h - 1);
          const rw = k === 1 ? w + 5 : randomInt(next, 1, w), rh = k === 1 ? h + 5 : randomInt(next, 1, h);
          const c = cropOf(full, scale, x, y, rw, rh)!;
          const what = `${w}×${h} ${args.join(" ")} scale ${scale}${grey ? " grey" : ""} box ${x},${y} ${rw}×${rh} (seed ${seed})`;
          assertRegion(dec.decode(jpg, { scale, grey, region: { x, y, width: rw, height: rh } }), full, c, what);
          checked++;
        }
      }
    }
  }
  assert.ok(checked >= 24 * 4 * 2 * 4 && streamed >= 1, `${checked} regions, ${streamed} files that stream`);
});

/** Where each restart interval's entropy-coded bytes lie: [start, end) before its RSTm (the last: before EOI). */
function intervals(jpg: Uint8Array): [number, number][] {
  let p = 2;
  while (!(jpg[p] === 0xff && jpg[p + 1] === 0xda)) p += 2 + ((jpg[p + 2] << 8) | jpg[p + 3]); // marker segments up to SOS
  let start = p + 2 + ((jpg[p + 2] << 8) | jpg[p + 3]);
  const out: [number, number][] = [];
  for (let i = start; i + 1 < jpg.length; i++) {
    if (jpg[i] !== 0xff || jpg[i + 1] === 0 || jpg[i + 1] === 0xff) continue;
    out.push([start, i]);
    if (jpg[i + 1] < 0xd0 || jpg[i + 1] > 0xd7) break; // EOI
    start = i + 2;
    i++;
  }
  return out;
}

test("a region passes over whole restart intervals outside its window unread: garbled ones above and beside it change nothing, and the whole decode fails on them", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const dec = await createJpegDecoder();
  // 4:2:0, 16×16 MCUs: 20 across, 15 down; an interval of 2 MCUs, 10 a row.
  const jpg = cjpeg(photoLike(next, 320, 240, 3), 320, 240, 3, ["-quality", "90", "-sample", "2x2,1x1,1x1", "-restart", "2B"]);
  const iv = intervals(jpg);
  assert.is(iv.length, 150, "150 intervals");
  const region = { x: 160 + randomInt(next, 0, 40), y: 128 + randomInt(next, 0, 40), width: 60, height: 50 };
  // The window is the region's MCUs and one more each side: rows from 7, columns from 9. Garble
  // intervals in MCU rows 0–5 and, in the window's rows, the one at columns 0–1.
  const garbled = Uint8Array.from(jpg);
  const chosen = [randomInt(next, 0, 59), randomInt(next, 0, 59), 10 * 8, 10 * 9];
  for (const k of chosen) {
    const [a, b] = iv[k];
    for (let i = a; i + 1 < b; i += 2) garbled[i] = 0xff, garbled[i + 1] = 0; // all one bits: no Huffman code
  }
  await expectError(Promise.resolve().then(() => dec.decode(garbled)), "ERR_MALFORMED_INPUT", /.*/);
  const full = dec.decode(jpg);
  for (const grey of [false, true]) {
    const got = dec.decode(garbled, { region, grey });
    const want = grey ? dec.decode(jpg, { grey }) : full;
    assertRegion(got, want, { x0: region.x, y0: region.y, width: region.width, height: region.height }, `garbled intervals ${chosen.join(", ")}${grey ? " grey" : ""} (seed ${seed})`);
  }
});

test("CMYK and YCCK files: a region's pixels are the whole decode's there", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const dec = await createJpegDecoder();
  for (const mode of ["cmyk", "ycck"] as const) {
    const w = randomInt(next, 20, 90), h = randomInt(next, 20, 90);
    const jpg = cmykJpeg(photoLike(next, w, h, 3), w, h, mode, 85, ["1x1", "2x2", "2x1"][randomInt(next, 0, 2)]);
    for (const scale of SCALES) {
      const full = dec.decode(jpg, { scale });
      const x = randomInt(next, 0, w - 1), y = randomInt(next, 0, h - 1), rw = randomInt(next, 1, w), rh = randomInt(next, 1, h);
      assertRegion(dec.decode(jpg, { scale, region: { x, y, width: rw, height: rh } }), full, cropOf(full, scale, x, y, rw, rh)!, `${mode} scale ${scale} (seed ${seed})`);
    }
  }
});

test("decodeInto a region writes the region's pixels at the offset, and nothing past them", async () => {
  const next = rng(freshSeed());
  const dec = await createJpegDecoder();
  const jpg = cjpeg(photoLike(next, 300, 260, 3), 300, 260, 3, ["-quality", "90", "-sample", "2x2,1x1,1x1"]);
  const full = dec.decode(jpg);
  const region = { x: 37, y: 101, width: 90, height: 70 };
  const target = new Uint8Array(16 + 90 * 70 * 3 + 16).fill(7);
  const r = dec.decodeInto(jpg, target, 16, { region });
  assert.equal([r.width, r.height, r.channels, r.bytes], [90, 70, 3, 90 * 70 * 3]);
  assertRegion({ ...full, ...r, data: target.subarray(16, 16 + r.bytes) } as JpegImage, full, { x0: 37, y0: 101, width: 90, height: 70 }, "decodeInto");
  assert.ok(target.subarray(0, 16).every((b) => b === 7) && target.subarray(16 + r.bytes).every((b) => b === 7), "bytes outside the region's place untouched");
});

test("a region ends the decode at its last rows: a file cut below them decodes there (and fails whole)", async () => {
  const next = rng(freshSeed());
  const dec = await createJpegDecoder();
  for (const big of [false, true]) {
    const w = big ? 640 : 120, h = big ? 480 : 120;
    const jpg = cjpeg(photoLike(next, w, h, 3), w, h, 3, ["-quality", "90", "-sample", "2x2,1x1,1x1"]);
    const full = dec.decode(jpg);
    // The first 60 % of the bytes: the top rows are in, the bottom ones are not.
    const cut = jpg.subarray(0, Math.floor(jpg.length * 0.6));
    await expectError(Promise.resolve().then(() => dec.decode(cut)), "ERR_MALFORMED_INPUT", /ends inside|interrupts/);
    const region = { x: 10, y: 0, width: Math.floor(w / 2), height: Math.floor(h / 5) };
    assertRegion(dec.decode(cut, { region }), full, { x0: 10, y0: 0, width: region.width, height: region.height }, `${w}×${h} cut at 60 %`);
  }
});

test("a region outside the image, or not a box, is an option error naming it", async () => {
  const dec = await createJpegDecoder();
  const jpg = cjpeg(new Uint8Array(40 * 30 * 3).fill(90), 40, 30, 3);
  await expectError(Promise.resolve().then(() => dec.decode(jpg, { region: { x: 40, y: 0, width: 5, height: 5 } })), "ERR_INVALID_OPTION", /'region' \(x 40, y 0, 5×5\) lies outside the image \(40×30\)/);
  await expectError(Promise.resolve().then(() => dec.decode(jpg, { region: { x: 0, y: 30, width: 5, height: 5 } })), "ERR_INVALID_OPTION", /outside the image/);
  for (const region of [{ x: -1, y: 0, width: 5, height: 5 }, { x: 0, y: 0, width: 0, height: 5 }, { x: 0.5, y: 0, width: 5, height: 5 }, null]) {
    await expectError(Promise.resolve().then(() => dec.decode(jpg, { region: region as never })), "ERR_INVALID_OPTION", /'region' must be \{ x, y ≥ 0, width, height ≥ 1 \}/);
  }
  // The decoder is still good after each refusal.
  assert.is(dec.decode(jpg, { region: { x: 39, y: 29, width: 9, height: 9 } }).width, 1);
});

test("PNG: a region is cut from the whole image, at every scale, with the JPEG decoder's rules; decodeInto alike", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const dec = await createPngDecoder();
  for (let t = 0; t < 6; t++) {
    const w = randomInt(next, 1, 70), h = randomInt(next, 1, 70);
    const raw = new Uint8Array(h * (w * 3 + 1));
    for (let y = 0; y < h; y++) raw.set(randomBytes(next, w * 3), y * (w * 3 + 1) + 1);
    const png = buildPng({ width: w, height: h, bitDepth: 8, colorType: 2, raw });
    for (const scale of SCALES) {
      const full = dec.decode(png, { scale }) as JpegImage;
      const x = randomInt(next, 0, w - 1), y = randomInt(next, 0, h - 1), rw = randomInt(next, 1, w + 3), rh = randomInt(next, 1, h + 3);
      const region = { x, y, width: rw, height: rh };
      const c = cropOf(full, scale, x, y, rw, rh)!;
      assertRegion(dec.decode(png, { scale, region }) as JpegImage, full, c, `png ${w}×${h} scale ${scale} box ${x},${y} ${rw}×${rh} (seed ${seed})`);
      const target = new Uint8Array(c.width * c.height * 3 + 4);
      const r = dec.decodeInto(png, target, 4, { scale, region });
      assertRegion({ ...full, width: r.width, height: r.height, data: target.subarray(4) } as JpegImage, full, c, `png decodeInto (seed ${seed})`);
    }
  }
  const png = buildPng({ width: 4, height: 4, bitDepth: 8, colorType: 0, raw: new Uint8Array(4 * 5) });
  await expectError(Promise.resolve().then(() => dec.decode(png, { region: { x: 4, y: 0, width: 1, height: 1 } })), "ERR_INVALID_OPTION", /PNG as 'region' \(x 4, y 0, 1×1\) lies outside the image \(4×4\)/);
});
