import * as assert from "uvu/assert";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "../_support/harness.ts";
import { cassette } from "../_support/cli.ts";
import { cjpeg } from "../_support/cjpeg.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";

test("cassette id --json prints the documented ids", () => {
  const r = cassette("id", "--json", "fashion-mnist", "train/0", "t10k/9");
  assert.is(r.code, 0, r.err);
  assert.equal(JSON.parse(r.out), {
    dataset: "fashion-mnist",
    ids: { "train/0": sampleId("fashion-mnist", "train/0"), "t10k/9": sampleId("fashion-mnist", "t10k/9") },
  });
});

test("every command has --help; bad use exits 2 with a message naming the problem", () => {
  for (const c of [[], ["id"], ["cassandra"]]) {
    const r = cassette(...c, "--help");
    assert.is(r.code, 0, `${c} --help: ${r.err}`);
    assert.match(r.out, /usage: cassette/);
  }
  const bad = cassette("id", "--frob");
  assert.is(bad.code, 2);
  assert.match(bad.err, /unknown option '--frob'.*cassette id --help/);
  const unknown = cassette("teleport");
  assert.is(unknown.code, 2);
  assert.match(unknown.err, /unknown command 'teleport'/);
  assert.match(cassette("cassandra", "reboot").err, /start, stop, status/);
});

test("cassette cassandra status --json reports the node's state", () => {
  const r = cassette("cassandra", "status", "--json");
  const doc = JSON.parse(r.out);
  assert.is(doc.command, "status");
  assert.is(doc.running, r.code === 0);
  assert.match(doc.output, /running|stopped/);
});

