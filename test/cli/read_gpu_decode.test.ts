/**
 * `cassette read --preprocess --decode gpu`: over a store of fresh baseline and progressive
 * JPEGs and a PNG, the JSON says decode "gpu", how many JPEGs went to the GPU, came back to the
 * CPU and were refused before it (the progressive ones), and the tensor is `--decode cpu`'s
 * exactly, in the loader's thread and in read workers.
 */
import * as assert from "uvu/assert";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cassette } from "../_support/cli.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { buildPng } from "../_support/png_build.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { openStore } from "../../src/source/open.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-read-gpu-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A store of `baseline` and `progressive` fresh JPEGs and one PNG: its address. */
async function mixedStore(next: () => number, baseline: number, progressive: number): Promise<string> {
  const root = join(dir, "files");
  mkdirSync(join(root, "a"), { recursive: true });
  const size = () => [randomInt(next, 20, 60), randomInt(next, 16, 50)];
  for (let i = 0; i < baseline + progressive; i++) {
    const [w, h] = size();
    const args = ["-quality", String(randomInt(next, 40, 98)), "-sample", ["1x1", "2x1", "2x2"][i % 3]];
    if (i >= baseline) args.push("-progressive");
    else if (i % 2) args.push("-restart", "1");
    writeFileSync(join(root, "a", `img${i}.jpg`), cjpeg(randomBytes(next, w * h * 3), w, h, 3, args));
  }
  const [w, h] = size();
  const raw = new Uint8Array((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) raw.set(randomBytes(next, w * 3), y * (w * 3 + 1) + 1);
  writeFileSync(join(root, "a", "img.png"), buildPng({ width: w, height: h, bitDepth: 8, colorType: 2, raw }));
  const store = await openStore(`sqlite:${join(dir, "mixed.sqlite")}`);
  await ingest(store, root, { dataset: "m" });
  await store.close();
  return `sqlite:${join(dir, "mixed.sqlite")}`;
}

test("read --preprocess --decode gpu --json: decode \"gpu\", the GPU decode's counts and the refused ones, and --decode cpu's tensor exactly", async () => {
  const seed = freshSeed();
  const baseline = 7, progressive = 3, all = baseline + progressive + 1;
  const store = await mixedStore(rng(seed), baseline, progressive);
  const read = (decode: string, workers: string) => {
    const dump = join(dir, `${decode}${workers}.npy`);
    const r = cassette(
      "read", "--store", store, "--dataset", "m", "--preprocess", "--decode", decode, "--size", "16x12", "--crop", "random-resized", "--flip", "0.5",
      "--seed", "5", "--order", "strict", "--batch", String(all), "--workers", workers, "--dump", dump, "--json",
    );
    assert.is(r.code, 0, r.err);
    return { doc: JSON.parse(r.out), tensor: new Uint8Array(readFileSync(dump)) };
  };
  const want = read("cpu", "0");
  assert.is(want.doc.preprocess.decode, "cpu");
  assert.is(want.doc.gpuRefused, undefined, `seed ${seed}: no GPU decode, no count`);
  assert.is(want.doc.preprocess.gpuDecode, undefined);
  for (const workers of ["0", "2"]) {
    const what = `seed ${seed}, --workers ${workers}`;
    const { doc, tensor } = read("gpu", workers);
    assert.equal([doc.samples, doc.preprocess.images, doc.preprocess.decode], [all, all, "gpu"], what);
    assert.equal(doc.preprocess.gpuDecode, { images: baseline, cpuDecoded: 0, refused: progressive }, `${what}: the GPU decode's counts`);
    assert.is(doc.gpuRefused, progressive, `${what}: the progressive JPEGs refused`);
    assert.equal(doc.preprocess.dump.ids, want.doc.preprocess.dump.ids, `${what}: the same batch`);
    assert.ok(tensor.length === want.tensor.length && tensor.every((v, i) => v === want.tensor[i]), `${what}: the tensor is --decode cpu's`);
  }
}, { timeoutMs: 180_000 });
