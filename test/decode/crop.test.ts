import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { blockMeanRef, maxAbsDiff, resizeBilinearRef } from "../reference/resize.ts";
import { type CropBox, randomCropBox, resizeBilinear } from "../../src/decode/crop.ts";
import type { DecodeOptions, Image } from "../../src/decode/decoder.ts";
import { createJpegDecoder, type JpegScale } from "../../src/decode/jpeg.ts";
import type { TransformContext } from "../../src/decode/transform.ts";
import { decodeScaleFor, mapBox, transform } from "../../src/decode/transforms/random_resized_crop.ts";
import { frameSize, jpegFrameSize } from "../../src/decode/header.ts";
import { type CropPolicy, planImage, planRegion } from "../../src/decode/crop.ts";
import { hash32 } from "../../src/plan/rng.ts";
import { preprocessRef } from "../reference/preprocess.ts";
import { buildPng } from "../_support/png_build.ts";
import { CassetteError } from "../../src/errors.ts";

// Scaled (1/2…1/8) against full decodes: the bound the decoder tests hold every decode to
// against djpeg (jpeg_corpus.test.ts). See the test that uses it for why it applies here.
const MAX_ABS_SCALED = 4;

const isInvalid = (name: string) => (e: unknown) =>
  e instanceof CassetteError && e.code === "ERR_INVALID_OPTION" && e.message.includes(`'${name}'`) && /current value is/.test(e.message);

function image(next: () => number, width: number, height: number, channels: 1 | 2 | 3 | 4): Image {
  return { width, height, channels, data: randomBytes(next, width * height * channels), orientation: 1 };
}

/** The reference's values rounded as resizeBilinear rounds (nearest), for exact comparisons. */
function rounded(v: Float64Array): Uint8Array {
  return Uint8Array.from(v, (x) => Math.round(x));
}

function mirrored(img: { width: number; height: number; channels: number }, data: Uint8Array): Uint8Array {
  const { width: w, height: h, channels: c } = img;
  const out = new Uint8Array(data.length);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) for (let k = 0; k < c; k++) out[(y * w + x) * c + k] = data[(y * w + (w - 1 - x)) * c + k];
  return out;
}

test("resizeBilinear matches the f64 reference (half-pixel centres, clamped to the crop) on fresh random images, boxes and sizes, up and down: max |diff| ≤ 1", () => {
  const seed = freshSeed();
  const next = rng(seed);
  let down = 0, up = 0;
  for (let i = 0; i < 300; i++) {
    const W = randomInt(next, 1, 160), H = randomInt(next, 1, 160);
    const C = ([1, 2, 3, 4] as const)[randomInt(next, 0, 3)];
    const src = image(next, W, H, C);
    const x0 = randomInt(next, 0, W - 1), y0 = randomInt(next, 0, H - 1);
    const w = randomInt(next, 1, W - x0), h = randomInt(next, 1, H - y0);
    // Outputs from a fifth of the box (down, skipping pixels) to three times it (up), capped.
    const outW = Math.min(randomInt(next, 1, 3 * w + 2), 96), outH = Math.min(randomInt(next, 1, 3 * h + 2), 96);
    if (outW < w) down++;
    if (outW > w) up++;
    const got = resizeBilinear(src, x0, y0, w, h, outW, outH);
    const what = `seed ${seed}, ${W}×${H}×${C}, box (${x0}, ${y0}, ${w}, ${h}) → ${outW}×${outH}`;
    assert.equal([got.width, got.height, got.channels, got.data.length], [outW, outH, C, outW * outH * C], what);
    const d = maxAbsDiff(got.data, resizeBilinearRef(src, x0, y0, w, h, outW, outH));
    assert.ok(d.max <= 1, `${what}: max |diff| ${d.max.toFixed(3)} at value ${d.at}`);
  }
  assert.ok(down > 50 && up > 50, `seed ${seed}: ${down} downscales, ${up} upscales`);
});

