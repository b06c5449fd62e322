// The GPU JPEG decode (src/gpu/huffman.ts, shaders/preprocess/huffman.wgsl): its blocks are the
// wasm decoder's coefficient mode's, bit for bit, on the fixture corpus and on fresh cjpeg files
// of every sampling, quality and restart interval; corrupt files never touch memory outside
// their blocks, and whatever the GPU accepts the CPU decodes to the same blocks (NOTE [ What the
// GPU decodes ]); a Preprocessor batch of scan images gives the pixels' tensor exactly.
import * as assert from "uvu/assert";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { mutateBytes, mutateStructure } from "../_support/jpeg_mutate.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { coefficientImageShape, planCoefficients } from "../../src/gpu/idct.ts";
import { encodeHuffman, planScans, STATUS_IMAGES } from "../../src/gpu/huffman.ts";
import { packLayout } from "../../src/gpu/pack.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import { createJpegDecoder, type JpegDecoder } from "../../src/decode/jpeg.ts";
import { isJpegScan, type JpegScan } from "../../src/decode/jpeg_scan.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const GUARD = 4096;

interface Decoded {
  flags: number;
  /** Per component, its blocks as the GPU wrote them. */
  blocks: Int16Array[];
}

/** The Huffman passes alone over `scans`: each image's blocks and flags; asserts nothing outside the blocks moved. */
async function gpuBlocks(device: GPUDevice, scans: JpegScan[], rounds?: number): Promise<{ images: Decoded[]; resynced: number; settled: number }> {
  const pack = packLayout(scans.map(coefficientImageShape));
  const plan = planCoefficients(scans, pack)!;
  const upload = new Uint8Array(plan.uploadBytes);
  plan.write(upload);
  const coef = device.createBuffer({ size: plan.bufferBytes + GUARD, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(coef, 0, upload);
  const sp = planScans(plan.scans);
  const scanBytes = new Uint8Array(sp.uploadBytes);
  sp.write(scanBytes);
  const make = (size: number, usage: number) => device.createBuffer({ size: Math.max(4, size), usage });
  const scan = make(sp.uploadBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
  device.queue.writeBuffer(scan, 0, scanBytes);
  const status = make(sp.statusBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST);
  const stateA = make(sp.stateBytes, GPUBufferUsage.STORAGE), stateB = make(sp.stateBytes, GPUBufferUsage.STORAGE);
  const encoder = device.createCommandEncoder();
  await encodeHuffman(device, encoder, sp, { scan, coef, stateA, stateB, status }, rounds);
  device.queue.submit([encoder.finish()]);
  const words = new Uint32Array(await readBuffer(device, status, sp.statusBytes));
  const all = new Uint8Array(await readBuffer(device, coef));
  for (const b of [coef, scan, status, stateA, stateB]) b.destroy();
  // The records, tables and the guard after the blocks are as written.
  const head = all.subarray(0, plan.uploadBytes);
  assert.ok(head.every((v, i) => v === upload[i]), "the coefficient upload's records changed");
  assert.ok(all.subarray(plan.bufferBytes).every((v) => v === 0), "bytes past the blocks were written");
  const images = plan.scans.map((s, k) => ({
    flags: words[STATUS_IMAGES + k],
    blocks: s.scan.components.map((c, j) => new Int16Array(all.buffer.slice(s.words[j] * 4, s.words[j] * 4 + c.blocksW * c.blocksH * 128))),
  }));
  return { images, resynced: words[1], settled: words[0] };
}

function sameBlocks(jpeg: JpegDecoder, file: Uint8Array, got: Decoded, what: string): void {
  const want = jpeg.decodeCoefficients(file);
  assert.is(got.blocks.length, want.components.length, `${what}: components`);
  want.components.forEach((c, j) => {
    const g = got.blocks[j];
    for (let i = 0; i < c.coefficients.length; i++) {
      if (g[i] !== c.coefficients[i]) {
        assert.unreachable(`${what}: component ${j} block ${(i / 64) | 0} coefficient ${i % 64}: GPU ${g[i]}, wasm ${c.coefficients[i]}`);
      }
    }
  });
}

/** A photo-like RGB image: smooth gradients, edges and noise of a random strength. */
function picture(next: () => number, w: number, h: number, channels: 1 | 3): Uint8Array {
  const noise = randomInt(next, 0, 120);
  const fx = next() * 0.2, fy = next() * 0.2;
  const out = new Uint8Array(w * h * channels);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      for (let c = 0; c < channels; c++) {
        const v = 128 + 90 * Math.sin(x * fx + c) * Math.cos(y * fy - c) + (x > w / 2 ? 40 : -40) + (next() - 0.5) * noise;
        out[(y * w + x) * channels + c] = Math.max(0, Math.min(255, Math.round(v)));
      }
    }
  }
  return out;
}

/** The file with its scan's bytes replaced by `edit`'s (from the byte after SOS's segment). */
function editScan(file: Uint8Array, edit: (scan: number[]) => number[]): Uint8Array {
  let sos = 0;
  while (!(file[sos] === 0xff && file[sos + 1] === 0xda)) sos++;
  const start = sos + 2 + ((file[sos + 2] << 8) | file[sos + 3]);
  return Uint8Array.from([...file.subarray(0, start), ...edit([...file.subarray(start)])]);
}

test("readScan takes the stuffing out and cuts at restart markers, or refuses the file by name", async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const file = cjpeg(picture(next, 48, 8, 3), 48, 8, 3, ["-quality", "95", "-sample", "1x1,1x1,1x1", "-restart", "1B"]);
  const scan = jpeg.readScan(file);
  assert.ok(isJpegScan(scan), `seed ${seed}: refused`);
  // 6 MCUs, an interval each; each interval's bytes are the file's between its markers, unstuffed.
  assert.is(scan.intervals.length, 12);
  const raw = editScan(file, (s) => s);
  let sos = 0;
  while (!(file[sos] === 0xff && file[sos + 1] === 0xda)) sos++;
  const body: number[][] = [[]];
  for (let p = sos + 2 + ((file[sos + 2] << 8) | file[sos + 3]); p < file.length - 2; p++) {
    if (file[p] === 0xff && file[p + 1] === 0) body[body.length - 1].push(0xff), p++;
    else if (file[p] === 0xff && file[p + 1] >= 0xd0 && file[p + 1] <= 0xd7) body.push([]), p++;
    else body[body.length - 1].push(file[p]);
  }
  assert.is(body.length, 6);
  body.forEach((b, i) => {
    const [at, n] = [scan.intervals[2 * i], scan.intervals[2 * i + 1]];
    assert.is(at % 4, 0, "intervals start on words");
    assert.equal([...scan.entropy.subarray(at, at + n)], b, `seed ${seed}: interval ${i}`);
  });
  assert.ok(raw.length === file.length);
  const refusal = (f: Uint8Array) => {
    const r = jpeg.readScan(f);
    return isJpegScan(r) ? "accepted" : r.reason;
  };
  const rst = (s: number[], from: number, to: number) => {
    const i = s.findIndex((v, k) => v === 0xff && s[k + 1] === from);
    return [...s.slice(0, i + 1), to, ...s.slice(i + 2)];
  };
  assert.match(refusal(editScan(file, (s) => rst(s, 0xd0, 0xd1))), "RST1 is out of sequence");
  assert.match(refusal(editScan(file, (s) => rst(s, 0xd4, 0xc4))), "marker 0xc4 follows its first scan");
  assert.match(refusal(editScan(file, (s) => s.slice(0, -2))), "runs to the end of the file");
  assert.match(refusal(editScan(file, (s) => { const i = s.findIndex((v, k) => v === 0xff && s[k + 1] === 0xd4); return [...s.slice(0, i), ...s.slice(i + 2)]; })), "5 restart intervals where its MCUs make 6");
  assert.match(refusal(cjpeg(picture(next, 16, 16, 3), 16, 16, 3, ["-progressive"])), "progressive");
});

