import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, rng } from "../_support/random.ts";
import { compare } from "../reference/jpeg_compare.ts";
import { createJpegDecoder, type JpegDecoder } from "../../src/decode/jpeg.ts";
import { JpegError } from "../../src/decode/jpeg_error.ts";
import type { CassetteError } from "../../src/errors.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { djpegRef, jpegBytes } from "./_fixtures.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { assertCassetteError } from "../_support/expect.ts";

/** Offset of the first marker FF `code` at or after `from`. */
function marker(bytes: Uint8Array, code: number, from = 0): number {
  for (let i = from; i + 1 < bytes.length; i++) if (bytes[i] === 0xff && bytes[i + 1] === code) return i;
  throw new Error(`no marker FF ${code.toString(16)}`);
}

/** Decodes `bytes`, expecting a JpegError; checks reason, offset (exact or a range) and code. */
function expectError(jpeg: JpegDecoder, bytes: Uint8Array, reason: string, offset: number | [number, number], unsupported = false): JpegError {
  let err: unknown;
  try {
    jpeg.decode(bytes);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof JpegError, `expected a JpegError (${reason}), got ${err}`);
  const e = err as JpegError;
  assert.is(e.reason, reason, e.message);
  if (typeof offset === "number") assert.is(e.offset, offset, `${reason}: offset (${e.message})`);
  else assert.ok(e.offset >= offset[0] && e.offset <= offset[1], `${reason}: offset ${e.offset} not in [${offset}] (${e.message})`);
  assertCassetteError(e, unsupported ? "ERR_UNSUPPORTED" : "ERR_MALFORMED_INPUT", new RegExp(`at byte ${e.offset}`));
  // The instance stays usable: a good file decodes exactly as before.
  const good = jpeg.decode(jpegBytes("px17x33_420_prog.jpg"));
  assert.is(compare(good.data, djpegRef("px17x33_420_prog.jpg").data).maxAbs <= 4, true, `after ${reason}: the next image decodes`);
  return e;
}

const base = () => jpegBytes("china_420_q90.jpg");

test("empty input, random bytes and a PNG are refused at byte 0", async () => {
  const jpeg = await createJpegDecoder();
  expectError(jpeg, new Uint8Array(0), "empty", 0);
  const seed = freshSeed();
  const junk = randomBytes(rng(seed), 5000);
  junk[0] = 0x12;
  expectError(jpeg, junk, "not-jpeg", 0);
  const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  expectError(jpeg, png, "not-jpeg", 0);
  expectError(jpeg, Uint8Array.from([0xff]), "not-jpeg", 0);
});

test("truncated files: in a segment, in the entropy data, and without EOI", async () => {
  const jpeg = await createJpegDecoder();
  const b = base();
  expectError(jpeg, b.subarray(0, 2), "truncated", 2); // SOI alone
  expectError(jpeg, b.subarray(0, 100), "truncated", 100); // inside DQT
  const sos = marker(b, 0xda);
  expectError(jpeg, b.subarray(0, sos + 5), "truncated", sos + 5); // inside the SOS header
  const mid = sos + ((b.length - sos) >> 1);
  expectError(jpeg, b.slice(0, mid), "truncated", mid); // half of the scan missing
  expectError(jpeg, b.slice(0, b.length - 2), "truncated", b.length - 2); // EOI missing
  // Progressive: cut between scans.
  const p = jpegBytes("china_420_prog.jpg");
  const second = marker(p, 0xda, marker(p, 0xda) + 2);
  expectError(jpeg, p.slice(0, second), "truncated", second);
});

test("corrupted entropy data: an impossible code, and a marker inside a scan", async () => {
  const jpeg = await createJpegDecoder();
  const b = base().slice();
  const sos = marker(b, 0xda);
  const at = sos + 400;
  // 0xFF 0x00 is a stuffed 0xFF: 40 bytes of one-bits. The all-ones 16-bit code is never
  // assigned (C.2), so the decoder must stop inside this run.
  for (let i = 0; i < 40; i += 2) { b[at + i] = 0xff; b[at + i + 1] = 0x00; }
  expectError(jpeg, b, "bad-huffman-code", [at - 8, at + 40]);
  const c = base().slice();
  c[at] = 0xff; c[at + 1] = 0xd9; // EOI in the middle of the scan
  expectError(jpeg, c, "short-scan", [at - 8, at + 2]);
});

test("wrong markers: a second SOI, a non-marker byte between segments, a scan before the frame", async () => {
  const jpeg = await createJpegDecoder();
  const b = base();
  const twice = new Uint8Array(b.length + 2);
  twice.set(b.subarray(0, 2));
  twice.set([0xff, 0xd8], 2);
  twice.set(b.subarray(2), 4);
  expectError(jpeg, twice, "bad-marker", 2);
  const dqt = marker(b, 0xdb);
  const c = b.slice();
  c[dqt] = 0x00;
  expectError(jpeg, c, "bad-marker", dqt);
  // Drop the SOF segment: the first SOS comes with no frame.
  const sof = marker(b, 0xc0);
  const len = (b[sof + 2] << 8) | b[sof + 3];
  const noFrame = new Uint8Array(b.length - len - 2);
  noFrame.set(b.subarray(0, sof));
  noFrame.set(b.subarray(sof + 2 + len), sof);
  expectError(jpeg, noFrame, "no-frame", marker(noFrame, 0xda));
});