test("resizeBilinear: the box at its own size is the crop exactly, and halving averages 2×2 blocks", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const src = image(next, 37, 23, 3);
  const same = resizeBilinear(src, 5, 4, 20, 11, 20, 11);
  for (let y = 0; y < 11; y++) {
    const row = src.data.subarray(((y + 4) * 37 + 5) * 3, ((y + 4) * 37 + 25) * 3);
    assert.equal(same.data.subarray(y * 60, (y + 1) * 60), row, `seed ${seed}: row ${y}`);
  }
  // Half size samples at (2o + ½): the mean of a 2×2 block (no antialias needed at exactly ½).
  const half = resizeBilinear(src, 1, 2, 20, 10, 10, 5);
  for (let oy = 0; oy < 5; oy++) {
    for (let ox = 0; ox < 10; ox++) {
      for (let c = 0; c < 3; c++) {
        const p = (x: number, y: number) => src.data[((2 + 2 * oy + y) * 37 + 1 + 2 * ox + x) * 3 + c];
        const mean = (p(0, 0) + p(1, 0) + p(0, 1) + p(1, 1)) / 4;
        assert.ok(Math.abs(half.data[(oy * 10 + ox) * 3 + c] - mean) <= 0.5, `seed ${seed}: (${ox}, ${oy}, ${c})`);
      }
    }
  }
});

test("resizeBilinear names a bad argument: a box outside the image, a size that is not a positive integer, not an image", () => {
  const src = image(rng(1), 10, 8, 3);
  assert.throws(() => resizeBilinear(src, 0, 0, 11, 8, 4, 4), isInvalid("w"));
  assert.throws(() => resizeBilinear(src, 4, 0, 7, 8, 4, 4), isInvalid("w"));
  assert.throws(() => resizeBilinear(src, 0, 8, 1, 1, 4, 4), isInvalid("y0"));
  assert.throws(() => resizeBilinear(src, -1, 0, 1, 1, 4, 4), isInvalid("x0"));
  assert.throws(() => resizeBilinear(src, 0, 0, 2, 2.5, 4, 4), isInvalid("h"));
  assert.throws(() => resizeBilinear(src, 0, 0, 2, 2, 0, 4), isInvalid("outW"));
  assert.throws(() => resizeBilinear(src, 0, 0, 2, 2, 4, NaN), isInvalid("outH"));
  assert.throws(() => resizeBilinear({ ...src, data: src.data.subarray(1) }, 0, 0, 2, 2, 4, 4), isInvalid("src"));
});

/** The box torchvision's get_params gives when all ten tries fail, written out for the check. */
function fallback(W: number, H: number, ratio: [number, number]): CropBox {
  let w = W, h = H;
  if (W / H < ratio[0]) h = Math.round(W / ratio[0]);
  else if (W / H > ratio[1]) w = Math.round(H * ratio[1]);
  // torchvision would give a side of 0 when the bound rounds to it (1926×1 at ratio ≤ ½): 1 here.
  w = Math.max(1, w), h = Math.max(1, h);
  return { x: Math.floor((W - w) / 2), y: Math.floor((H - h) / 2), w, h };
}

