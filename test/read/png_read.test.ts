/**
 * PNGs and JPEGs side by side in one dataset, read with `decode`: each sample is decoded by
 * its own format (the auto decoder, by the first bytes) wherever the loader decodes (the
 * decode pool, this thread with decodeWorkers: 0, a read worker), and gives the same pixels
 * as decoding its stored bytes here. Fresh images each run: PNGs from ImageMagick (RGB 8-bit,
 * grey 16-bit rounded to 8, palette), JPEGs from cjpeg.
 */
import * as assert from "uvu/assert";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { createAutoDecoder } from "../../src/decode/decoders.ts";
import { Loader } from "../../src/loader.ts";
import { openStore } from "../../src/source/open.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-png-read-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A PNG made by ImageMagick from raw samples: `kind` rgb (8-bit), gray16, or palette (PNG8). */
function magickPng(path: string, w: number, h: number, kind: "rgb" | "gray16" | "palette", next: () => number): void {
  const raw = join(dir, "in.raw");
  const bytes = kind === "gray16" ? 2 * w * h : 3 * w * h;
  writeFileSync(raw, randomBytes(next, bytes));
  const input = kind === "gray16" ? ["-depth", "16", "-endian", "MSB", `gray:${raw}`] : ["-depth", "8", `rgb:${raw}`];
  const out = kind === "palette" ? ["-colors", "16", `PNG8:${path}`]
    : kind === "gray16" ? ["-define", "png:bit-depth=16", "-define", "png:color-type=0", path]
    : [`PNG24:${path}`];
  execFileSync("convert", ["-size", `${w}x${h}`, ...input, ...out]);
}

const seed = freshSeed();
const next = rng(seed);
const root = join(dir, "folder");
const kinds = ["rgb", "gray16", "palette", "jpeg"] as const;
for (const [c, kind] of kinds.entries()) {
  mkdirSync(join(root, `c${c}`), { recursive: true });
  for (let i = 0; i < 4; i++) {
    const w = randomInt(next, 1, 40), h = randomInt(next, 1, 30);
    if (kind === "jpeg") writeFileSync(join(root, `c${c}`, `${i}.jpg`), cjpeg(randomBytes(next, w * h * 3), w, h, 3));
    else magickPng(join(root, `c${c}`, `${i}.png`), w, h, kind, next);
  }
}
const address = `sqlite:${join(dir, "mixed.sqlite")}`;
const store = await openStore(address);
const summary = await ingest(store, root, { dataset: "mixed" });
const ids: string[] = [];
for await (const page of store.scanNat("mixed")) ids.push(...page.map((r) => r.id));
const stored = new Map((await store.get("mixed", ids)).map((s) => [s.id, s.data]));
await store.close();
const reference = await createAutoDecoder();
afterAll(() => reference.close());

test("a dataset of PNGs (RGB, 16-bit grey, palette) and JPEGs, read with decode: each sample's pixels as the auto decoder gives them, in the pool, in this thread and in a read worker", async () => {
  assert.equal([summary.written, summary.errors.length], [16, 0], `seed ${seed}`);
  const pngs = [...stored.values()].filter((d) => d[0] === 0x89).length;
  assert.is(pngs, 12, "twelve PNGs, four JPEGs");
  for (const [what, o] of [["decode pool", {}], ["this thread", { decodeWorkers: 0 }], ["a read worker", { workers: 1 }]] as const) {
    const loader = new Loader({ store: address, dataset: "mixed", ids, batchSize: 5, decode: true, seed: 3, ...o });
    let n = 0;
    try {
      for await (const b of loader.epoch(0)) {
        for (const s of b.items) {
          const want = reference.decode(stored.get(s.id)!);
          assert.ok(s.image, `${what}: ${s.id} decoded`);
          assert.equal([s.image!.width, s.image!.height, s.image!.channels], [want.width, want.height, want.channels], `${what}: size (seed ${seed})`);
          assert.equal(s.image!.data, want.data, `${what}: pixels of ${s.id} (seed ${seed})`);
          n++;
        }
      }
    } finally {
      await loader.close();
    }
    assert.is(n, ids.length, what);
  }
  // The reference is right too: a PNG's RGB samples are the ones ImageMagick was given.
  const one = join(dir, "check.png");
  const raw = randomBytes(next, 5 * 3 * 3);
  writeFileSync(join(dir, "check.raw"), raw);
  execFileSync("convert", ["-size", "5x3", "-depth", "8", `rgb:${join(dir, "check.raw")}`, `PNG24:${one}`]);
  assert.equal(reference.decode(readFileSync(one)).data, raw);
});
