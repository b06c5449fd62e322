/**
 * How fast does cassette's wasm PNG decoder turn PNG files into pixels, next to a maintained
 * JavaScript decoder, on the same inputs in the same run, one thread?
 *
 *   node_modules/.bin/bun bench/png.bench.ts            # 11 rounds
 *   node_modules/.bin/bun bench/png.bench.ts --quick    # 3 rounds
 *
 * Peer: fast-png (image-js; pure JS, inflate by fflate), with `checkCrc: true` so that both check
 * every chunk's CRC as cassette always does, and palettes expanded to RGB(A)
 * (`convertIndexedToRgb`) as cassette gives them; 16-bit files are kept at 16 bits by both
 * (cassette's `depth16`). sharp (libvips → libspng/libpng, native) runs beside them when it
 * loads, for scale. Inputs are made once by ImageMagick into a temporary folder (plasma
 * fractals, blurred, so deflate finds matches as in photos; seeded, so every run decodes the
 * same files). Figures: megapixels per second, fastest round (the median beside it).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { convertIndexedToRgb, decode as fastPngDecode } from "fast-png";
import { compare, type Contender } from "./_lib/compare.ts";
import { benchArgs } from "./_lib/args.ts";
import { createPngDecoder, type PngDecodeOptions } from "../src/decode/png.ts";
import { runtime } from "../runtime-adapters/index.ts";

const args = benchArgs({
  program: "bench/png.bench.ts",
  usage: `usage: bun bench/png.bench.ts [--quick]

  Decodes five groups of PNGs (224×224 RGB crops, a large RGB photo-like image, RGBA,
  an 8-bit palette, 16-bit grey, and an Adam7 RGB) with cassette and fast-png (and sharp
  when it loads), interleaved, one thread, and prints Mpx/s with ratios.

  --quick   3 rounds instead of 11`,
  flags: ["quick"],
});
const ROUNDS = args.has("quick") ? 3 : 11;

// ─── inputs ──────────────────────────────────────────────────────────────────────────────────

const DIR = join(tmpdir(), "cassette-png-bench-v1");
mkdirSync(DIR, { recursive: true });

/** A PNG made by ImageMagick from a seeded plasma (cached in DIR). */
function make(name: string, size: string, seed: number, out: string[]): Uint8Array {
  const file = join(DIR, name);
  if (!existsSync(file)) {
    const a = ["-seed", String(seed), "-size", size, "plasma:fractal", "-blur", "0x1", "-depth", "8", ...out.slice(0, -1), `${out[out.length - 1]}${file}`];
    const r = spawnSync("convert", a, { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`convert ${a.join(" ")} failed: ${r.stderr || r.error}`);
  }
  return new Uint8Array(readFileSync(file));
}

interface Group {
  title: string;
  inputs: Uint8Array[];
  options?: PngDecodeOptions;
}

const groups: Group[] = [
  { title: "100 × 224×224 RGB crops", inputs: Array.from({ length: 100 }, (_, i) => make(`crop${i}.png`, "224x224", 100 + i, ["-define", "png:color-type=2", "png:"])) },
  { title: "RGB 2048×1536", inputs: [make("large_rgb.png", "2048x1536", 1, ["-define", "png:color-type=2", "png:"])] },
  { title: "RGBA 1024×1024", inputs: [make("rgba.png", "1024x1024", 2, ["-alpha", "set", "-channel", "A", "-evaluate", "set", "70%", "+channel", "-define", "png:color-type=6", "png:"])] },
  { title: "palette (PNG8) 1024×1024", inputs: [make("palette.png", "1024x1024", 3, ["-colors", "200", "PNG8:"])] },
  { title: "16-bit grey 1024×1024", inputs: [make("grey16.png", "1024x1024", 4, ["-colorspace", "gray", "-depth", "16", "-define", "png:color-type=0", "-define", "png:bit-depth=16", "png:"])], options: { depth16: true } },
  { title: "Adam7 RGB 1024×768", inputs: [make("adam7.png", "1024x768", 5, ["-interlace", "PNG", "-define", "png:color-type=2", "png:"])] },
];

// ─── contenders ──────────────────────────────────────────────────────────────────────────────

const cassette = await createPngDecoder();
let sharp: ((b: Uint8Array) => Promise<unknown>) | undefined;
try {
  const mod = (await import("sharp")).default;
  mod.concurrency(1);
  sharp = (b) => mod(b).raw().toBuffer();
} catch (e) {
  console.log(`sharp skipped: ${(e as Error).message.split("\n")[0]}`);
}

function fastPng(bytes: Uint8Array): { data: ArrayLike<number> } {
  const img = fastPngDecode(bytes, { checkCrc: true });
  return img.palette ? { data: convertIndexedToRgb(img) } : img;
}

const summary: string[] = [];
for (const g of groups) {
  // The two must agree on every sample before they are timed.
  for (const bytes of g.inputs) {
    const ours = cassette.decode(bytes, g.options);
    const theirs = fastPng(bytes).data;
    const mine = ours.bitDepth === 16 ? new Uint16Array(ours.data.buffer) : ours.data;
    if (mine.length !== theirs.length || mine.some((v, i) => v !== theirs[i])) throw new Error(`${g.title}: cassette and fast-png disagree`);
  }
  const mpx = g.inputs.reduce((n, b) => {
    const v = new DataView(b.buffer, b.byteOffset);
    return n + (v.getUint32(16) * v.getUint32(20)) / 1e6;
  }, 0);
  const kib = g.inputs.reduce((n, b) => n + b.length, 0) / 1024;
  const contenders: Contender[] = [
    { name: "cassette (wasm)", work: mpx, run: () => { for (const b of g.inputs) cassette.decode(b, g.options); } },
    { name: "fast-png", work: mpx, baseline: true, run: () => { for (const b of g.inputs) fastPng(b); } },
  ];
  if (sharp) contenders.push({ name: "sharp (native)", work: mpx, run: async () => { for (const b of g.inputs) await sharp!(b); } });
  const rows = await compare(`${g.title}: ${g.inputs.length} file(s), ${mpx.toFixed(2)} Mpx, ${kib.toFixed(0)} KiB a round`, { rounds: ROUNDS, unit: "Mpx/s" }, contenders);
  const by = new Map(rows.map((r) => [r.name, r]));
  const c = by.get("cassette (wasm)")!, f = by.get("fast-png")!, s = by.get("sharp (native)");
  summary.push(`| ${g.title} | ${c.best.toFixed(1)} | ${f.best.toFixed(1)} | **${(c.best / f.best).toFixed(2)}×** | ${s ? `${s.best.toFixed(1)} (${(c.best / s.best).toFixed(2)}×)` : "–"} |`);
}

console.log(`\n${runtime.name} ${runtime.version}, ${cpus()[0]?.model ?? "unknown CPU"} × ${cpus().length}; Mpx/s, best of ${ROUNDS}`);
console.log("\n| input | cassette (wasm) | fast-png | cassette / fast-png | sharp (native) (cassette / sharp) |\n|---|---:|---:|---:|---:|");
for (const line of summary) console.log(line);