test("randomCropBox: inside the image; area fraction and ratio within the bounds (up to rounding the sides) unless it is the fallback", () => {
  const seed = freshSeed();
  const next = rng(seed);
  let fallbacks = 0, n = 0, lowArea = 0, highArea = 0;
  for (let i = 0; i < 4000; i++) {
    const W = randomInt(next, 1, 3000), H = randomInt(next, 1, 3000);
    const s0 = 0.01 + next() * 0.5, s1 = Math.min(1, s0 + next() * 0.7);
    const r0 = 0.3 + next(), r1 = r0 * (1 + next() * 2);
    const b = randomCropBox(W, H, next, [s0, s1], [r0, r1]);
    const what = `seed ${seed}, ${W}×${H} scale [${s0}, ${s1}] ratio [${r0}, ${r1}]: ${JSON.stringify(b)}`;
    assert.ok([b.x, b.y, b.w, b.h].every(Number.isInteger), what);
    assert.ok(b.x >= 0 && b.y >= 0 && b.w >= 1 && b.h >= 1 && b.x + b.w <= W && b.y + b.h <= H, `${what}: inside`);
    if (JSON.stringify(b) === JSON.stringify(fallback(W, H, [r0, r1]))) {
      fallbacks++;
      continue;
    }
    n++;
    // Each side is a real number rounded, so it may be ½ off either way.
    const area = W * H;
    assert.ok((b.w + 0.5) * (b.h + 0.5) >= s0 * area && (b.w - 0.5) * (b.h - 0.5) <= s1 * area, `${what}: area fraction ${(b.w * b.h) / area}`);
    assert.ok((b.w + 0.5) / (b.h - 0.5) >= r0 && (b.w - 0.5) / (b.h + 0.5) <= r1, `${what}: ratio ${b.w / b.h}`);
    if ((b.w * b.h) / area < s0 + 0.1 * (s1 - s0)) lowArea++;
    if ((b.w * b.h) / area > s1 - 0.1 * (s1 - s0)) highArea++;
  }
  // Random images of any shape: most draws fit in ten tries, and both ends of `scale` are drawn.
  assert.ok(n > 2000 && fallbacks > 0, `seed ${seed}: ${n} drawn, ${fallbacks} fallbacks`);
  assert.ok(lowArea > 50 && highArea > 20, `seed ${seed}: ${lowArea} near the low end, ${highArea} near the high end`);
});

test("randomCropBox: an extreme aspect ratio falls back to the centred box of the nearest ratio; places are uniform", () => {
  const seed = freshSeed();
  const next = rng(seed);
  // 1000×10: the smallest area (800 px) at ratio ≤ 4/3 needs h ≥ 24 > 10, so every try fails.
  assert.equal(randomCropBox(1000, 10, next), { x: 493, y: 0, w: 13, h: 10 });
  assert.equal(randomCropBox(10, 1000, next), { x: 0, y: 493, w: 10, h: 13 });
  // Draws of 0 try the whole area at ratio 50 (1000/√50 … h = 14 > 10) ten times: the image's
  // own ratio, 100, is inside [50, 200], so the fallback is the whole image.
  assert.equal(randomCropBox(1000, 10, () => 0, [1, 1], [50, 200]), { x: 0, y: 0, w: 1000, h: 10 });
  // 120×100 at the whole area: h = √(12000 / ratio) ≥ 104 for ratio ≤ 1.1, so all ten fail; the
  // image's 1.2 is cut to 1.1: 110 wide, centred.
  assert.equal(randomCropBox(120, 100, next, [1, 1], [1, 1.1]), { x: 5, y: 0, w: 110, h: 100 });
  // Scale and ratio pinned: a 50×50 box, its corner uniform over 0…50 on each axis.
  const xs: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const b = randomCropBox(100, 100, next, [0.25, 0.25], [1, 1]);
    assert.equal([b.w, b.h], [50, 50]);
    xs.push(b.x, b.y);
  }
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  assert.ok(Math.min(...xs) === 0 && Math.max(...xs) === 50 && Math.abs(mean - 25) < 1.5, `seed ${seed}: corners ${Math.min(...xs)}…${Math.max(...xs)}, mean ${mean}`);
});

test("randomCropBox names bad arguments", () => {
  const r = rng(1);
  assert.throws(() => randomCropBox(0, 10, r), isInvalid("width"));
  assert.throws(() => randomCropBox(10, 2.5, r), isInvalid("height"));
  assert.throws(() => randomCropBox(10, 10, 3 as never), isInvalid("random"));
  assert.throws(() => randomCropBox(10, 10, r, [0.5, 0.1]), isInvalid("scale"));
  assert.throws(() => randomCropBox(10, 10, r, [0, 1]), isInvalid("scale"));
  assert.throws(() => randomCropBox(10, 10, r, [0.1, 2]), isInvalid("scale"));
  assert.throws(() => randomCropBox(10, 10, r, [0.1, 1], [0, 1]), isInvalid("ratio"));
  assert.throws(() => randomCropBox(10, 10, r, [0.1, 1], [1, NaN]), isInvalid("ratio"));
  assert.throws(() => randomCropBox(10, 10, r, [0.1, 1], "4:3" as never), isInvalid("ratio"));
});

