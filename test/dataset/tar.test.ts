import * as assert from "uvu/assert";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { assertCassetteError } from "../_support/expect.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { NO_GNU_TAR, NO_PYTHON, pythonTarList, pythonTarWrite, sh } from "../_support/tar_tools.ts";
import { parseTar, readTar, TarError, TarReader, type TarEntry, writeTar } from "../../src/dataset/tar.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-tar-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sha1 = (b: Uint8Array) => createHash("sha1").update(b).digest("hex");
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Fresh entries: names up to 250 bytes (some over 100, some with non-ASCII), and sizes at the block edges. */
function randomEntries(seed: number): { name: string; data: Uint8Array }[] {
  const next = rng(seed);
  const sizes = [0, 1, 511, 512, 513, 1024, 300_000, randomInt(next, 2, 5000), randomInt(next, 2, 5000)];
  const seg = () => Array.from({ length: randomInt(next, 1, 12) }, () => "abcdefghijklmnopqrstuvwxyz0123456789_-"[randomInt(next, 0, 37)]).join("");
  return sizes.map((size, i) => {
    let name = `e${i}/${seg()}`;
    const long = i % 3 === 0;
    while (long && new TextEncoder().encode(name).length <= 100) name += `/${seg()}`;
    if (i === 4) name += "/ünïcödé-名前";
    return { name: `${name}.${["jpg", "cls", "json", "bin"][i % 4]}`, data: randomBytes(next, size) };
  });
}

function assertSameEntries(got: TarEntry[], want: { name: string; data: Uint8Array }[], what: string): void {
  assert.equal(got.map((e) => e.name), want.map((e) => e.name), `${what}: names`);
  got.forEach((e, i) => {
    assert.is(e.size, want[i].data.length, `${what}: size of ${e.name}`);
    assert.ok(same(e.data, want[i].data), `${what}: bytes of ${e.name}`);
  });
}

/** Feeds `bytes` to a TarReader in chunks of random sizes (1 byte to 3 blocks, and some large). */
function parseInChunks(bytes: Uint8Array, next: () => number, o = {}): TarEntry[] {
  const r = new TarReader(o);
  const out: TarEntry[] = [];
  for (let at = 0; at < bytes.length;) {
    const n = next() < 0.1 ? randomInt(next, 1, 3) : next() < 0.9 ? randomInt(next, 1, 1600) : randomInt(next, 1, 200_000);
    out.push(...r.push(bytes.subarray(at, at + n)));
    at += n;
  }
  r.end();
  return out;
}

// --- round trip --------------------------------------------------------------------------------

test("tar: fresh entries (names over 100 bytes, sizes 0, 1, 511, 512, 513, large) round-trip; chunks of any size parse alike", async () => {
  const seed = freshSeed();
  const entries = randomEntries(seed);
  const bytes = writeTar(entries);
  assert.is(bytes.length % 512, 0, `whole blocks (seed ${seed})`);
  assert.ok(bytes.subarray(bytes.length - 1024).every((b) => b === 0), "two zero blocks at the end");
  assertSameEntries(parseTar(bytes), entries, `whole (seed ${seed})`);
  const next = rng(seed ^ 0x5a5a);
  for (let k = 0; k < 5; k++) assertSameEntries(parseInChunks(bytes, next), entries, `chunked #${k} (seed ${seed})`);
  // The async form over a stream of chunks, as a shard over the network arrives.
  async function* chunks() {
    for (let at = 0; at < bytes.length; at += 777) yield bytes.subarray(at, at + 777);
  }
  const streamed: TarEntry[] = [];
  for await (const e of readTar(chunks())) streamed.push(e);
  assertSameEntries(streamed, entries, `streamed (seed ${seed})`);
  // Offsets point at each entry's data in the archive.
  for (const e of parseTar(bytes)) assert.ok(same(bytes.subarray(e.dataOffset, e.dataOffset + e.size), e.data), `dataOffset of ${e.name}`);
  // Byte-reproducible: the same entries give the same archive.
  assert.ok(same(writeTar(entries), bytes), "same entries, same bytes");
});

