import * as assert from "uvu/assert";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { cassette } from "../_support/cli.ts";
import { cjpeg } from "../_support/cjpeg.ts";

// What a new user meets in the first hour (issue 38, "The first hour, again"): each message
// names the real problem, counts read as English, and a refused command leaves nothing behind.

test("ingest names a file by its signature: a text file named .png is text, a GIF named .jpg a GIF", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-first-"));
  try {
    mkdirSync(join(dir, "imgs", "a"), { recursive: true });
    writeFileSync(join(dir, "imgs", "a", "good.jpg"), cjpeg(new Uint8Array(64).fill(9), 8, 8, 1));
    writeFileSync(join(dir, "imgs", "a", "notes.png"), "hello, this is text\n");
    writeFileSync(join(dir, "imgs", "a", "anim.jpg"), "GIF89a\x01\x00\x01\x00\x00\x00\x00");
    const r = cassette("ingest", join(dir, "imgs"), "--store", `sqlite:${join(dir, "s.sqlite")}`, "--dataset", "d");
    assert.is(r.code, 1, r.err); // files skipped: exit status 1, as `cassette ingest --help` says
    assert.match(r.out, /notes\.png: not a JPEG \(FF D8\) nor a PNG \(89 50 4E 47\): it starts with 68 65 6C 6C 6F 2C 20 74 \("hello, t"\), text/);
    assert.match(r.out, /anim\.jpg: not a JPEG \(FF D8\) nor a PNG \(89 50 4E 47\): it starts with 47 49 46 .*, a GIF file/);
    assert.not.match(r.out, /no SOI marker/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
