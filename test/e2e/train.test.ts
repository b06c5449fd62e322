/**
 * train.ts end to end on real Fashion-MNIST: ingest into its default store, the Loader, the wasm
 * decoder, GPU preprocessing and training, evaluation, metrics and plots, and its errors.
 */
import * as assert from "uvu/assert";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { tables } from "../../src/dataset/schema.ts";
import { openStore } from "../../src/source/open.ts";
import { createSplits, saveSplits, type SplitFile } from "../../src/dataset/splits.ts";
import type { NatRow } from "../../src/dataset/store.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-train-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ROOT = runtime.cwd();
// The first test makes train.ts's default store, sqlite:data/fashion-mnist.sqlite, in `dir`.
const store = `sqlite:${join(dir, "data/fashion-mnist.sqlite")}`;

function spawnTrain(args: string[], o: { cwd?: string; env?: Record<string, string> } = {}) {
  const [cmd, ...rest] = runtime.scriptCommand(join(ROOT, "train.ts"), args);
  return spawnSync(cmd, rest, { encoding: "utf8", timeout: 300_000, cwd: o.cwd, env: { ...process.env, ...o.env } });
}
function train(...args: string[]) {
  return parsed(spawnTrain(args), args);
}
function parsed(r: ReturnType<typeof spawnSync>, args: string[]) {
  if (r.status !== 0) throw new Error(`train.ts ${args.join(" ")} exited ${r.status}:\n${r.stderr}`);
  return JSON.parse(String(r.stdout).trim().split("\n").pop()!);
}

// 600 = 9 × 64 + 24: every epoch ends with a short batch.
const LIMIT = 600, BATCH = 64, STEPS = Math.ceil(LIMIT / BATCH), SHORT = LIMIT % BATCH;

/** The <circle> markers of a series in an SVG train.ts wrote. */
function markers(svg: string, series: string): number {
  const attr = `<circle data-series="${series.replaceAll("'", "&apos;")}"`;
  return svg.split(attr).length - 1;
}

