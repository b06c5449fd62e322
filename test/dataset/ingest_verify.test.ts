/**
 * `verify` at ingest: a JPEG whose headers are sound but whose scan data is corrupt passes the
 * structural check (jpeg_check.ts) and is caught only by decoding it. Real cjpeg files, cut or
 * overwritten inside their entropy-coded data, and the project's wasm decoder.
 */
import * as assert from "uvu/assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { cassette } from "../_support/cli.ts";
import { execFileSync } from "node:child_process";
import { corruptFolder as makeFolder } from "./_corrupt_jpeg.ts";
import { ingest } from "../../src/dataset/ingest.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { openStore } from "../../src/source/open.ts";
import type { CassetteError } from "../../src/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-verify-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const corruptFolder = (name: string) => makeFolder(join(dir, name));

test("verify: corrupt scan data is not stored, each file named with the decoder's reason and offset; without it both are stored", async () => {
  const { root, cutAt, markerAt } = corruptFolder("lib");
  const decoder = await createJpegDecoder();
  const store = await openStore(`sqlite:${join(dir, "lib.sqlite")}`);
  try {
    const checked = await ingest(store, root, { dataset: "unverified" });
    assert.is(checked.written, 10, "the header check alone stores both corrupt files");
    assert.is(checked.verified, false);

    const verified = await ingest(store, root, { dataset: "verified", verify: decoder });
    assert.is(verified.verified, true);
    assert.is(verified.written, 8);
    assert.is((await store.info("verified")).count, 8);
    const byPath = Object.fromEntries(verified.errors.map((e) => [e.path, e]));
    assert.equal(Object.keys(byPath).sort(), [join(root, "a", "marker.jpg"), join(root, "b", "cut.jpg")]);
    const cut = byPath[join(root, "b", "cut.jpg")];
    assert.is(cut.key, join("b", "cut.jpg"));
    assert.is(cut.offset, cutAt);
    assert.match(cut.reason, new RegExp(`^Cannot decode JPEG as a marker interrupts the entropy-coded data before the scan's last block: at byte ${cutAt}$`));
    assert.is(byPath[join(root, "a", "marker.jpg")].offset, markerAt);

    // Fixed files are stored by the next run; what was stored is not decoded or written again.
    writeFileSync(join(root, "b", "cut.jpg"), cjpeg(new Uint8Array(48 * 48 * 3).fill(90), 48, 48, 3));
    const rerun = await ingest(store, root, { dataset: "verified", verify: decoder });
    assert.equal([rerun.written, rerun.existing, rerun.errors.map((e) => e.key)], [1, 8, [join("a", "marker.jpg")]]);
  } finally {
    await store.close();
    decoder.close();
  }
});

test("verify: strict stops at the first corrupt file with a named error; verifyUpTo below the count decodes nothing", async () => {
  const { root } = corruptFolder("strict");
  const decoder = await createJpegDecoder();
  const store = await openStore(`sqlite:${join(dir, "strict.sqlite")}`);
  try {
    try {
      await ingest(store, root, { dataset: "strict", verify: decoder, strict: true });
      assert.unreachable("strict stops at a file that does not decode");
    } catch (e) {
      assert.is((e as CassetteError).code, "ERR_MALFORMED_INPUT");
      assert.match((e as Error).message, /^Cannot ingest \S+(marker|cut)\.jpg as it does not decode: Cannot decode JPEG as .*: at byte \d+ \(stopped: --strict\)$/);
      assert.is(((e as Error).cause as { name?: string }).name, "JpegError", "the decoder's error is its cause");
    }
    const over = await ingest(store, root, { dataset: "over", verify: decoder, verifyUpTo: 9 });
    assert.equal([over.verified, over.written, over.errors.length], [false, 10, 0], "10 files > verifyUpTo 9: headers only");
    const under = await ingest(store, root, { dataset: "under", verify: decoder, verifyUpTo: 10 });
    assert.equal([under.verified, under.written, under.errors.length], [true, 8, 2]);
  } finally {
    await store.close();
    decoder.close();
  }
});

test("cassette ingest: small sources are verified by default and corrupt files listed (exit 1); --no-verify stores them; --help says so", () => {
  const { root, cutAt } = corruptFolder("cli");
  const store = `sqlite:${join(dir, "cli.sqlite")}`;
  const r = cassette("ingest", root, "--store", store, "--dataset", "auto");
  assert.is(r.code, 1, r.err);
  assert.match(r.out, /: 8 written, 0 already stored, 2 skipped/);
  assert.match(r.out, /each file written was decoded in full first/);
  // Said once each: one line per bad file, with its path, the reason and the byte.
  const lines = r.out.split("\n").filter((l) => l.includes("cut.jpg"));
  assert.equal(lines, [`  skipped ${join(root, "b", "cut.jpg")}: Cannot decode JPEG as a marker interrupts the entropy-coded data before the scan's last block: at byte ${cutAt}`]);
  assert.is(r.out.split("\n").filter((l) => l.includes("marker.jpg")).length, 1);

  const off = cassette("ingest", root, "--store", store, "--dataset", "off", "--no-verify");
  assert.is(off.code, 0, off.err);
  assert.match(off.out, /: 10 written, 0 already stored, 0 skipped/);

  const both = cassette("ingest", root, "--store", store, "--dataset", "x", "--verify", "--no-verify");
  assert.is(both.code, 2);
  assert.match(both.err, /--verify or --no-verify, not both/);

  const help = cassette("ingest", "--help");
  assert.match(help.out, /--verify +decode every JPEG and PNG in full/);
  assert.match(help.out, /default when the\s+source has at most 10000 files/);
  assert.match(help.out, /Ctrl-C stops after the samples being written, says how many are stored and where, and exits\s+with status 130/);
});

/**
 * A PNG written by Python's zlib whose compressed data ends in a wrong Adler-32, every chunk's
 * CRC correct: its header check passes, and only decoding finds it.
 */
function pngWithBadAdler(path: string): void {
  execFileSync("python3", ["-c", `
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
raw = b"".join(b"\\x00" + bytes((x * 7 + y) & 255 for x in range(24)) for y in range(16))
z = bytearray(zlib.compress(raw, 9)); z[-1] ^= 0x5a
png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 24, 16, 8, 0, 0, 0, 0)) + chunk(b"IDAT", bytes(z)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
`, path]);
}

test("cassette ingest: a PNG whose compressed data is corrupt passes the header check and is listed by the verifying decode", () => {
  const { root } = corruptFolder("png");
  pngWithBadAdler(join(root, "a", "adler.png"));
  const store = `sqlite:${join(dir, "png.sqlite")}`;
  const r = cassette("ingest", root, "--store", store, "--dataset", "png");
  assert.is(r.code, 1, r.err);
  assert.match(r.out, /: 8 written, 0 already stored, 3 skipped/);
  const lines = r.out.split("\n").filter((l) => l.includes("adler.png"));
  assert.is(lines.length, 1, r.out);
  assert.match(lines[0], /skipped .*adler\.png: .*Adler/i);
  const off = cassette("ingest", root, "--store", store, "--dataset", "png-off", "--no-verify");
  assert.match(off.out, /: 11 written, 0 already stored, 0 skipped/, "headers only: the PNG is stored");
});