test("tar: declined bodies are not kept (one entry's bytes at a time), sizes and offsets still given", () => {
  const entries = randomEntries(freshSeed());
  const got = parseTar(writeTar(entries), { bodies: (name) => name.endsWith(".cls") });
  got.forEach((e, i) => {
    assert.is(e.size, entries[i].data.length);
    assert.is(e.data.length, e.name.endsWith(".cls") ? e.size : 0, e.name);
  });
});

// --- interoperability ------------------------------------------------------------------------

test("tar: archives we write are read by Python's tarfile and GNU tar with the same names and bytes", () => {
  const seed = freshSeed();
  const entries = randomEntries(seed);
  const path = join(dir, `ours-${seed}.tar`);
  writeFileSync(path, writeTar(entries));
  if (!NO_PYTHON) {
    const py = pythonTarList(path);
    assert.equal(py, entries.map((e) => ({ name: e.name, size: e.data.length, sha1: sha1(e.data) })), `python tarfile (seed ${seed})`);
  }
  if (!NO_GNU_TAR) {
    const listing = sh("tar", ["-tvf", path]).trim().split("\n");
    assert.is(listing.length, entries.length);
    listing.forEach((line, i) => {
      // -rw-r--r-- 0/0   513 1970-01-01 00:00 NAME
      const m = /^-rw-r--r-- 0\/0\s+(\d+) 1970-01-01 00:00 (.*)$/.exec(line);
      assert.ok(m, `tar -tv line: ${line}`);
      assert.is(Number(m![1]), entries[i].data.length, `size of ${entries[i].name}`);
      assert.is(m![2], entries[i].name, "name");
    });
    const out = join(dir, `x-${seed}`);
    mkdirSync(out);
    sh("tar", ["-xf", path, "-C", out]);
    for (const e of entries) assert.ok(same(new Uint8Array(readFileSync(join(out, e.name))), e.data), `GNU tar extracts ${e.name}`);
  }
}, { skip: NO_PYTHON && NO_GNU_TAR ? `${NO_PYTHON}; ${NO_GNU_TAR}` : false });

/** Files on disk for the other tools to archive: long nested names and block-edge sizes. */
function filesOnDisk(root: string, seed: number): { name: string; data: Uint8Array }[] {
  const entries = randomEntries(seed).filter((e) => new TextEncoder().encode(e.name).length < 240);
  for (const e of entries) {
    mkdirSync(join(root, dirname(e.name)), { recursive: true });
    writeFileSync(join(root, e.name), e.data);
  }
  return entries;
}

for (const format of ["gnu", "posix", "ustar"] as const) {
  test(`tar: GNU tar --format=${format} archives are read (long names, a directory and a symlink skipped)`, () => {
    const seed = freshSeed();
    const root = join(dir, `gnu-${format}-${seed}`);
    const entries = filesOnDisk(root, seed).filter((e) => format !== "ustar" || e.name.split("/").pop()!.length <= 100);
    symlinkSync("e0", join(root, "a-link"));
    const path = join(dir, `gnu-${format}-${seed}.tar`);
    sh("tar", [`--format=${format}`, "-cf", path, "-C", root, "a-link", ...entries.map((e) => e.name)]);
    const got = parseTar(new Uint8Array(readFileSync(path)), { shard: path });
    assertSameEntries(got, entries, `GNU tar ${format} (seed ${seed})`);
    // tar's own directory entries: adding the first entry's folder gives a directory header, skipped.
    const withDir = join(dir, `gnu-dir-${format}-${seed}.tar`);
    sh("tar", [`--format=${format}`, "-cf", withDir, "-C", root, "e1"]);
    const inDir = parseTar(new Uint8Array(readFileSync(withDir)));
    assert.equal(inDir.map((e) => e.name), entries.filter((e) => e.name.startsWith("e1/")).map((e) => e.name), "directories skipped, files read");
  }, { skip: NO_GNU_TAR });
}