test("decodeScaleFor: the largest reduction that leaves both sides of the box ≥ size; mapBox keeps the box within ½ scaled pixel", () => {
  const cases: Array<[number, number, number, number]> = [
    [1792, 1792, 224, 0.125], [1791, 4000, 224, 0.25], [896, 900, 224, 0.25], [895, 900, 224, 0.5],
    [448, 448, 224, 0.5], [447, 2000, 224, 1], [4000, 300, 224, 1], [100, 100, 224, 1], [64, 80, 8, 0.125],
  ];
  for (const [w, h, size, s] of cases) assert.is(decodeScaleFor({ w, h }, size), s, `${w}×${h} for ${size}`);
  const seed = freshSeed();
  const next = rng(seed);
  for (let i = 0; i < 2000; i++) {
    const W = randomInt(next, 1, 5000), H = randomInt(next, 1, 5000);
    const b = randomCropBox(W, H, next);
    const size = randomInt(next, 1, 300);
    const s = decodeScaleFor(b, size);
    const m = mapBox(b, s, Math.ceil(W * s), Math.ceil(H * s));
    const what = `seed ${seed}, ${W}×${H} box ${JSON.stringify(b)} size ${size} at ${s}: ${JSON.stringify(m)}`;
    assert.ok(m.x >= 0 && m.y >= 0 && m.x + m.w <= Math.ceil(W * s) && m.y + m.h <= Math.ceil(H * s), `${what}: inside`);
    for (const [a, e] of [[m.x, b.x], [m.y, b.y], [m.x + m.w, b.x + b.w], [m.y + m.h, b.y + b.h]]) {
      assert.ok(Math.abs(a / s - e) <= 0.5 / s, `${what}: an edge moved more than ½ scaled pixel`);
    }
    if (s < 1) assert.ok(m.w >= size && m.h >= size, `${what}: scaled box under ${size}`);
  }
});

test("jpegFrameSize reads the frame header of real JPEGs (baseline, progressive, grey) and refuses what is not one", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (const args of [["-quality", "80"], ["-progressive"], ["-grayscale", "-restart", "1"]]) {
    const w = randomInt(next, 1, 300), h = randomInt(next, 1, 300);
    const bytes = cjpeg(randomBytes(next, w * h * 3), w, h, 3, args);
    assert.equal(jpegFrameSize(bytes), { width: w, height: h }, `seed ${seed}, ${w}×${h} ${args.join(" ")}`);
  }
  assert.is(jpegFrameSize(new Uint8Array([0x89, 0x50, 0x4e, 0x47])), undefined);
  assert.is(jpegFrameSize(Uint8Array.of(0xff, 0xd8, 0xff, 0xda, 0, 2)), undefined);
  assert.is(jpegFrameSize(Uint8Array.of(0xff, 0xd8, 0xff)), undefined);
});

test("frameSize reads a JPEG's SOF and a PNG's IHDR without decoding, and answers undefined for anything else", () => {
  const seed = freshSeed();
  const next = rng(seed);
  const w = randomInt(next, 1, 300), h = randomInt(next, 1, 300);
  assert.equal(frameSize(cjpeg(randomBytes(next, w * h), w, h, 1)), { width: w, height: h }, `seed ${seed}`);
  const png = buildPng({ width: w, height: h, bitDepth: 8, colorType: 0, raw: new Uint8Array((w + 1) * h) });
  assert.equal(frameSize(png), { width: w, height: h }, `seed ${seed}`);
  assert.is(frameSize(png.subarray(0, 20)), undefined);
  assert.is(frameSize(Uint8Array.of(0x47, 0x49, 0x46, 0x38, 0x39, 0x61)), undefined);
});