test("GPU Huffman decode gives the wasm decoder's blocks on the fixture corpus; progressive and arithmetic files are refused", async () => {
  const device = await testDevice();
  const jpeg = await createJpegDecoder();
  const dir = join(runtime.cwd(), "test/fixtures/jpeg");
  const disabled = readFileSync(join(dir, "disabled.txt"), "utf8");
  const files: [string, Uint8Array][] = [];
  const refused: string[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".jpg")).sort()) {
    if (disabled.includes(name) && !name.includes("arith")) continue;
    const bytes = new Uint8Array(readFileSync(join(dir, name)));
    const r = jpeg.readScan(bytes);
    if (isJpegScan(r)) files.push([name, bytes]);
    else refused.push(`${name}: ${r.reason}`);
  }
  assert.ok(files.length >= 10, `only ${files.length} fixtures decode on the GPU`);
  for (const name of ["china_420_prog.jpg", "china_420_arith.jpg", "china_cmyk_q90.jpg"]) assert.ok(refused.some((r) => r.startsWith(name)), `${name} is not refused: ${refused}`);
  const scans = files.map(([, b]) => jpeg.readScan(b) as JpegScan);
  const { images, resynced, settled } = await gpuBlocks(device, scans);
  images.forEach((img, i) => {
    assert.is(img.flags, 0, `${files[i][0]}: flags ${img.flags}`);
    sameBlocks(jpeg, files[i][1], img, files[i][0]);
  });
  console.log(`  ${files.length} fixtures exact (${refused.length} refused: ${refused.join("; ")}); chunks decoded again: ${resynced} resync, ${settled} settle`);
}, { timeoutMs: 300_000 });