for (const format of ["pax", "gnu", "ustar"] as const) {
  test(`tar: Python tarfile ${format} archives are read`, () => {
    const seed = freshSeed();
    const root = join(dir, `py-${format}-${seed}`);
    // ustar holds names up to 256 bytes split at a '/', its base name at most 100.
    const entries = filesOnDisk(root, seed).filter((e) => format !== "ustar" || e.name.split("/").pop()!.length <= 100);
    const spec = join(root, "spec.json");
    writeFileSync(spec, JSON.stringify(entries.map((e) => ({ name: e.name, file: join(root, e.name) }))));
    const path = join(dir, `py-${format}-${seed}.tar`);
    pythonTarWrite(path, spec, format);
    const bytes = new Uint8Array(readFileSync(path));
    assertSameEntries(parseTar(bytes), entries, `python ${format} (seed ${seed})`);
    assertSameEntries(parseInChunks(bytes, rng(seed)), entries, `python ${format}, chunked (seed ${seed})`);
  }, { skip: NO_PYTHON });
}

// --- corrupt archives ----------------------------------------------------------------------------

/** Parses `bytes` whole and in random chunks: both must fail with `code` matching `re`, at `offset`. */
function expectTarError(bytes: Uint8Array, code: string, re: RegExp, offset: number | ((o: number) => boolean), o = {}): void {
  for (const how of ["whole", "chunked"]) {
    try {
      if (how === "whole") parseTar(bytes, { shard: "shard-000007.tar", ...o });
      else parseInChunks(bytes, rng(freshSeed()), { shard: "shard-000007.tar", ...o });
      assert.unreachable(`${how}: should fail with ${code}`);
    } catch (e) {
      const err = assertCassetteError(e, code, re) as TarError;
      assert.instance(err, TarError);
      assert.match(err.message, /shard-000007\.tar/);
      if (typeof offset === "number") assert.is(err.offset, offset, `${how}: offset`);
      else assert.ok(offset(err.offset), `${how}: offset ${err.offset}`);
    }
  }
}

test("tar: corrupt archives give named errors with the shard and the byte offset", () => {
  const entries = [
    { name: "a.jpg", data: new Uint8Array(700).fill(7) },
    { name: "b.cls", data: new TextEncoder().encode("3") },
    { name: "x".repeat(120) + ".json", data: new Uint8Array(10) },
  ];
  const good = writeTar(entries);
  // Bad checksum: a byte of the second header's name changed.
  const bad = good.slice();
  bad[1536 + 1] ^= 0x20;
  expectTarError(bad, "ERR_MALFORMED_INPUT", /bad checksum.*offset 1536/, 1536);
  // Truncated inside the first entry's data, and inside a header.
  expectTarError(good.subarray(0, 900), "ERR_MALFORMED_INPUT", /entry 'a\.jpg' at offset 0 needs its 700 bytes.*truncated/, 900);
  expectTarError(good.subarray(0, 1536 + 100), "ERR_MALFORMED_INPUT", /ends inside a header.*truncated/, 1536);
  // The pax header without its entry.
  expectTarError(good.subarray(0, 3584), "ERR_MALFORMED_INPUT", /before the entry it describes/, 3584);
  // A size field that is not octal (checksum fixed so that the size is what fails).
  const notOctal = good.slice();
  notOctal.set(new TextEncoder().encode("0000000009x\0"), 124);
  notOctal.set(new TextEncoder().encode("        "), 148);
  let sum = 0;
  for (let k = 0; k < 512; k++) sum += notOctal[k];
  notOctal.set(new TextEncoder().encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  expectTarError(notOctal, "ERR_MALFORMED_INPUT", /size field is not octal: "0000000009x/, 0);
  // Over the per-entry limit: refused at its header, before its bytes are buffered.
  expectTarError(good, "ERR_TOO_LARGE", /entry 'a\.jpg' has 700 bytes: more than the limit of 600 \(maxEntryBytes\)/, 0, { maxEntryBytes: 600 });
  // Entries before a break in the same chunk are handed over; the error comes with the next call.
  const r = new TarReader({ shard: "s.tar" });
  assert.equal(r.push(bad).map((e) => e.name), ["a.jpg"]);
  assert.throws(() => r.end(), /bad checksum/);
  // A whole archive cut right after an entry (no end blocks) is accepted, as tar and tarfile do.
  assert.is(parseTar(good.subarray(0, 1536)).length, 1);
});
