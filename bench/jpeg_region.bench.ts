/**
 * Decoding only what a crop needs (issue 37): RandomResizedCrop boxes (scale 0.08–1, ratio
 * 3/4–4/3, as torchvision's) on photos of ImageNet's size, one thread, each box's pixels made
 * three ways in the same run, interleaved:
 *
 *   - whole decode, then crop: the file decoded, the box's rows copied out (what a loader
 *     that decodes every pixel does before its crop);
 *   - region: `region` at scale 1, the same pixels (test/decode/region.test.ts);
 *   - region + scale: `region` at the smallest size that still covers a 224×224 output (the
 *     largest of 1, 1/2, 1/4, 1/8 at which the scaled box is ≥ 224 each way), what the resize
 *     to 224 then reads;
 *   - region, restart markers: the same photos with a restart interval every MCU row
 *     (`jpegtran -restart 1`, lossless, as many cameras write them), where the rows above a box
 *     are passed over unread (NOTE [ Skipping restart intervals ], wasm/jpeg/scan.ts).
 *
 * Beside the two region decodes, libjpeg-turbo decoding the same boxes at the same scales with
 * its partial decompression (bench/jpeg/turbo_loop.c: scale_denom, jpeg_crop_scanline,
 * jpeg_skip_scanlines, abort after the box), timed inside its own process; both in megapixels
 * of the box per second (libjpeg-turbo's crop widens the columns to whole iMCUs: those extra
 * pixels are its cost, not counted as work).
 *
 * Then the hybrid decode's CPU side: the entropy decoding alone (`decodeDct`), of the whole image
 * and of the blocks a box's pixels read, beside the whole and region pixel decodes.
 *
 * Then the whole RandomResizedCrop(224) transform (src/decode/transforms/random_resized_crop.ts,
 * what read workers run per sample) against what it did before regions: the whole decode at
 * its scale, then the crop and resize.
 *
 *   node_modules/.bin/bun bench/jpeg_region.bench.ts [--quick] [--boxes N] [--out SIZE]
 *
 * Inputs: bench/jpeg/data/photos (bench/jpeg/make_inputs.sh: five real photos, 640×427 and
 * 640×400, q90 4:2:0). Figures: boxes (or samples, megapixels) per second, fastest round, the
 * median beside it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { compare, printTable } from "./_lib/compare.ts";
import { runTurbo } from "./_lib/turbo.ts";
import { makeInputs } from "./_lib/inputs.ts";
import { benchArgs } from "./_lib/args.ts";
import { createJpegDecoder } from "../src/decode/jpeg.ts";
import { randomCropBox, resizeBilinear } from "../src/decode/crop.ts";
import { decodeScaleFor, mapBox, transform } from "../src/decode/transforms/random_resized_crop.ts";
import type { DecodeScale } from "../src/decode/decoder.ts";
import { rng } from "../src/plan/rng.ts";

const args = benchArgs({
  program: "bench/jpeg_region.bench.ts",
  usage: `usage: bun bench/jpeg_region.bench.ts [--quick] [--boxes N] [--out SIZE]

  RandomResizedCrop boxes on five photos, one thread: whole decode then crop, region decode,
  and region decode at the scale that still covers SIZE×SIZE, with libjpeg-turbo's partial
  decompression of the same boxes; then the RandomResizedCrop transform before and after.

  --quick     3 rounds instead of 11, 40 boxes per photo instead of 200
  --boxes N   boxes per photo (default 200)
  --out SIZE  the crop's output side (default 224): picks the region's scale`,
  valued: ["boxes", "out"],
  flags: ["quick"],
});
const quick = args.has("quick");
const rounds = quick ? 3 : 11;
const perPhoto = args.int("boxes", quick ? 40 : 200);
const outSide = args.int("out", 224);

const HERE = fileURLToPath(new URL("./jpeg/", import.meta.url));
makeInputs("jpeg_region.bench.ts", HERE + "make_inputs.sh", "run bash bench/jpeg/make_inputs.sh where the Debian mirror is reachable (it fetches the photos once)");
const dir = `${HERE}data/photos/`;
const paths = readdirSync(dir).filter((f) => f.endsWith(".jpg")).sort().map((f) => dir + f);

const dec = await createJpegDecoder();
type Box = { x: number; y: number; width: number; height: number };
interface Job { path: string; bytes: Uint8Array; restarts: Uint8Array; box: Box; scale: DecodeScale }
const jobs: Job[] = [];
const random = rng(7, 0x37);
for (const path of paths) {
  const bytes = readFileSync(path);
  const t = spawnSync("jpegtran", ["-restart", "1", "-copy", "all"], { input: bytes, maxBuffer: 1 << 26 });
  if (t.status !== 0) throw new Error(`jpegtran -restart 1 ${path} failed: ${t.stderr}`);
  const restarts = new Uint8Array(t.stdout);
  const { width, height } = dec.inspect(bytes);
  for (let i = 0; i < perPhoto; i++) {
    const b = randomCropBox(width, height, random.next);
    // The largest reduction whose scaled box still covers the output each way.
    let scale: DecodeScale = 1;
    for (const s of [0.5, 0.25, 0.125] as const) if (Math.ceil(b.w * s) >= outSide && Math.ceil(b.h * s) >= outSide) scale = s;
    jobs.push({ path, bytes, restarts, box: { x: b.x, y: b.y, width: b.w, height: b.h }, scale });
  }
}
const scaled = jobs.filter((j) => j.scale < 1).length;
console.log(`${jobs.length} boxes on ${paths.length} photos; ${scaled} of them decoded at a reduced scale for a ${outSide}×${outSide} output`);

let sink = 0;
let crop = new Uint8Array(1 << 20);
// Every contender writes into one reused buffer (decodeInto), as libjpeg-turbo's loop does: a
// fresh array per image would add the allocator's cost (~20 % of a whole decode here).
const target = new Uint8Array(8 << 20);
const boxRows = await compare(`RandomResizedCrop boxes, one thread`, { rounds, unit: "boxes/s" }, [
  {
    name: "whole decode, then crop",
    baseline: true,
    work: jobs.length,
    run: () => {
      for (const { bytes, box } of jobs) {
        const img = dec.decodeInto(bytes, target, 0);
        const row = box.width * img.channels;
        if (crop.length < row * box.height) crop = new Uint8Array(row * box.height);
        for (let y = 0; y < box.height; y++) {
          const from = ((box.y + y) * img.width + box.x) * img.channels;
          crop.set(target.subarray(from, from + row), y * row);
        }
        sink += crop[0];
      }
    },
  },
  {
    name: "region",
    work: jobs.length,
    run: () => {
      for (const { bytes, box } of jobs) sink += dec.decodeInto(bytes, target, 0, { region: box }).bytes;
    },
  },
  {
    name: `region + scale (covers ${outSide})`,
    work: jobs.length,
    run: () => {
      for (const { bytes, box, scale } of jobs) sink += dec.decodeInto(bytes, target, 0, { region: box, scale }).bytes;
    },
  },
  {
    name: "region, restart markers every MCU row",
    work: jobs.length,
    run: () => {
      for (const { restarts, box } of jobs) sink += dec.decodeInto(restarts, target, 0, { region: box }).bytes;
    },
  },
]);

// The hybrid decode's CPU side (decode: "hybrid"): the entropy decoding only, of the whole
// image or of the blocks each box's pixels read, against the CPU decodes above; the GPU then
// does the rest (src/gpu/idct.ts). What a GPU machine's cores spend per sample.
await compare(`The hybrid decode's CPU side: RandomResizedCrop boxes, one thread`, { rounds, unit: "boxes/s" }, [
  {
    name: "whole decode (pixels)",
    baseline: true,
    work: jobs.length,
    run: () => {
      for (const { bytes } of jobs) sink += dec.decodeInto(bytes, target, 0).bytes;
    },
  },
  {
    name: "region (pixels)",
    work: jobs.length,
    run: () => {
      for (const { bytes, box } of jobs) sink += dec.decodeInto(bytes, target, 0, { region: box }).bytes;
    },
  },
  {
    name: "whole image's DCT blocks (hybrid)",
    work: jobs.length,
    run: () => {
      for (const { bytes } of jobs) sink += dec.decodeDct(bytes)!.components.length;
    },
  },
  {
    name: "region's DCT blocks (hybrid, planned)",
    work: jobs.length,
    run: () => {
      for (const { bytes, box } of jobs) sink += dec.decodeDct(bytes, { region: box })!.components.length;
    },
  },
]);

// Against libjpeg-turbo: megapixels of the boxes per second, at scale 1 and at each box's scale.
for (const atScale of [false, true]) {
  const name = atScale ? `region + scale (covers ${outSide})` : "region";
  const mpx = jobs.reduce((n, j) => {
    const img = dec.decode(j.bytes, { region: j.box, ...(atScale ? { scale: j.scale } : {}) });
    return n + img.width * img.height;
  }, 0) / 1e6;
  const ours = boxRows.find((r) => r.name === name)!;
  const perBox = mpx / jobs.length;
  const turbo = runTurbo(jobs.map((j) => `${j.path} ${j.box.x} ${j.box.y} ${j.box.width} ${j.box.height} ${atScale ? 1 / j.scale : 1}`), rounds);
  if (!turbo) continue;
  const base = { name: `cassette ${name}`, best: ours.best * perBox, median: ours.median * perBox, spread: ours.spread, ratio: 1 };
  const peer = { name: "libjpeg-turbo (C), the same boxes", best: turbo.best, median: turbo.median, spread: turbo.spread, ratio: turbo.best / base.best };
  printTable(`boxes ${atScale ? "at their scales" : "at scale 1"}, with libjpeg-turbo's partial decompression (C, timed inside its own process)`, "Mpx/s", [base, peer].sort((a, b) => b.best - a.best), base.name, rounds);
}

// The transform, box by box with the same draws each round.
const ctxFor = (seed: number) => {
  const r = rng(seed, 0x41);
  return { decode: (b: Uint8Array, o?: Parameters<typeof dec.decode>[1]) => dec.decode(b, o), random: r.next };
};
await compare(`RandomResizedCrop(${outSide}) + flip, per sample, one thread`, { rounds, unit: "samples/s" }, [
  {
    name: "whole decode at its scale, crop, resize (before)",
    baseline: true,
    work: jobs.length,
    run: () => {
      const ctx = ctxFor(1);
      for (const { bytes } of jobs) {
        const { width, height } = dec.inspect(bytes);
        const box = randomCropBox(width, height, ctx.random);
        const s = decodeScaleFor(box, outSide);
        const img = dec.decode(bytes, { scale: s });
        const m = mapBox(box, s, img.width, img.height);
        sink += resizeBilinear(img, m.x, m.y, m.w, m.h, outSide, outSide).data[0] + (ctx.random() < 0.5 ? 1 : 0);
      }
    },
  },
  {
    name: "the transform (region decode)",
    work: jobs.length,
    run: () => {
      const ctx = ctxFor(1);
      for (const { bytes } of jobs) sink += transform({ id: "", label: 0, data: bytes }, { size: outSide }, ctx).data[0];
    },
  },
]);
if (sink < 0) console.log(sink);