test("GPU Huffman decode equals the wasm decoder on fresh cjpeg files of every sampling, quality, table kind and restart interval, with no resync round too", async () => {
  const device = await testDevice();
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const samplings = ["1x1", "2x1", "2x2", "1x2", "4x1", "grey", "rgb"];
  const files: { what: string; bytes: Uint8Array }[] = [];
  for (let i = 0; i < 14; i++) {
    const sampling = samplings[i % samplings.length];
    const w = randomInt(next, 1, i < 7 ? 24 : 260), h = randomInt(next, 1, i < 7 ? 24 : 200);
    const channels = sampling === "grey" ? 1 : 3;
    const args = ["-quality", String(randomInt(next, 1, 100))];
    if (sampling === "rgb") args.push("-rgb");
    else if (channels === 3) args.push("-sample", `${sampling},1x1,1x1`);
    if (next() < 0.5) args.push("-optimize");
    const restart = next() < 0.5 ? randomInt(next, 1, 12) : 0;
    if (restart) args.push("-restart", `${restart}B`);
    files.push({ what: `${w}×${h} ${args.join(" ")}`, bytes: cjpeg(picture(next, w, h, channels), w, h, channels, args) });
  }
  const scans = files.map((f) => {
    const r = jpeg.readScan(f.bytes);
    assert.ok(isJpegScan(r), `${f.what}: refused (${"reason" in r ? r.reason : ""})`);
    return r;
  });
  for (const rounds of [2, 0]) {
    const { images } = await gpuBlocks(device, scans, rounds);
    images.forEach((img, i) => {
      assert.is(img.flags, 0, `seed ${seed}, ${files[i].what}: flags ${img.flags}`);
      sameBlocks(jpeg, files[i].bytes, img, `seed ${seed}, ${files[i].what}, ${rounds} rounds`);
    });
  }
}, { timeoutMs: 300_000 });

test("corrupt files: what the GPU accepts the CPU decodes to the same blocks, nothing outside the blocks is written, the rest is refused", async () => {
  const device = await testDevice();
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const bases = [
    cjpeg(picture(next, 61, 47, 3), 61, 47, 3, ["-quality", "85", "-sample", "2x2,1x1,1x1"]),
    cjpeg(picture(next, 40, 33, 3), 40, 33, 3, ["-quality", "70", "-restart", "2B", "-optimize"]),
    cjpeg(picture(next, 50, 20, 1), 50, 20, 1, ["-quality", "95"]),
  ];
  const scans: { scan: JpegScan; what: string }[] = [];
  let headerErrors = 0;
  for (let i = 0; i < 60; i++) {
    const base = bases[i % bases.length];
    let bytes: Uint8Array;
    if (i % 3 === 0) {
      // Flips in the entropy-coded data, where the GPU reads.
      bytes = new Uint8Array(base);
      for (let f = randomInt(next, 1, 4); f > 0; f--) bytes[randomInt(next, Math.floor(bytes.length / 2), bytes.length - 3)] ^= 1 << randomInt(next, 0, 7);
    } else bytes = i % 3 === 1 ? mutateStructure(base, next).bytes : mutateBytes(base, next);
    const r = jpeg.readScan(bytes);
    if (!isJpegScan(r)) {
      // Refused: the CPU decodes it, and names its error.
      assert.ok(r.reason.length > 0);
      headerErrors++;
      continue;
    }
    if (isJpegScan(r)) scans.push({ scan: r, what: `seed ${seed}, mutation ${i}` });
  }
  const { images } = await gpuBlocks(device, scans.map((s) => s.scan));
  let accepted = 0, handedBack = 0;
  images.forEach((img, k) => {
    if (img.flags !== 0) return void handedBack++;
    accepted++;
    sameBlocks(jpeg, scans[k].scan.file, img, scans[k].what);
  });
  console.log(`  ${scans.length} scans: ${accepted} accepted and exact, ${handedBack} handed back; ${headerErrors} refused`);
  assert.ok(handedBack > 0, `seed ${seed}: no corrupt scan was handed back`);
}, { timeoutMs: 300_000 });