test("planImage draws the boxes it drew before it moved from src/gpu/pack.ts (pinned: 40 sizes, policies, seeds, epochs and ids)", () => {
  const policies: CropPolicy[] = [{ kind: "resize" }, { kind: "center" }, { kind: "center", resize: 40 }, { kind: "random-resized" }, { kind: "random-resized", scale: [0.3, 0.9], ratio: [0.5, 2] }];
  const all = Array.from({ length: 40 }, (_, i) => {
    const w = 17 + ((i * 37) % 300), h = 11 + ((i * 53) % 200);
    const o = { width: 24 + (i % 3) * 8, height: 24 + (i % 2) * 8, crop: policies[i % 5], flip: (i % 4) / 4, seed: i * 7 + 1 };
    return planImage(w, h, o, i % 3, i % 2 ? `6ceecba5-0000-5000-8000-${String(i).padStart(12, "0")}` : i);
  });
  // The digest of the same 40 plans from the planner as it was in src/gpu/pack.ts.
  assert.is(hash32(JSON.stringify(all)), 1727694723);
});

test("planRegion: resampling the region with the plan moved into it gives the whole image's output (the reference's taps), for random plans, antialiased or not", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let k = 0; k < 300; k++) {
    const W = randomInt(next, 1, 120), H = randomInt(next, 1, 120);
    const outW = randomInt(next, 1, 24), outH = randomInt(next, 1, 24);
    const kind = randomInt(next, 0, 3);
    const crop: CropPolicy = kind === 0 ? { kind: "resize" } : kind === 1 ? { kind: "center", resize: randomInt(next, 1, 60) } : { kind: "random-resized", scale: [0.01, 1], ratio: [0.3, 3] };
    const plan = planImage(W, H, { width: outW, height: outH, crop, flip: 0.5, seed }, k, k);
    const above = [1, 1.5, 2, 1e9][randomInt(next, 0, 3)];
    const r = planRegion(plan, W, H, outW, outH, above);
    const what = `seed ${seed}, case ${k}: ${W}×${H} → ${outW}×${outH}, plan ${JSON.stringify(plan)}, region ${JSON.stringify(r)}`;
    assert.ok(r.x >= 0 && r.y >= 0 && r.width >= 1 && r.height >= 1 && r.x + r.width <= W && r.y + r.height <= H, what);
    const img = { data: randomBytes(next, W * H), width: W, height: H, channels: 1 };
    const part = new Uint8Array(r.width * r.height);
    for (let y = 0; y < r.height; y++) part.set(img.data.subarray((r.y + y) * W + r.x, (r.y + y) * W + r.x + r.width), y * r.width);
    const o = { width: outW, height: outH, channels: 1 as const, layout: "nchw" as const, mean: [0], std: [1], antialiasAbove: above };
    const want = preprocessRef(img, plan, o);
    const got = preprocessRef({ data: part, width: r.width, height: r.height, channels: 1 }, { ...plan, x: plan.x - r.x, y: plan.y - r.y }, o);
    for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) < 1e-9, `${what}: output ${i} is ${got[i]}, the whole image's ${want[i]}`);
  }
});

/** A worker context over a real decoder that records each decode's scale and every draw. */
function context(decode: (b: Uint8Array, o?: DecodeOptions) => Image, seed: number) {
  const next = rng(seed);
  const draws: number[] = [];
  const scales: number[] = [];
  const decoded: Image[] = [];
  const ctx: TransformContext = {
    decode(b, o) {
      scales.push(o?.scale ?? 1);
      const img = decode(b, o);
      decoded.push(img);
      return img;
    },
    random() {
      const r = next();
      draws.push(r);
      return r;
    },
  };
  return { ctx, draws, scales, decoded };
}