test("train.ts makes its default store, ingests Fashion-MNIST once, trains on every sample (the short last batch too) and plots every epoch and step", () => {
  const out = join(dir, "run1");
  const args = ["--limit", String(LIMIT), "--batch", String(BATCH), "--epochs", "2", "--model", "mlp", "--out", out, "--json"];
  const r = parsed(spawnTrain(args, { cwd: dir }), args);
  assert.ok(existsSync(join(dir, "data/fashion-mnist.sqlite")), "the default store, relative to the working directory");
  assert.is(r.store, `sqlite:data/fashion-mnist.sqlite`);
  assert.is(r.ingested, 2 * LIMIT, "600 from train + 600 from t10k");
  assert.ok(r.ingestSeconds > 0, `the ingest's time is its own figure: ${r.ingestSeconds}`);
  assert.is(r.model, "mlp");
  assert.is(r.io, "loader");
  assert.is(r.epochs.length, 2);
  for (const [i, e] of r.epochs.entries()) {
    assert.is(e.epoch, i + 1);
    for (const k of ["seconds", "imagesPerSec", "loss", "testAccuracy", "waitShare"]) assert.type(e[k], "number", `epochs[${i}].${k}`);
    assert.is(e.samples, LIMIT, "every sample is trained on: the last batch of 24 is kept");
    assert.ok(e.waitShare >= 0 && e.waitShare <= 1);
    // Each step's loss, the short last batch's included; weighted by batch size they average to the epoch's loss.
    assert.is(e.stepLoss.length, STEPS);
    const size = (k: number) => (k === STEPS - 1 ? SHORT : BATCH);
    const mean = e.stepLoss.reduce((a: number, l: number, k: number) => a + l * size(k), 0) / LIMIT;
    assert.ok(Math.abs(mean - e.loss) < 1e-3 * e.loss, `epoch ${i + 1}: steps average ${mean}, epoch loss ${e.loss}`);
  }
  assert.ok(r.epochs[1].loss < r.epochs[0].loss, `the loss falls: ${r.epochs.map((e: { loss: number }) => e.loss)}`);
  // 600 images, 2 epochs of an MLP: far above chance (10 %), well short of convergence.
  assert.ok(r.epochs[1].testAccuracy > 0.55, `test accuracy ${r.epochs[1].testAccuracy}`);
  // The loader handed over each planned sample exactly once per epoch.
  assert.is(r.loader.samples, 2 * LIMIT);
  assert.is(r.loader.duplicates, 0);
  assert.is(r.loader.errors, 0);
  // One metrics line per epoch, and the plots drawn from them, every point marked.
  const lines = readFileSync(join(out, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.map((l) => l.epoch), [1, 2]);
  assert.is(lines[1].testAccuracy, r.epochs[1].testAccuracy);
  assert.equal(lines[1].stepLoss, r.epochs[1].stepLoss);
  const svg = (f: string) => readFileSync(join(out, f), "utf8");
  for (const f of ["loss.svg", "accuracy.svg", "steps.svg", "throughput.svg"]) {
    assert.ok(svg(f).includes("<svg") && svg(f).trim().endsWith("</svg>"), `${f} is an SVG document`);
    assert.ok((svg(f).match(/<path/g) ?? []).length >= 2, `${f} draws two curves`);
  }
  assert.is(markers(svg("loss.svg"), "test"), 2, "a point per epoch");
  assert.is(markers(svg("steps.svg"), "train (each step's batch)"), 2 * STEPS, "a point per step");
  assert.is(markers(svg("steps.svg"), "test (after each epoch)"), 2);
  const t = svg("throughput.svg");
  assert.is(markers(t, "images/s"), 2);
  assert.is(markers(t, "waiting (%)"), 2);
  assert.match(t, /class="y-right-ticks"[^>]*>\n<text[^>]*data-value="0"/, "the wait share has its own axis, from 0");
  assert.match(t, />waiting for data \(% of the epoch\)</);
}, { timeoutMs: 400_000 });

test("strict order through the loader (decoding in this thread, or reading and decoding in workers, or the hybrid or GPU decode) trains exactly as --no-io on the same pixels", () => {
  // Same seed → same permutation, same initial weights; strict order feeds batches in plan
  // order, and --no-io gathers the same decoded pixels on the GPU in that order. Any error in
  // the loader, the decoder or the preprocessing kernel would change the losses.
  const common = ["--store", store, "--limit", String(LIMIT), "--batch", String(BATCH), "--epochs", "2", "--model", "mlp", "--seed", "3", "--json"];
  const viaLoader = train(...common, "--order", "strict", "--workers", "0", "--out", join(dir, "strict"));
  const noIo = train(...common, "--no-io", "--out", join(dir, "noio"));
  const pooled = train(...common, "--order", "strict", "--out", join(dir, "pooled"));
  // The hybrid decode: the IDCT on the GPU (here lavapipe, asked for: auto keeps the CPU's there).
  const hybrid = train(...common, "--order", "strict", "--decode", "hybrid", "--out", join(dir, "hybrid"));
  // The GPU decode: the Huffman codes on the GPU too, samples read in this thread. train.ts's
  // wiring is the same in every runtime, and test/loader/gpu_decode.test.ts reads in all three:
  // one runtime's run is enough here.
  const gpu = runtime.name === "bun" ? train(...common, "--order", "strict", "--decode", "gpu", "--workers", "0", "--out", join(dir, "gpu")) : undefined;
  assert.equal([pooled.decode, hybrid.decode], ["cpu", "hybrid"], "auto decodes on the CPU on a CPU driver");
  if (gpu) assert.is(gpu.decode, "gpu");
  assert.is(viaLoader.ingested, 0, "nothing is stored twice");
  assert.is(noIo.io, "none");
  assert.equal(viaLoader.workers, 0);
  assert.ok(pooled.workers >= 2, `read workers by default, a CPU driver too (NOTE [ Read workers: how many ]): ${pooled.workers}`);
  for (let e = 0; e < 2; e++) {
    const a = viaLoader.epochs[e], b = noIo.epochs[e], c = pooled.epochs[e];
    assert.ok(Math.abs(c.loss - a.loss) < 1e-6, `epoch ${e + 1}: reading and decoding in workers (batches of their packets) gives the pixels of reading here: ${c.loss} vs ${a.loss}`);
    assert.ok(Math.abs(hybrid.epochs[e].loss - c.loss) < 1e-6, `epoch ${e + 1}: the hybrid decode gives the CPU decode's pixels: ${hybrid.epochs[e].loss} vs ${c.loss}`);
    if (gpu) assert.ok(Math.abs(gpu.epochs[e].loss - c.loss) < 1e-6, `epoch ${e + 1}: the GPU decode gives the CPU decode's pixels: ${gpu.epochs[e].loss} vs ${c.loss}`);
    assert.ok(Math.abs(a.loss - b.loss) < 1e-4, `epoch ${e + 1} loss: loader ${a.loss} vs no-io ${b.loss}`);
    assert.ok(Math.abs(a.testAccuracy - b.testAccuracy) <= 1 / LIMIT, `epoch ${e + 1} test accuracy: ${a.testAccuracy} vs ${b.testAccuracy}`);
  }
}, { timeoutMs: 400_000 });

test("train.ts --augment: the training samples augmented and mixed (the loss changes), the same seed the same run; with --no-io, or a bad policy, refused by name", () => {
  const common = ["--store", store, "--limit", String(LIMIT), "--batch", String(BATCH), "--epochs", "2", "--model", "mlp", "--seed", "5", "--order", "strict", "--workers", "0", "--json"];
  const policy = "photos,jitter=0.3,mixup=0.4,cutmix";
  const plain = train(...common, "--out", join(dir, "aug0"));
  const a = train(...common, "--augment", policy, "--out", join(dir, "aug1"));
  const b = train(...common, "--augment", policy, "--out", join(dir, "aug2"));
  assert.equal(a.augment, { trivial: true, erase: { p: 0.25 }, jitter: { brightness: 0.3, contrast: 0.3, saturation: 0.3 }, mix: { mixup: { alpha: 0.4 }, cutmix: {} } });
  for (let e = 0; e < 2; e++) {
    assert.is(a.epochs[e].loss, b.epochs[e].loss, `epoch ${e + 1}: seeded draws, the same losses`);
    assert.is(a.epochs[e].testAccuracy, b.epochs[e].testAccuracy);
    assert.ok(Math.abs(a.epochs[e].loss - plain.epochs[e].loss) > 1e-3, `epoch ${e + 1}: augmented ${a.epochs[e].loss} vs plain ${plain.epochs[e].loss}`);
    assert.ok(a.epochs[e].testAccuracy > 0.3, `still learns: ${a.epochs[e].testAccuracy}`);
  }
  const r = spawnTrain(["--store", store, "--augment", "trivial", "--no-io", "--out", join(dir, "bad")]);
  assert.is(r.status, 2, r.stderr);
  assert.match(r.stderr, /'--augment' runs in the preprocessing pass, which --no-io skips/);
  const bad = spawnTrain(["--store", store, "--augment", "mixup=-1", "--out", join(dir, "bad")]);
  assert.is(bad.status, 2, bad.stderr);
  assert.match(bad.stderr, /mix\.mixup\.alpha' must be a number > 0/);
}, { timeoutMs: 400_000 });

test("train.ts --save writes weights, and bad options fail with an error that names them", () => {
  const weights = join(dir, "mlp.weights");
  train("--store", store, "--limit", "128", "--batch", "64", "--epochs", "1", "--model", "mlp", "--save", weights, "--out", join(dir, "save"), "--json");
  assert.ok(existsSync(weights) && readFileSync(weights).length > 784 * 256 * 4, "the weights file holds the parameters");
  const fails = (args: string[], text: string) => {
    const r = spawnTrain([...args, "--out", join(dir, "bad")]);
    assert.is(r.status, 2, `exit status for ${args.join(" ")}: ${r.stderr}`);
    assert.ok(r.stderr.includes(text), `stderr names the problem (${text}): ${r.stderr}`);
  };
  fails(["--store", store, "--model", "resnet"], "'--model' must be one of mlp");
  fails(["--store", store, "--limit", "128", "--latency-ms", "20"], "'--latency-ms' needs a network store");
  fails(["--store", store, "--epochs", "0"], "'--epochs' must be an integer ≥ 1: current value is 0");
  fails(["--store", store, "--dataset", "nope"], "nope");
  // A typo in --store: only the default store is made; this one is not, and nothing is ingested.
  const typo = join(dir, "data/fashon-mnist.sqlite");
  fails(["--store", `sqlite:${typo}`, "--limit", "128"], "train.ts makes only its default store (sqlite:data/fashion-mnist.sqlite); for Fashion-MNIST in another: cassette ingest idx:");
  fails(["--store", `sqlite:${typo}`, "--limit", "128"], "[ERR_STORE]");
  assert.not.ok(existsSync(typo), "no store made at the typo");
  const help = spawnTrain(["--help"]);
  assert.is(help.status, 0);
  assert.ok(help.stdout.includes("--no-io") && help.stdout.includes("--latency-ms"));
}, { timeoutMs: 400_000 });

test("train.ts --transform runs a module on every training sample once an epoch in the decode pool (slow ones in the slow lane), never on the test samples; its bad uses are named", () => {
  const seen = join(dir, "transform-seen.txt"), trace = join(dir, "transform-trace.jsonl");
  const options = { file: seen, keepImage: true, fastMs: 0.2, slowMs: [20, 40], slowShare: 0.2 };
  const module = join(ROOT, "test/fixtures/transforms/record.ts");
  const r = train("--store", store, "--limit", "200", "--batch", "32", "--epochs", "2", "--model", "mlp", "--transform", module,
    "--transform-options", JSON.stringify(options), "--trace-ids", trace, "--out", join(dir, "transform"), "--json");
  const trained = new Map<string, number>();
  for (const line of readFileSync(trace, "utf8").trim().split("\n")) {
    const { epoch, ids } = JSON.parse(line) as { epoch: number; ids: string[] };
    for (const id of ids) trained.set(`${epoch} ${id}`, (trained.get(`${epoch} ${id}`) ?? 0) + 1);
  }
  assert.is(trained.size, 2 * 200, "every training sample in each epoch");
  assert.ok([...trained.values()].every((n) => n === 1), "once each");
  const counts = new Map<string, number>();
  for (const id of readFileSync(seen, "utf8").trim().split("\n")) counts.set(id, (counts.get(id) ?? 0) + 1);
  const trainIds = new Set([...trained.keys()].map((k) => k.split(" ")[1]));
  assert.equal([...counts.keys()].sort(), [...trainIds].sort(), "the transform saw the training samples, and no test sample");
  // Once an epoch each, but for the epoch tail's re-asks (NOTE [ Epoch tail ]): a sample still
  // in the pool long after the rest (a slow one on a loaded machine) is asked for again, and
  // its transform may run twice; the ledger still trains on it once (above).
  const extra = [...counts.values()].reduce((a, n) => a + n - 2, 0);
  const again = r.loader as { reasked: number; hedged: number; retries: number };
  const reasked = again.reasked + again.hedged + again.retries;
  assert.ok([...counts.values()].every((n) => n >= 2), "at least once an epoch each");
  assert.ok(extra <= reasked, `more runs than once an epoch only where a sample was asked for again: ${extra} extra, ${reasked} re-asked`);
  const prepare = r.loader.prepare as { jobs: number; slowLane: number };
  assert.is(prepare.jobs, 400, "the decode pool ran every training sample's job");
  assert.ok(prepare.slowLane > 0, `a fifth of the samples cost 100× the rest: some took the slow lane (${prepare.slowLane})`);
  assert.ok(r.epochs.every((e: { testAccuracy: number }) => e.testAccuracy > 0.4), "it still learns");

  const fails = (args: string[], text: string) => {
    const f = spawnTrain(["--store", store, "--limit", "64", "--epochs", "1", ...args, "--out", join(dir, "bad")]);
    assert.ok(f.status !== 0, `${args.join(" ")} fails`);
    assert.ok(f.stderr.includes(text), `stderr names the problem (${text}): ${f.stderr}`);
  };
  fails(["--transform-options", "{}"], "'--transform-options' needs --transform");
  fails(["--transform", module, "--transform-options", "{nope"], "'--transform-options' must be JSON: current value is {nope");
  fails(["--transform", module, "--no-io"], "'--transform' needs the loader");
  fails(["--transform", join(dir, "no-such-module.ts")], "no-such-module.ts");
}, { timeoutMs: 400_000 });

test("train.ts prints its progress and information on stderr in the terminal's colour (Bun's console.error is red), and says the size of the short last batch", () => {
  // FORCE_COLOR makes Bun colour console.error as on a terminal.
  const r = spawnTrain(["--store", store, "--limit", "100", "--batch", "64", "--epochs", "1", "--model", "mlp", "--out", join(dir, "colour")], { env: { FORCE_COLOR: "1" } });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /^model {4}mlp .*batch 64 \(2 steps an epoch, the last of 36\)/m);
  assert.match(r.stderr, /^epoch 1\/1 100\/100 100%/m);
  assert.not.match(r.stderr, /\x1b\[31m/, `no red on stderr: ${JSON.stringify(r.stderr.slice(0, 300))}`);
}, { timeoutMs: 400_000 });

test("train.ts --split says which splits it uses and how many samples the file's class balance leaves out", async () => {
  const st = await openStore(store, { create: false });
  let file: SplitFile;
  try {
    const rows: NatRow[] = [];
    for await (const page of st.scanNat("fashion-mnist")) rows.push(...page);
    file = createSplits(await st.getDataset("fashion-mnist"), rows, { ratios: [8, 2], balance: "equal", seed: 1 });
  } finally {
    await st.close();
  }
  const path = join(dir, "equal.splits.json");
  await saveSplits(path, file);
  const [train, test] = file.splits;
  const left = 2 * LIMIT - train.ids.length - test.ids.length;
  assert.ok(left > 0, "equal classes from the first 1200 samples leave some out");
  // --limit as the store's: nothing more to ingest.
  const r = spawnTrain(["--store", store, "--split", path, "--limit", String(LIMIT), "--batch", "64", "--epochs", "1", "--model", "mlp", "--out", join(dir, "split")]);
  assert.is(r.status, 0, r.stderr);
  assert.ok(
    r.stderr.includes(`split    ${path}: trains on 'train' (${train.ids.length}), tests on 'test' (${test.ids.length}); ${left} of the dataset's ${2 * LIMIT} samples are in no split (left out by its class balance or max)`),
    r.stderr,
  );
}, { timeoutMs: 400_000 });

test("node train.ts, with no loader-hook flags: train.ts registers the hooks its WGSL imports need", () => {
  // process.execPath is the Node running this file (Node 22, which runs TypeScript); no --import.
  const args = [join(ROOT, "train.ts"), "--store", store, "--limit", "128", "--batch", "64", "--epochs", "1", "--model", "mlp", "--out", join(dir, "plain-node"), "--json"];
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const r = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 300_000, env });
  const doc = parsed(r, args);
  assert.is(doc.epochs.length, 1);
  assert.match(doc.device.runtime, /^node /);
}, { skip: runtime.name !== "node" && "plain `node train.ts` is checked by the node run of this file", timeoutMs: 400_000 });

