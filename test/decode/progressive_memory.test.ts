import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { createJpegDecoder, type JpegScale } from "../../src/decode/jpeg.ts";

/** The same coefficients as a sequential file: jpegtran writes baseline unless told -progressive. */
function sequentialCopy(progressive: Uint8Array): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), "cassette-jpegtran-"));
  try {
    const input = join(dir, "in.jpg"), output = join(dir, "out.jpg");
    writeFileSync(input, progressive);
    const r = spawnSync("jpegtran", ["-copy", "none", "-outfile", output, input], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`jpegtran failed: ${r.stderr}`);
    return new Uint8Array(readFileSync(output));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const MiB = 2 ** 20;

// A progressive file's decoder holds its coefficients until the last scan, but only those its
// output needs (wasm/jpeg/scan.ts, planStorage), and rings of sample rows, not whole planes
// (wasm/jpeg/decoder.ts, idctRows). The bounds are what that needs, from the image's size, plus
// 1 MiB for the module's own data, strips and row buffers; whole planes, or every coefficient,
// exceed them. Pixels are those of the same coefficients decoded as a sequential file.
test("progressive JPEG: the decoder holds only the coefficients its output reads and rings of rows (RGB, grey, 1/2, 1/4, 1/8), with a sequential file's pixels", async () => {
  const seed = freshSeed();
  const r = rng(seed);
  const w = 1536 + Math.floor(r() * 64), h = 1024 + Math.floor(r() * 64);
  const px = new Uint8Array(w * h * 3);
  const [a, b, c] = [r() * 6, r() * 6, r() * 6];
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const p = 3 * (y * w + x);
      px[p] = 128 + 100 * Math.sin(a + x / 37) + 30 * (r() - 0.5);
      px[p + 1] = 128 + 100 * Math.cos(b + y / 23) + 30 * (r() - 0.5);
      px[p + 2] = 128 + 100 * Math.sin(c + (x + y) / 41) + 30 * (r() - 0.5);
    }
  }
  const prog = cjpeg(px, w, h, 3, ["-progressive", "-quality", "90", "-sample", "2x2"]);
  const seq = sequentialCopy(prog);
  const blocks = Math.ceil(w / 16) * Math.ceil(h / 16) * 6; // 4:2:0: 4 luma and 2 chroma blocks an MCU
  const luma = (blocks * 4) / 6;
  const history = blocks * 8; // one u64 of non-zero history a block, every component (scan.ts, NZ)
  // Bytes of coefficients a block keeps: RGB all 64; at 1/2 luma 7×7 (+ a slot), chroma all (its
  // 8×8 IDCT absorbs the scale); at 1/4 luma 5×5, chroma 7×7; at 1/8 luma the DC (+ a slot), chroma 5×5.
  const cases: { name: string; scale: JpegScale; grey: boolean; coefficients: number }[] = [
    { name: "RGB", scale: 1, grey: false, coefficients: blocks * 128 },
    { name: "grey", scale: 1, grey: true, coefficients: luma * 128 },
    { name: "1/2", scale: (1 / 2) as JpegScale, grey: false, coefficients: luma * 100 + (blocks - luma) * 128 },
    { name: "1/4", scale: (1 / 4) as JpegScale, grey: false, coefficients: luma * 52 + (blocks - luma) * 100 },
    { name: "1/8", scale: (1 / 8) as JpegScale, grey: false, coefficients: luma * 4 + (blocks - luma) * 52 },
    { name: "grey 1/8", scale: (1 / 8) as JpegScale, grey: true, coefficients: luma * 4 },
  ];
  const rows: string[] = [];
  for (const k of cases) {
    const jpeg = await createJpegDecoder();
    const img = jpeg.decode(prog, { scale: k.scale, grey: k.grey });
    const bound = prog.length + k.coefficients + history + MiB;
    rows.push(`${k.name.padEnd(9)} ${(jpeg.memoryBytes / MiB).toFixed(1)} MiB (bound ${(bound / MiB).toFixed(1)})`);
    assert.ok(jpeg.memoryBytes <= bound, `seed ${seed}, ${w}×${h} ${k.name}: the decoder holds ${jpeg.memoryBytes} bytes, more than ${bound}`);
    const ref = (await createJpegDecoder()).decode(seq, { scale: k.scale, grey: k.grey });
    assert.equal([img.width, img.height, img.channels], [ref.width, ref.height, ref.channels]);
    const at = img.data.findIndex((v, i) => v !== ref.data[i]);
    assert.is(at, -1, `seed ${seed}, ${w}×${h} ${k.name}: pixels differ from the sequential copy's at byte ${at}`);
  }
  console.log(`    ${w}×${h} progressive, wasm memory after one decode:\n      ${rows.join("\n      ")}`);
});