/** The draws again, in order, for re-deriving the box the transform drew. */
function replay(draws: number[]): () => number {
  let i = 0;
  return () => draws[i++];
}

test("the transform on a real 2000×1500 JPEG: size × size, only its box decoded, once, at decodeScaleFor's scale; equal to cropping the whole decode (exactly, as before regions) and to its reference (≤ 1) and to the full decode's block means (≤ 4)", async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const W = 2000, H = 1500;
  // Smooth content (periods of hundreds of pixels, random phases): a ⅛ decode's pixel is then
  // its 8×8 block's mean, which equals the value at the block's centre up to the curvature
  // (amplitude·(2π/period)²·8²/24 < 0.1 here), so scaled and full decodes agree to the
  // decoder's own rounding. Noise would not: the reduction averages what a resize would skip.
  const px = new Uint8Array(W * H * 3);
  const ph = Array.from({ length: 6 }, () => next() * 6.28);
  const across = Array.from({ length: 3 }, (_, c) => Float64Array.from({ length: W }, (_, x) => 50 * Math.sin(x / (70 + 20 * c) + ph[c])));
  const down = Array.from({ length: 3 }, (_, c) => Float64Array.from({ length: H }, (_, y) => Math.cos(y / (90 + 15 * c) + ph[c + 3])));
  for (let y = 0, k = 0; y < H; y++) {
    for (let x = 0; x < W; x++) for (let c = 0; c < 3; c++) px[k++] = 128 + across[c][x] * down[c][y];
  }
  const bytes = cjpeg(px, W, H, 3, ["-quality", "98", "-sample", "2x2"]);
  const full = jpeg.decode(bytes);
  const means = new Map<number, ReturnType<typeof blockMeanRef>>();
  const meanAt = (s: number) => means.get(s) ?? means.set(s, blockMeanRef(full, 1 / s)).get(s)!;
  const used = new Set<number>();
  const runs: Array<{ size: number; scale?: [number, number] }> = [
    { size: 64, scale: [0.5, 1] }, // sides ≥ 1060 px: ⅛
    { size: 224 }, { size: 224 }, { size: 224 }, { size: 224 }, { size: 224 },
    { size: 224, scale: [0.9, 1] }, // sides ≥ 1233: ¼ or ½
    { size: 700, scale: [0.02, 0.05] }, // sides ≤ 460: full scale, upsampled
  ];
  for (const [k, o] of runs.entries()) {
    const { ctx, draws, scales, decoded } = context((b, d) => jpeg.decode(b, d), seed + k);
    const out = transform({ id: `s${k}`, label: 0, data: bytes }, { ...o, flip: true }, ctx);
    const what = `seed ${seed}+${k}, ${JSON.stringify(o)}`;
    assert.equal([out.width, out.height, out.channels], [o.size, o.size, 3], what);
    // The same draws give the box; the one after it is the flip's.
    const box = randomCropBox(W, H, replay(draws), o.scale, undefined);
    const s = decodeScaleFor(box, o.size);
    assert.equal(scales, [s], `${what}: one decode, at the scale for ${JSON.stringify(box)}`);
    const flip = draws[draws.length - 1] < 0.5;
    used.add(s);
    if (o.size === 64) assert.is(s, 0.125, `${what}: a small crop size takes the ⅛ decode`);
    // Against the decode at that scale: the mapped box, resized by the reference.
    const scaled = jpeg.decode(bytes, { scale: s as JpegScale });
    const m = mapBox(box, s, scaled.width, scaled.height);
    assert.equal([decoded[0].width, decoded[0].height], [m.w, m.h], `${what}: only the mapped box is decoded`);
    // What the transform gave before it decoded regions: the whole decode at that scale, cropped.
    const before = resizeBilinear(scaled, m.x, m.y, m.w, m.h, o.size, o.size).data;
    assert.equal(out.data, flip ? mirrored(out, before) : before, `${what}: the same pixels as the whole decode's crop`);
    let want = rounded(resizeBilinearRef(scaled, m.x, m.y, m.w, m.h, o.size, o.size));
    if (flip) want = mirrored(out, want);
    const d = maxAbsDiff(out.data, want);
    assert.ok(d.max <= 1, `${what}: max |diff| ${d.max} against the reference on the 1/${1 / s} decode`);
    // Against the full decode: its 1/s block means (the reduced IDCT's definition, see
    // blockMeanRef) cropped by the reference. The scaled decode is its own rounding of those
    // means (≤ 2 seen on smooth images at q98 in 4:2:0, 4:4:4 and grey, against djpeg-matched
    // full decodes), the resize adds ≤ 1; 4 is also the decoder tests' bound.
    let wantFull = rounded(resizeBilinearRef(meanAt(s), m.x, m.y, m.w, m.h, o.size, o.size));
    if (flip) wantFull = mirrored(out, wantFull);
    const f = maxAbsDiff(out.data, wantFull);
    assert.ok(f.max <= MAX_ABS_SCALED, `${what}: max |diff| ${f.max} at 1/${1 / s} against the reference on the full decode's block means`);
  }
  assert.ok(used.has(0.125) && used.has(1) && used.size >= 3, `seed ${seed}: scales used ${[...used]}`);
});