test("a stored sample that does not decode: train.ts stops naming it, or with --on-error skip trains on the rest and counts what it left out", () => {
  // A copy of the store where every sample whose id starts with 0 (about one in 16) has its
  // JPEG cut in the middle of the entropy data, then closed with EOI.
  const copy = join(dir, "corrupt.sqlite");
  copyFileSync(join(dir, "data/fashion-mnist.sqlite"), copy);
  const db = runtime.openSqlite(copy);
  const t = tables("fashion-mnist").data;
  let cut = 0;
  for (const row of db.prepare(`SELECT id, data FROM "${t}" WHERE substr(id, 1, 1) = '0'`).all()) {
    const data = row.data as Uint8Array;
    const bad = new Uint8Array(Math.floor(data.length / 2) + 2);
    bad.set(data.subarray(0, bad.length - 2));
    bad.set([0xff, 0xd9], bad.length - 2);
    db.prepare(`UPDATE "${t}" SET data = ? WHERE id = ?`).run(bad, row.id as string);
    cut++;
  }
  db.close();
  assert.ok(cut > 20, `${cut} samples cut`);
  const args = ["--store", `sqlite:${copy}`, "--limit", String(LIMIT), "--batch", String(BATCH), "--model", "mlp"];
  const stopped = spawnTrain([...args, "--epochs", "1", "--out", join(dir, "corrupt-throw"), "--json"]);
  assert.not.equal(stopped.status, 0, "the default stops");
  // Named by its key and id, then the decoder's reason and the epoch.
  assert.match(stopped.stderr, /Cannot decode sample '(train|t10k)\/\d+' \(id 0[0-9a-f-]{35}\) from .*: Cannot decode JPEG.*\(epoch 0\)/);
  const r = train(...args, "--epochs", "2", "--on-error", "skip", "--out", join(dir, "corrupt-skip"), "--json");
  const [a, b] = r.epochs;
  assert.ok(a.skipped > 0 && a.testSkipped > 0, `training and test samples were skipped: ${a.skipped}, ${a.testSkipped}`);
  for (const e of r.epochs) assert.is(e.samples + e.skipped, LIMIT, `epoch ${e.epoch}: every planned sample trained on or counted as skipped`);
  assert.is(b.testSkipped, a.testSkipped, "the test split is read whole each time: the same samples are left out");
  assert.ok(r.loader.errors >= a.skipped + b.skipped, "the training loader counted each one (and any of its read-ahead)");
  assert.ok(b.testAccuracy > 0.55, `trained on the rest: test accuracy ${b.testAccuracy}`);
}, { timeoutMs: 400_000 });