test("a header claiming 65535×65535 is refused by maxPixels before any allocation, and by the memory bound without it", async () => {
  const jpeg = await createJpegDecoder();
  const b = base().slice();
  const sof = marker(b, 0xc0);
  b.set([0xff, 0xff, 0xff, 0xff], sof + 5); // Y and X
  const t0 = runtime.now();
  const e = expectError(jpeg, b, "too-large", sof);
  assert.ok(e.message.includes("65535×65535"), e.message);
  // Without a pixel limit the 6 GB of planes cannot exist in wasm32: refused, not attempted.
  let err: unknown;
  try {
    jpeg.decode(b, { maxPixels: Infinity });
  } catch (x) {
    err = x;
  }
  assert.is((err as JpegError).reason, "out-of-memory");
  assert.ok(runtime.now() - t0 < 2000, "both refusals are quick");
  // A small limit refuses an ordinary image too, naming its size.
  assert.throws(() => jpeg.decode(base(), { maxPixels: 1000 }), (x: unknown) => (x as JpegError).reason === "too-large" && (x as Error).message.includes("223×171"));
});

test("unsupported features are ERR_UNSUPPORTED: arithmetic coding, 12-bit samples, DNL height", async () => {
  const jpeg = await createJpegDecoder();
  const ar = jpegBytes("china_420_arith.jpg");
  expectError(jpeg, ar, "arithmetic", marker(ar, 0xc9), true); // SOF9: sequential, arithmetic
  const b = base().slice();
  const sof = marker(b, 0xc0);
  b[sof + 4] = 12;
  expectError(jpeg, b, "precision", sof + 4, true);
  const d = base().slice();
  d[sof + 5] = 0; d[sof + 6] = 0;
  expectError(jpeg, d, "dnl", sof + 5, true);
});

test("bad tables and scans: missing Huffman table, over-full code lengths, wrong restart marker", async () => {
  const jpeg = await createJpegDecoder();
  const b = base().slice();
  const sos = marker(b, 0xda);
  b[sos + 6] = 0x33; // first component uses DC/AC tables 3, never defined
  expectError(jpeg, b, "missing-table", sos + 2 + (b[sos + 2] << 8 | b[sos + 3]));
  const h = base().slice();
  const dht = marker(h, 0xc4);
  // Three codes of length 1 (taken from a longer length, so the symbol count still fits).
  const from = [...h.subarray(dht + 6, dht + 21)].findIndex((n) => n >= 3) + dht + 6;
  h[from] -= 3;
  h[dht + 5] = 3;
  expectError(jpeg, h, "bad-huffman-table", dht + 4);
  const r = jpegBytes("china_420_rst1.jpg").slice();
  const rst = marker(r, 0xd0, marker(r, 0xda));
  r[rst + 1] = 0xd3; // RST3 where RST0 belongs
  expectError(jpeg, r, "bad-restart", rst);
});

test("one decoder reused over standard tables, an image's own tables and a broken table decodes each file as a fresh decoder does", async () => {
  // The decoder keeps each Huffman slot's lookup tables while the next file defines the same
  // table (wasm/jpeg/huffman.ts): a different table, or one that failed half-built, must not
  // be taken for it.
  const seed = freshSeed();
  const next = rng(seed);
  const reused = await createJpegDecoder();
  const broken = base().slice();
  const dht = marker(broken, 0xc4);
  const from = [...broken.subarray(dht + 6, dht + 21)].findIndex((n) => n >= 3) + dht + 6;
  broken[from] -= 3;
  broken[dht + 5] = 3; // three codes of length 1 in the first table: it fails while being built
  for (let i = 0; i < 10; i++) {
    const w = 1 + Math.floor(next() * 60), h = 1 + Math.floor(next() * 60), c = next() < 0.3 ? 1 : 3;
    const args = ["-quality", String(40 + Math.floor(next() * 60)), ...(next() < 0.5 ? ["-optimize"] : []), ...(c === 3 ? ["-sample", next() < 0.5 ? "2x2" : "1x1"] : [])];
    const bytes = cjpeg(randomBytes(next, w * h * c), w, h, c as 1 | 3, args);
    const fresh = (await createJpegDecoder()).decode(bytes);
    const got = reused.decode(bytes);
    assert.equal(Array.from(got.data), Array.from(fresh.data), `seed ${seed}, image ${i} (${w}×${h}×${c} ${args.join(" ")})`);
    assert.equal(Array.from(reused.decode(bytes, { grey: true }).data), Array.from((await createJpegDecoder()).decode(bytes, { grey: true }).data));
    if (i % 3 === 2) {
      assert.throws(() => reused.decode(broken), /bad-huffman-table|Huffman/);
      // The file it was cut from: the same tables but the broken one, which it must rebuild.
      assert.equal(Array.from(reused.decode(base()).data), Array.from((await createJpegDecoder()).decode(base()).data), "after a table that failed half-built");
    }
  }
});

test("bad options are CassetteError ERR_INVALID_OPTION naming the option", async () => {
  const jpeg = await createJpegDecoder();
  assert.throws(() => jpeg.decode(base(), { scale: 0.3 as never }), (e: unknown) => (e as CassetteError).code === "ERR_INVALID_OPTION" && /'scale'.*0\.3/.test((e as Error).message));
  assert.throws(() => jpeg.decode(base(), { maxPixels: -1 }), (e: unknown) => (e as CassetteError).code === "ERR_INVALID_OPTION" && /'maxPixels'/.test((e as Error).message));
  assert.throws(() => jpeg.decode("not bytes" as never), (e: unknown) => (e as CassetteError).code === "ERR_INVALID_OPTION");
  assert.throws(() => jpeg.decode(base(), { applyOrientation: 1 as never }), /'applyOrientation' must be true or false: current value is number 1/);
  assert.throws(() => jpeg.decode(base(), null as never), /the options must be an object: current value is null/);
});