test("a Preprocessor batch of scan images gives the decoded pixels' tensor exactly, hands back a file with bytes after its last MCU, and names a corrupt one", async () => {
  const device = await testDevice();
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const files = [
    cjpeg(picture(next, 70, 50, 3), 70, 50, 3, ["-quality", "90", "-sample", "2x2,1x1,1x1"]),
    cjpeg(picture(next, 33, 41, 1), 33, 41, 1, ["-quality", "75", "-restart", "3B"]),
    cjpeg(picture(next, 45, 30, 3), 45, 30, 3, ["-quality", "60", "-sample", "2x1,1x1,1x1", "-optimize"]),
  ];
  // Bytes after the last MCU: the wasm decoder skips them, the GPU hands the file back.
  const trailing = new Uint8Array(files[0].length + 3);
  trailing.set(files[0].subarray(0, files[0].length - 2));
  trailing.set([0x55, 0x66, 0x77, 0xff, 0xd9], files[0].length - 2);
  files.push(trailing);
  const options = { width: 24, height: 20, channels: 3 as const, crop: { kind: "random-resized" as const }, flip: 0.5, seed, layout: "nhwc" as const };
  const pre = await createPreprocessor(device, options);
  const ids = files.map((_, i) => `s${i}`);
  const gpu = await pre.run(files.map((f) => jpeg.readScan(f) as JpegScan), { ids, epoch: 2 });
  assert.ok(gpu.gpuDecode, "a report");
  assert.equal(gpu.gpuDecode!.cpuDecoded, [3], `seed ${seed}: handed back`);
  const cpu = await pre.run(files.map((f) => jpeg.decode(f)), { ids, epoch: 2 });
  const a = new Uint8Array(await readBuffer(device, gpu.buffer, gpu.bytes));
  const b = new Uint8Array(await readBuffer(device, cpu.buffer, cpu.bytes));
  assert.ok(a.every((v, i) => v === b[i]), `seed ${seed}: the GPU decode's tensor is not the CPU decode's`);
  // A file whose codes fail: the CPU decoder's error, naming the image.
  const bad = new Uint8Array(files[2]);
  let sos = 0;
  while (!(bad[sos] === 0xff && bad[sos + 1] === 0xda)) sos++;
  for (let i = sos + 20; i < bad.length - 8; i++) bad[i] = 0xfe;
  const badScan = jpeg.readScan(bad);
  assert.ok(isJpegScan(badScan));
  let message = "";
  try {
    await pre.run([jpeg.readScan(files[0]) as JpegScan, badScan], { ids: ["a", "b"] });
  } catch (e) {
    message = (e as Error).message;
  }
  let cpuMessage = "";
  try {
    jpeg.decodeCoefficients(bad);
  } catch (e) {
    cpuMessage = (e as Error).message;
  }
  assert.ok(cpuMessage !== "", "the CPU decoder refuses it too");
  assert.ok(message.includes("image 1 of the batch") && message.includes(cpuMessage), message);
  pre.destroy();
}, { timeoutMs: 300_000 });

test("a batch's Huffman tables are uploaded once each, shared by identity or by content", async () => {
  const jpeg = await createJpegDecoder();
  const seed = freshSeed();
  const next = rng(seed);
  const plain = [0, 1, 2].map(() => cjpeg(picture(next, 30, 20, 3), 30, 20, 3, ["-quality", "80"]));
  const optimized = cjpeg(picture(next, 30, 20, 3), 30, 20, 3, ["-quality", "80", "-optimize"]);
  const scans = [...plain, optimized].map((f) => jpeg.readScan(f) as JpegScan);
  // As a packet's records give them: the same bytes, arrays of their own.
  const copied = scans.map((s) => ({ ...s, tables: s.tables.map((t) => t && { counts: t.counts.slice(), symbols: t.symbols.slice() }) }));
  const count = (list: JpegScan[]) => planScans(planCoefficients(list, packLayout(list.map(coefficientImageShape)))!.scans).tables;
  // Annex K's four tables for the plain files, four of its own for the optimized one.
  assert.is(count(scans), 8, `seed ${seed}`);
  assert.is(count(copied), 8, `seed ${seed}`);
  assert.is(count(copied.slice(0, 3)), 4, `seed ${seed}`);
});
