import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { cassette } from "../_support/cli.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { runtime } from "../../runtime-adapters/index.ts";

/** `train.ts ...args` under the runtime of the test, to its end. */
function trainTs(...args: string[]) {
  const [cmd, ...pre] = runtime.scriptCommand("train.ts", args);
  return spawnSync(cmd, pre, { encoding: "utf8", timeout: 120_000 });
}

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

test("a dataset name ingest refuses: cassette id refuses it with ingest's words, and ingest makes no store file", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-first-"));
  try {
    const id = cassette("id", "fa'shion", "train/0");
    assert.is(id.code, 2, id.out);
    assert.is(id.out, "");
    const path = join(dir, "s.sqlite");
    const ing = cassette("ingest", dir, "--store", `sqlite:${path}`, "--dataset", "fa'shion");
    assert.is(ing.code, 2, ing.err);
    const words = /Cannot use the spec of dataset 'fa'shion' as its name must be 1–64 letters, digits/;
    assert.match(id.err, words);
    assert.match(ing.err, words);
    assert.not.ok(existsSync(path), "no store file was made for a refused name");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("counts read as English (1 sample, 1 shard); splits has no groups column without --group-by; the export's progress and summary agree on shards", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-first-"));
  try {
    const rows = ["path,label"];
    for (let i = 0; i < 5; i++) {
      writeFileSync(join(dir, `${i}.jpg`), cjpeg(new Uint8Array(64).fill(30 * i), 8, 8, 1));
      rows.push(`${i}.jpg,${i % 2}`);
    }
    writeFileSync(join(dir, "m.csv"), rows.join("\n") + "\n");
    writeFileSync(join(dir, "one.csv"), "path,label\n0.jpg,0\n");
    const store = `sqlite:${join(dir, "s.sqlite")}`;
    for (const [m, d] of [["m.csv", "five"], ["one.csv", "one"]]) {
      const r = cassette("ingest", join(dir, m), "--store", store, "--dataset", d);
      assert.is(r.code, 0, r.err);
    }
    const info = cassette("info", "--store", store, "--dataset", "one");
    assert.match(info.out, /one: 1 sample, /);

    const splits = cassette("splits", "--store", store, "--dataset", "five", "--ratios", "3,2", "--out", join(dir, "s.json"));
    assert.is(splits.code, 0, splits.err);
    assert.match(splits.out, /^split +0 +1 +total$/m);
    assert.not.match(splits.out, /groups/);

    // 5 samples, 2 a shard: 3 shards, the last closed only at the end.
    const exp = cassette("export", "--store", store, "--dataset", "five", "--format", "webdataset", "--shard-samples", "2", "--out", join(dir, "wds"));
    assert.is(exp.code, 0, exp.err);
    assert.match(exp.out, /: 5 samples in 3 shards /);
    // The progress lines (not the closing line, which takes the summary's count).
    const progressShards = [...exp.err.matchAll(/(\d+) shards?, [\d.]+ MB/g)].map((m) => Number(m[1]));
    assert.ok(progressShards.length > 0, exp.err);
    assert.is(progressShards.at(-1), 3, exp.err);
    // train.ts --split FILE:INDEX picks a split, as the CLI's --split does: 7 is no split of s.json.
    const train = trainTs("--store", store, "--dataset", "five", "--split", `${join(dir, "s.json")}:7`, "--epochs", "1");
    assert.is(train.status, 2, train.stderr);
    assert.match(train.stderr, /Cannot use split '7' of '.*s\.json': it has 0:\w+, 1:\w+/);
    assert.not.match(train.stderr, /^device /m, "checked before the device is opened (and before a first run's ingest)");
    const one = cassette("export", "--store", store, "--dataset", "one", "--format", "webdataset", "--out", join(dir, "wds1"));
    assert.is(one.code, 0, one.err);
    assert.match(one.out, /: 1 sample in 1 shard /);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("train.ts's unknown-option error names the command that runs it", () => {
  const r = trainTs("--frob");
  assert.is(r.status, 2, r.stderr);
  assert.match(r.stderr, /unknown option '--frob' \(see bun run train\.ts --help\)/);
});

test("cassette read --help names every store address it reads, s3:// and wds: among them", () => {
  const r = cassette("read", "--help");
  assert.is(r.code, 0, r.err);
  for (const a of ["sqlite:", "cassandra://", "http(s)://", "file:", "s3://", "wds:"]) assert.ok(r.out.includes(a), a);
});