test("the transform crops sample.image when the loader decoded already, without decoding; flip mirrors on draws < ½", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const C = ([1, 3] as const)[randomInt(next, 0, 1)];
  const img = image(next, randomInt(next, 50, 400), randomInt(next, 50, 400), C);
  const flips = new Set<boolean>();
  for (let k = 0; k < 12; k++) {
    const { ctx, draws, scales } = context(() => assert.unreachable("decoded again") as never, seed + k);
    const out = transform({ id: "x", label: 1, data: new Uint8Array(0), image: img }, { size: 32 }, ctx);
    const box = randomCropBox(img.width, img.height, replay(draws));
    const flip = draws[draws.length - 1] < 0.5;
    flips.add(flip);
    let want = rounded(resizeBilinearRef(img, box.x, box.y, box.w, box.h, 32, 32));
    if (flip) want = mirrored(out, want);
    assert.ok(maxAbsDiff(out.data, want).max <= 1, `seed ${seed}+${k}: ${JSON.stringify(box)} flip ${flip}`);
    assert.equal(scales, []);
    assert.is(out.channels, C);
  }
  assert.is(flips.size, 2, `seed ${seed}: both flips in 12 draws`);
  // flip: false draws nothing after the box.
  const { ctx, draws } = context(() => img, seed);
  transform({ id: "x", label: 1, data: new Uint8Array(0), image: img }, { size: 8, flip: false }, ctx);
  const replayed: number[] = [];
  randomCropBox(img.width, img.height, () => (replayed.push(0), draws[replayed.length - 1]));
  assert.is(draws.length, replayed.length);
});

test("the transform names bad options", () => {
  const img = image(rng(2), 20, 20, 3);
  const { ctx } = context(() => img, 1);
  const sample = { id: "x", label: 0, data: new Uint8Array(0), image: img };
  assert.throws(() => transform(sample, { size: 0 }, ctx), isInvalid("size"));
  assert.throws(() => transform(sample, { size: 22.5 }, ctx), isInvalid("size"));
  assert.throws(() => transform(sample, { size: "224" as never }, ctx), isInvalid("size"));
  assert.throws(() => transform(sample, { flip: "yes" as never }, ctx), isInvalid("flip"));
  assert.throws(() => transform(sample, { scale: [0.5, 0.2] }, ctx), isInvalid("scale"));
  assert.throws(() => transform(sample, { ratio: [-1, 1] }, ctx), isInvalid("ratio"));
  assert.throws(() => transform(sample, 7 as never, ctx), (e: unknown) => e instanceof CassetteError && e.code === "ERR_INVALID_OPTION");
});
