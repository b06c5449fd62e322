/**
 * Writes an ImageNet-like set for the read benchmark: N colour JPEGs of 500×375 (ImageNet's
 * most common size) of ~110 kB (ImageNet-1k's mean is ~110 kB; "Hiding Latencies…"
 * (arXiv:2503.22643), Table 1: 115 kB), each a different crop, scale and mirror of a real
 * photograph, encoded by libjpeg-turbo's cjpeg at the quality that brings it nearest a size drawn
 * around 110 kB. Seeded: the same arguments give the same files. Called by make_imagenet_like.sh
 * (which fetches the photos); see README.md.
 *
 *   bun bench/read/make_imagenet_like.ts --sources A.ppm,B.ppm --out DIR [--n 2000] [--seed 1]
 *
 * Files go to DIR/class_K/img_NNNNN.jpg (K = N mod 10), an ImageFolder `cassette ingest` reads.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
// The tests' seeded PRNG (mulberry32): the same seed makes the same set.
import { rng } from "../../test/_support/random.ts";
import { pnm } from "../../test/_support/cjpeg.ts";
import { benchArgs } from "../_lib/args.ts";

const args = benchArgs({
  program: "bench/read/make_imagenet_like.ts",
  usage: "usage: bun bench/read/make_imagenet_like.ts --sources A.ppm,B.ppm --out DIR [--n 2000] [--seed 1]",
  valued: ["sources", "out", "n", "seed"],
});
const sources = args.list("sources", []);
if (!sources.length) args.fail("needs --sources A.ppm,B.ppm");
const out = args.required("out");
const n = args.int("n", 2000);
const seed = args.int("seed", 1, 0);
const W = 500, H = 375;

/** A binary PPM (P6, maxval 255). */
function readPpm(path: string): { w: number; h: number; px: Uint8Array } {
  const b = readFileSync(path);
  const head: string[] = [];
  let i = 0;
  while (head.length < 4) {
    while (/\s/.test(String.fromCharCode(b[i]))) i++;
    if (b[i] === 0x23) { while (b[i] !== 0x0a) i++; continue; } // comment
    let s = "";
    while (!/\s/.test(String.fromCharCode(b[i]))) s += String.fromCharCode(b[i++]);
    head.push(s);
  }
  if (head[0] !== "P6" || head[3] !== "255") throw new Error(`${path}: not a P6 PPM with maxval 255`);
  const w = Number(head[1]), h = Number(head[2]);
  return { w, h, px: new Uint8Array(b.buffer, b.byteOffset + i + 1, w * h * 3) };
}

/** W×H bilinear resample of the region (x0, y0, cw, ch) of `src`, mirrored if `flip`. */
function cropScale(src: { w: number; h: number; px: Uint8Array }, x0: number, y0: number, cw: number, ch: number, flip: boolean): Uint8Array {
  const dst = new Uint8Array(W * H * 3);
  for (let y = 0; y < H; y++) {
    const sy = Math.min(src.h - 1.001, y0 + ((y + 0.5) * ch) / H - 0.5);
    const y1 = Math.max(0, Math.floor(sy)), fy = Math.max(0, sy - y1);
    for (let x = 0; x < W; x++) {
      const xx = flip ? W - 1 - x : x;
      const sx = Math.min(src.w - 1.001, x0 + ((xx + 0.5) * cw) / W - 0.5);
      const x1 = Math.max(0, Math.floor(sx)), fx = Math.max(0, sx - x1);
      for (let c = 0; c < 3; c++) {
        const p = (yy: number, xq: number) => src.px[(yy * src.w + xq) * 3 + c];
        const top = p(y1, x1) * (1 - fx) + p(y1, x1 + 1) * fx;
        const bot = p(y1 + 1, x1) * (1 - fx) + p(y1 + 1, x1 + 1) * fx;
        dst[(y * W + x) * 3 + c] = Math.round(top * (1 - fy) + bot * fy);
      }
    }
  }
  return dst;
}

const photos = sources.map(readPpm);
const r = rng(seed);
const QUALITIES = [70, 75, 80, 85, 88, 90, 92, 94, 95, 96, 97, 98, 99, 100];
let total = 0;
for (let i = 0; i < n; i++) {
  const src = photos[i % photos.length];
  // A crop of 0.6–1.0 of the largest 4:3 region, anywhere in the photo, maybe mirrored.
  const full = Math.min(src.w, (src.h * 4) / 3);
  const cw = full * (0.6 + 0.4 * r()), ch = (cw * 3) / 4;
  const x0 = r() * (src.w - cw), y0 = r() * (src.h - ch), flip = r() < 0.5;
  const ppm = pnm(cropScale(src, x0, y0, cw, ch, flip), W, H, 3);
  // The quality whose file is nearest a target size drawn from 110 kB ± 25 %.
  const target = 110_000 * (0.75 + 0.5 * r());
  const dir = join(out!, `class_${i % 10}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `img_${String(i).padStart(5, "0")}.jpg`);
  // Size grows with quality: bisect over QUALITIES (≈ 4 encodes), keep the nearest.
  let best = { q: 0, size: Infinity }, lo = 0, hi = QUALITIES.length - 1;
  const encode = (q: number) => {
    const c = spawnSync("cjpeg", ["-quality", String(q), "-outfile", file], { input: ppm });
    if (c.status !== 0) throw new Error(`cjpeg failed: ${c.stderr}`);
    const size = statSync(file).size;
    if (Math.abs(size - target) < Math.abs(best.size - target)) best = { q, size };
    return size;
  };
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (encode(QUALITIES[mid]) > target) hi = mid - 1;
    else lo = mid + 1;
  }
  if (statSync(file).size !== best.size) encode(best.q);
  total += best.size;
  if ((i + 1) % 200 === 0) console.log(`${i + 1}/${n}, mean ${(total / (i + 1) / 1000).toFixed(1)} kB`);
}
console.log(`${n} JPEGs of ${W}×${H} in ${out}, mean ${(total / n / 1000).toFixed(1)} kB`);