test("readers name a store address where nothing is, and make nothing there", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-cli-"));
  try {
    const path = join(dir, "typo", "store.sqlite");
    for (const args of [["info"], ["splits", "--dataset", "d", "--ratios", "8,2", "--out", join(dir, "s.json")]]) {
      const r = cassette(...args, "--store", `sqlite:${path}`);
      assert.is(r.code, 2, `${args[0]}: ${r.err}`);
      assert.match(r.err, new RegExp(`cassette ${args[0]}: Cannot open the SQLite store at '.*store\\.sqlite': there is no such file`));
    }
    assert.not.ok(existsSync(join(dir, "typo")), "no folder or file was made");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("cassette splits says how many samples a balance left out, in text and --json; --folds K makes k-fold splits", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-splits-"));
  try {
    // 6 samples of class a, 2 of class b: --balance equal keeps 2 of each.
    const rows: string[] = ["path,label"];
    for (let i = 0; i < 8; i++) {
      const px = new Uint8Array(8 * 8).fill(20 * i);
      writeFileSync(join(dir, `${i}.jpg`), cjpeg(px, 8, 8, 1));
      rows.push(`${i}.jpg,${i < 6 ? "a" : "b"}`);
    }
    writeFileSync(join(dir, "m.csv"), rows.join("\n") + "\n");
    const store = `sqlite:${join(dir, "s.sqlite")}`;
    const ing = cassette("ingest", join(dir, "m.csv"), "--store", store, "--dataset", "skew");
    assert.is(ing.code, 0, ing.err);
    const text = cassette("splits", "--store", store, "--dataset", "skew", "--ratios", "1", "--balance", "equal", "--out", join(dir, "a.json"));
    assert.is(text.code, 0, text.err);
    assert.match(text.out, "left out: 4 of 8 samples (--balance equal)");
    const json = cassette("splits", "--store", store, "--dataset", "skew", "--ratios", "1", "--out", join(dir, "b.json"), "--json");
    assert.is(json.code, 0, json.err);
    const doc = JSON.parse(json.out);
    assert.equal([doc.samples, doc.leftOut], [8, 0], "without a balance every sample is in a split");
    // k-fold: 3 folds of all 8, the params say so; --folds takes no ratios.
    const folds = cassette("splits", "--store", store, "--dataset", "skew", "--folds", "3", "--out", join(dir, "f.json"), "--json");
    assert.is(folds.code, 0, folds.err);
    const f = JSON.parse(folds.out);
    assert.equal([f.splits.map((s: { name: string }) => s.name), f.splits.map((s: { count: number }) => s.count).sort(), f.leftOut, f.params.folds], [["fold0", "fold1", "fold2"], [2, 3, 3], 0, 3]);
    const both = cassette("splits", "--store", store, "--dataset", "skew", "--folds", "3", "--ratios", "1,1", "--out", join(dir, "g.json"));
    assert.is(both.code, 2, both.err);
    assert.match(both.err, "--folds makes K equal folds of every sample: it takes no --ratios");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("cassette read --step-ms waits after each batch, --series gives each batch's hand-over time, --ids reads the ids listed", () => {
  const dir = mkdtempSync(join(tmpdir(), "cassette-series-"));
  try {
    const rows: string[] = ["path,label"];
    for (let i = 0; i < 10; i++) {
      writeFileSync(join(dir, `${i}.jpg`), cjpeg(new Uint8Array(8 * 8).fill(20 * i), 8, 8, 1));
      rows.push(`${i}.jpg,${i % 2}`);
    }
    writeFileSync(join(dir, "m.csv"), rows.join("\n") + "\n");
    const store = `sqlite:${join(dir, "s.sqlite")}`;
    assert.is(cassette("ingest", join(dir, "m.csv"), "--store", store, "--dataset", "s").code, 0);
    const r = cassette("read", "--store", store, "--dataset", "s", "--batch", "3", "--step-ms", "60", "--series", "--json");
    assert.is(r.code, 0, r.err);
    const doc = JSON.parse(r.out);
    assert.is(doc.samples, 10);
    assert.is(doc.stepMs, 60);
    const at: number[] = doc.batchAtMs;
    assert.is(at.length, 4, "one hand-over time per batch");
    // The step follows each batch, so batches are at least a step apart; the wait is not a batch time.
    for (let i = 1; i < at.length; i++) assert.ok(at[i] - at[i - 1] >= 59, `batch ${i} came ${at[i] - at[i - 1]} ms after batch ${i - 1}`);
    assert.ok(doc.batchMs.p50 >= 59, `a batch time spans the step: p50 ${doc.batchMs.p50} ms`);
    assert.ok(doc.waitMs.p50 < 55, `the step is not counted as waiting for a batch: p50 ${doc.waitMs.p50} ms`);
    assert.ok(doc.seconds >= 0.24, `the steps are in the read's time: ${doc.seconds} s`);
    assert.is(cassette("read", "--store", store, "--dataset", "s", "--step-ms", "-1").code, 2, "a negative step is refused");

    // --ids: exactly the samples listed, as another loader's list gives them.
    const some = [1, 4, 7, 8].map((i) => sampleId("s", `${i}.jpg`));
    writeFileSync(join(dir, "ids.txt"), `${some.join("\n")}\n\n`);
    const listed = cassette("read", "--store", store, "--dataset", "s", "--ids", join(dir, "ids.txt"), "--json");
    assert.is(listed.code, 0, listed.err);
    assert.is(JSON.parse(listed.out).samples, 4, "the four listed samples, no more");
    // Read workers open the store while this thread lists the ids (or reads the list), then read.
    for (const more of [["--ids", join(dir, "ids.txt")], []]) {
      const w = cassette("read", "--store", store, "--dataset", "s", "--workers", "2", "--decode", "--json", ...more);
      assert.is(w.code, 0, w.err);
      const d = JSON.parse(w.out);
      assert.equal([d.samples, d.workers, d.errors], [more.length ? 4 : 10, 2, 0], `with read workers ${more.join(" ")}`);
    }
    writeFileSync(join(dir, "bad.txt"), `${some[0]}\nnot-a-uuid\n`);
    const bad = cassette("read", "--store", store, "--dataset", "s", "--ids", join(dir, "bad.txt"));
    assert.is(bad.code, 2, bad.err);
    assert.match(bad.err, /line 2 of --ids file '.*bad\.txt'.*'not-a-uuid' is not a UUID/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
