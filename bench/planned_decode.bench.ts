/**
 * The GPU path's crop planned before the decode (issue 37): each sample's plan drawn from its
 * header and (seed, epoch, id), and only the pixels the plan reads decoded (`decodePlanned`,
 * src/gpu/decode_planned.ts; what read workers do with `decode: { plan }`), against decoding
 * every pixel and letting the GPU crop (what `decode: true` does). One thread, the same
 * samples, interleaved rounds; samples/s side by side, and the bytes each way puts in the
 * GPU's upload (the tensor is the same, bit for bit: test/gpu/decode_planned.test.ts).
 *
 *   node_modules/.bin/bun bench/planned_decode.bench.ts [--quick] [--samples N] [--out SIZE]
 *
 * Inputs: bench/jpeg/data/photos (bench/jpeg/make_inputs.sh: five real photos, 640×427 and
 * 640×400, q90 4:2:0).
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { compare } from "./_lib/compare.ts";
import { makeInputs } from "./_lib/inputs.ts";
import { benchArgs } from "./_lib/args.ts";
import { createJpegDecoder } from "../src/decode/jpeg.ts";
import type { CropPolicy } from "../src/decode/crop.ts";
import { decodePlanned } from "../src/gpu/decode_planned.ts";

const args = benchArgs({
  program: "bench/planned_decode.bench.ts",
  usage: `usage: bun bench/planned_decode.bench.ts [--quick] [--samples N] [--out SIZE]

  The GPU path's samples on five photos, one thread: every pixel decoded (the GPU crops), or
  only the pixels the preprocessor's plan reads (decodePlanned), for RandomResizedCrop and
  Resize + CenterCrop; samples/s and the bytes uploaded per sample.

  --quick      3 rounds instead of 11, 40 samples per photo instead of 200
  --samples N  samples (ids) per photo (default 200)
  --out SIZE   the output side (default 224)`,
  valued: ["samples", "out"],
  flags: ["quick"],
});
const quick = args.has("quick");
const rounds = quick ? 3 : 11;
const perPhoto = args.int("samples", quick ? 40 : 200);
const side = args.int("out", 224);

const HERE = fileURLToPath(new URL("./jpeg/", import.meta.url));
makeInputs("planned_decode.bench.ts", HERE + "make_inputs.sh", "run bash bench/jpeg/make_inputs.sh where the Debian mirror is reachable (it fetches the photos once)");
const dir = `${HERE}data/photos/`;
const photos = readdirSync(dir).filter((f) => f.endsWith(".jpg")).sort().map((f) => readFileSync(dir + f));
const samples = photos.flatMap((bytes, p) => Array.from({ length: perPhoto }, (_, i) => ({ bytes, id: `photo${p}-sample${i}` })));

const dec = await createJpegDecoder();
let sink = 0;
const policies: Array<[string, CropPolicy]> = [["RandomResizedCrop", { kind: "random-resized" }], [`Resize(${Math.round(side * 256 / 224)}) + CenterCrop`, { kind: "center", resize: Math.round(side * 256 / 224) }]];
for (const [name, crop] of policies) {
  const plan = { width: side, height: side, crop, flip: 0.5, seed: 7 };
  const bytesOf = (planned: boolean) => samples.reduce((n, s) => n + (planned ? decodePlanned(dec, s.bytes, plan, 0, s.id) : dec.decode(s.bytes)).data.length, 0) / samples.length;
  const whole = bytesOf(false), boxed = bytesOf(true);
  console.log(`${name} to ${side}×${side}: ${Math.round(boxed)} bytes uploaded per sample, ${Math.round(whole)} whole (${(boxed / whole).toFixed(2)}×)`);
  await compare(`${name} to ${side}×${side}, ${samples.length} samples, one thread: the decode before the GPU`, { rounds, unit: "samples/s" }, [
    { name: "every pixel decoded (decode: true)", baseline: true, work: samples.length, run: () => samples.forEach((s) => (sink += dec.decode(s.bytes).data.length)) },
    { name: "only the plan's pixels (decode: { plan })", work: samples.length, run: () => samples.forEach((s) => (sink += decodePlanned(dec, s.bytes, plan, 0, s.id).data.length)) },
  ]);
}
if (sink < 0) console.log(sink);
