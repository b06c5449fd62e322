// The scan record (src/decode/scan_record.ts, NOTE [ Scan record ]): a JPEG's scan as the GPU
// decode hands it over in a packet. It must read back as the scan written, every array a view
// of the buffer, wherever it lies and whatever the buffer held before; a record that does not
// hold together is a named error saying where.
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { createJpegDecoder } from "../../src/decode/jpeg.ts";
import { isJpegScan, type JpegScan } from "../../src/decode/jpeg_scan.ts";
import { readScanRecord, scanBytes, writeScan } from "../../src/decode/scan_record.ts";
import { CassetteError } from "../../src/errors.ts";

/** Fresh cjpeg files: every sampling, grey and RGB, with and without restart markers. */
function files(next: () => number): { what: string; bytes: Uint8Array }[] {
  const out: { what: string; bytes: Uint8Array }[] = [];
  const kinds = ["1x1", "2x1", "2x2", "1x2", "grey", "rgb"];
  for (let i = 0; i < 12; i++) {
    const kind = kinds[i % kinds.length];
    const w = randomInt(next, 1, 90), h = randomInt(next, 1, 70);
    const channels = kind === "grey" ? 1 : 3;
    const args = ["-quality", String(randomInt(next, 5, 100))];
    if (kind === "rgb") args.push("-rgb");
    else if (channels === 3) args.push("-sample", `${kind},1x1,1x1`);
    if (next() < 0.5) args.push("-optimize");
    // Half with restart markers: several intervals, each its own run of `entropy`.
    if (i % 2 === 1) args.push("-restart", `${randomInt(next, 1, 4)}B`);
    out.push({ what: `${w}×${h} ${args.join(" ")}`, bytes: cjpeg(randomBytes(next, w * h * channels), w, h, channels, args) });
  }
  return out;
}

function sameScan(got: JpegScan, want: JpegScan, what: string): void {
  const head = (s: JpegScan) => [s.kind, s.width, s.height, s.colorSpace, s.orientation, s.mcusX, s.mcusY, s.restartInterval, s.components.length];
  assert.equal(head(got), head(want), `${what}: the header`);
  got.components.forEach((c, j) => {
    const w = want.components[j];
    assert.equal([c.id, c.h, c.v, c.blocksW, c.blocksH, c.width, c.height, c.dc, c.ac], [w.id, w.h, w.v, w.blocksW, w.blocksH, w.width, w.height, w.dc, w.ac], `${what}: component ${j}`);
    assert.equal(Array.from(c.quant), Array.from(w.quant), `${what}: component ${j}'s quant table`);
  });
  assert.is(got.tables.length, 8, `${what}: 8 table slots`);
  got.tables.forEach((t, s) => {
    const w = want.tables[s];
    assert.is(t === undefined, w === undefined, `${what}: table ${s} defined`);
    if (t && w) assert.equal([Array.from(t.counts), Array.from(t.symbols)], [Array.from(w.counts), Array.from(w.symbols)], `${what}: table ${s}`);
  });
  assert.equal(Array.from(got.entropy), Array.from(want.entropy), `${what}: the entropy-coded data`);
  assert.equal(Array.from(got.intervals), Array.from(want.intervals), `${what}: the intervals`);
  assert.equal(Array.from(got.file), Array.from(want.file), `${what}: the file`);
}

test("a scan record reads back as the scan written, its arrays views of the buffer, with and without restart intervals", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const jpeg = await createJpegDecoder();
  try {
    let restarts = 0;
    for (const f of files(next)) {
      const what = `seed ${seed}, ${f.what}`;
      const scan = jpeg.readScan(f.bytes);
      assert.ok(isJpegScan(scan), `${what}: ${!isJpegScan(scan) && scan.reason}`);
      if (scan.intervals.length > 2) restarts++;
      const n = scanBytes(scan);
      assert.is(n % 4, 0, `${what}: a record's length is whole words`);
      // At a random word of a buffer holding noise, as a reused packet buffer does.
      const at = 4 * randomInt(next, 0, 16);
      const buf = randomBytes(next, at + n + randomInt(next, 0, 40));
      assert.is(writeScan(scan, buf, at), n);
      const back = readScanRecord(buf, at, n);
      sameScan(back, scan, what);
      for (const a of [back.entropy, back.intervals, back.file, back.components[0].quant, back.tables.find((t) => t)!.symbols]) {
        assert.is(a.buffer, buf.buffer, `${what}: a view of the record`);
      }
      // What the record holds is what the GPU decodes: the decoder's own scan of the copied file.
      sameScan(back, jpeg.readScan(back.file.slice()) as JpegScan, `${what}: the file read again`);
    }
    assert.ok(restarts >= 3, `seed ${seed}: only ${restarts} files with several restart intervals`);
  } finally {
    jpeg.close();
  }
});

test("a scan record that does not hold together is ERR_MALFORMED_INPUT saying where; one that does not fit is not written", async () => {
  const seed = freshSeed();
  const next = rng(seed);
  const jpeg = await createJpegDecoder();
  try {
    const [f] = files(next);
    const scan = jpeg.readScan(f.bytes) as JpegScan;
    const n = scanBytes(scan);
    const buf = new Uint8Array(n + 8);
    writeScan(scan, buf, 4);
    const named = (where: RegExp) => (e: unknown) => e instanceof CassetteError && e.code === "ERR_MALFORMED_INPUT" && /scan record at byte \d+/.test(e.message) && where.test(e.message);
    assert.throws(() => readScanRecord(buf, 4, n - 4), named(/its file .* runs past its end/), "cut short");
    assert.throws(() => readScanRecord(buf, 4, 40), named(/4-byte boundary and lie within/), "shorter than a header");
    assert.throws(() => readScanRecord(buf, 6, n), named(/4-byte boundary/), "not on a word");
    assert.throws(() => readScanRecord(buf, 4, n + 8), named(/lie within the \d+ bytes/), "past the buffer");
    assert.throws(() => readScanRecord(new Uint8Array(n + 8), 4, n), named(/its header is not one \(magic 0/), "zeros");
    assert.throws(() => readScanRecord(randomBytes(next, n + 8), 4, n), named(/header is not one/), "noise");
    // A count that names more symbols than the record holds.
    const bent = buf.slice();
    const header = (16 + scan.components.length * 8) * 4 + scan.components.length * 128;
    bent.fill(255, 4 + header, 4 + header + 16);
    assert.throws(() => readScanRecord(bent, 4, header + 64), named(/Huffman table 0's 4080 symbols/), "a table past the end");
    assert.throws(
      () => writeScan(scan, new Uint8Array(n + 2), 4),
      (e: unknown) => e instanceof CassetteError && e.code === "ERR_INVALID_OPTION" && e.message.includes(`scan record of ${n} bytes at 4`),
    );
    assert.throws(() => writeScan(scan, buf, 2), (e: unknown) => e instanceof CassetteError && /4-byte boundaries/.test(e.message));
  } finally {
    jpeg.close();
  }
});