test("Ctrl-C during the first run's ingest: train.ts says what is stored and exits 130, as cassette ingest does; the re-run resumes", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "cassette-train-ingest-"));
  try {
    const limit = 1500; // 3000 samples: several chunks of 512, so the Ctrl-C lands part-way
    const args = ["--limit", String(limit), "--epochs", "1", "--model", "mlp", "--out", join(cwd, "out")];
    const [cmd, ...rest] = runtime.scriptCommand(join(ROOT, "train.ts"), args);
    const child = spawn(cmd, rest, { cwd, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "", sent = false;
    child.stderr!.setEncoding("utf8");
    const exited = new Promise<[number | null, string | null]>((r) => child.once("close", (code, signal) => r([code, signal])));
    child.stderr!.on("data", (c: string) => {
      stderr += c;
      // After the second progress line, as a user would press Ctrl-C. process.kill, not
      // child.kill: Deno reports a child it signalled as killed by that signal, whatever its exit.
      if (!sent && (stderr.match(/^ingest \d+\/\d+/gm) ?? []).length >= 2) sent = process.kill(child.pid!, "SIGINT");
    });
    const [code, signal] = await exited;
    assert.is(signal, null, `it exits by itself, not by the signal: ${stderr}`);
    assert.is(code, 130, stderr);
    const said = stderr.match(/ingest interrupted after (\d+) of the (\d+) samples of dataset 'fashion-mnist': (\d+) are in sqlite:data\/fashion-mnist\.sqlite/);
    assert.ok(said, `says what is stored: ${stderr}`);
    assert.is(Number(said![2]), 2 * limit);
    assert.ok(Number(said![3]) > 0 && Number(said![3]) < 2 * limit, `stopped part-way: ${said![3]}`);
    assert.match(stderr, /Run the same command again to resume/);
    const again = spawnTrain(args, { cwd });
    assert.is(again.status, 0, again.stderr);
    assert.match(again.stderr, new RegExp(`^ingest   ${2 * limit - Number(said![3])} samples into`, "m"), "the re-run writes only what was not stored");
    // The last line's time counts the ingest too (it left out a 100 s ingest).
    const ingestS = Number(/^ingest .* in ([\d.]+) s$/m.exec(again.stderr)![1]);
    const last = /([\d.]+) s in all \(([\d.]+) s of it ingesting\)/.exec(again.stdout);
    assert.ok(last, again.stdout);
    assert.is(Number(last![2]), ingestS);
    assert.ok(Number(last![1]) > ingestS);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}, { timeoutMs: 400_000 });

test("Ctrl-C mid-run: train.ts exits 130 after the epoch being written, and says what it kept", async () => {
  const out = join(dir, "interrupted");
  const [cmd, ...rest] = runtime.scriptCommand("train.ts", [
    "--store", store, "--limit", String(LIMIT), "--batch", String(BATCH), "--epochs", "500", "--model", "mlp", "--out", out, "--save", join(out, "w.bin"),
  ]);
  const child = spawn(cmd, rest, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (c: string) => (stderr += c));
  // "close": after stderr has ended, so the last message is in.
  const exited = new Promise<[number | null, string | null]>((r) => child.once("close", (code, signal) => r([code, signal])));
  // Interrupt once two epochs are on disk.
  const metrics = join(out, "metrics.jsonl");
  for (let i = 0; i < 600; i++) {
    if (existsSync(metrics) && readFileSync(metrics, "utf8").split("\n").filter(Boolean).length >= 2) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGINT");
  const [code, signal] = await exited;
  // Deno's child_process reports a child it signalled as killed by the signal even when the
  // child's handler exited with 130; the message below shows the handler ran.
  assert.ok(code === 130 || (code === null && signal === "SIGINT"), `exit code ${code}, signal ${signal}; stderr:\n${stderr.slice(-2000)}`);
  const lines = readFileSync(metrics, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(lines.length >= 2, `${lines.length} epochs kept`);
  lines.forEach((l, i) => assert.is(l.epoch, i + 1));
  const kept = lines.length === 1 ? "the whole epoch before it is" : `the ${lines.length} whole epochs before it are`;
  assert.match(stderr, new RegExp(`SIGINT: stopped during epoch ${lines.length + 1} of 500; ${kept} in`));
  assert.ok(existsSync(join(out, "w.bin")), "the last whole epoch's weights");
});
