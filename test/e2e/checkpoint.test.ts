/**
 * train.ts --checkpoint / --resume end to end: a run killed with SIGKILL at a random step and
 * resumed from its folder trains on every sample of each epoch exactly once, and in strict
 * order ends with the uninterrupted run's weights, bit for bit (same adapter, same kernels).
 */
import * as assert from "uvu/assert";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { readCheckpoint } from "../../src/train/checkpoint.ts";
import { requestDevice } from "../../src/gpu/device.ts";
import { createModel } from "../../src/train/model.ts";
import { CassetteError } from "../../src/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-checkpoint-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ROOT = runtime.cwd();
// 600 = 9 × 64 + 24: ten steps an epoch, the last short.
const LIMIT = 600, BATCH = 64, EPOCHS = 2, STEPS = Math.ceil(LIMIT / BATCH) * EPOCHS, EVERY = 3;
const COMMON = ["--limit", String(LIMIT), "--batch", String(BATCH), "--epochs", String(EPOCHS), "--model", "mlp"];

function command(args: string[]) {
  return runtime.scriptCommand(join(ROOT, "train.ts"), args);
}

function train(args: string[]) {
  const [cmd, ...rest] = command(args);
  const r = spawnSync(cmd, rest, { encoding: "utf8", timeout: 300_000, cwd: dir, env: process.env });
  if (r.status !== 0) throw new Error(`train.ts ${args.join(" ")} exited ${r.status}:\n${r.stderr}`);
  return JSON.parse(String(r.stdout).trim().split("\n").pop()!);
}

/** Runs train.ts until its trace has `steps` lines, then kill -9. */
async function killedAt(args: string[], trace: string, steps: number): Promise<void> {
  const [cmd, ...rest] = command(args);
  const child = spawn(cmd, rest, { stdio: ["ignore", "ignore", "pipe"], cwd: dir });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (c: string) => (stderr += c));
  const exited = new Promise<[number | null, string | null]>((r) => child.once("close", (code, signal) => r([code, signal])));
  const lines = () => (existsSync(trace) ? readFileSync(trace, "utf8").split("\n").filter(Boolean).length : 0);
  for (let i = 0; i < 3000 && lines() < steps && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
  child.kill("SIGKILL");
  const [code, signal] = await exited;
  assert.ok(signal === "SIGKILL" || code === 137, `killed at step ${lines()} of ${STEPS}: exit ${code}, signal ${signal}\n${stderr.slice(-1500)}`);
}

interface Line {
  epoch: number;
  step: number;
  ids: string[];
}
const trace = (file: string): Line[] => readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

/** The ids trained on per epoch: the killed run's steps up to its checkpoint, then the resumed run's. */
function perEpoch(lines: Line[]): string[][] {
  const out: string[][] = Array.from({ length: EPOCHS }, () => []);
  for (const l of lines) out[l.epoch].push(...l.ids);
  return out;
}

/** The killed run's trace up to the checkpoint it left, and where that was. */
async function cut(folder: string, file: string) {
  const c = await readCheckpoint(folder); // also: the file left by a kill at any instant reads whole
  const kept = trace(file).filter((l) => l.step <= c.run.step);
  return { c, kept };
}

for (const order of ["strict", "ready"] as const) {
  test(`${order} order: killed with SIGKILL at a random step and resumed, every sample of each epoch is trained on once` +
    (order === "strict" ? "; the weights equal an uninterrupted run's bit for bit" : "; each epoch's samples are an uninterrupted run's"), async () => {
    const seed = freshSeed();
    const at = randomInt(rng(seed), EVERY + 1, STEPS - 1);
    const base = join(dir, `${order}-${seed}`);
    mkdirSync(base, { recursive: true });
    const whole = train([...COMMON, "--order", order, "--out", join(base, "whole"), "--save", join(base, "whole.cstw"), "--trace-ids", join(base, "whole.jsonl"), "--json"]);
    const folder = join(base, "ck"), file = join(base, "cut.jsonl");
    await killedAt([...COMMON, "--order", order, "--out", join(base, "cut"), "--save", join(base, "cut.cstw"), "--checkpoint", folder, "--every", String(EVERY), "--trace-ids", file], file, at);
    const { c, kept } = await cut(folder, file);
    assert.ok(c.run.step >= EVERY && c.run.step <= at + EVERY, `seed ${seed}: checkpoint at step ${c.run.step}, killed at ${at} or after`);
    const after = join(base, "after.jsonl");
    // In ready order the resumed run reads with another number of read workers (the killed
    // run had the default, 2 or more): the workers are not ranks, they change nothing trained.
    const resumed = train(["--resume", folder, "--trace-ids", after, "--json", ...(order === "ready" ? ["--workers", "1"] : [])]);

    // Every sample of each epoch once: what the killed run checkpointed, then the resumed run.
    const expected = perEpoch(trace(join(base, "whole.jsonl")));
    const got = perEpoch([...kept, ...trace(after)]);
    for (let e = 0; e < EPOCHS; e++) {
      assert.is(got[e].length, LIMIT, `seed ${seed}, epoch ${e + 1}: ${got[e].length} samples trained on (checkpoint at step ${c.run.step})`);
      assert.equal([...got[e]].sort(), [...expected[e]].sort(), `seed ${seed}, epoch ${e + 1}: the uninterrupted run's samples, each once`);
    }
    // --json reports each epoch whole: the interrupted one counts what both runs trained.
    assert.equal(resumed.epochs.map((r: { epoch: number; samples: number }) => [r.epoch, r.samples]), [[1, LIMIT], [2, LIMIT]]);
    assert.is(resumed.epochs.reduce((a: number, r: { stepLoss: number[] }) => a + r.stepLoss.length, 0), STEPS, "every step's loss, both runs'");
    assert.is(resumed.resumedFrom.step, c.run.step);
    if (order === "ready") assert.is(resumed.workers, 1, "the resumed run's --workers");
    const metrics = readFileSync(join(base, "cut", "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(metrics.map((m: { epoch: number }) => m.epoch), [1, 2], "metrics.jsonl: each epoch once");
    if (order === "strict") {
      assert.ok(Buffer.compare(readFileSync(join(base, "whole.cstw")), readFileSync(join(base, "cut.cstw"))) === 0, `seed ${seed}: the weights after a resume at step ${c.run.step} differ from the uninterrupted run's`);
      // The interrupted epoch's mean loss is put together from two runs' sums: equal up to rounding.
      resumed.epochs.forEach((r: { loss: number }, i: number) => assert.ok(Math.abs(r.loss - whole.epochs[i].loss) <= 1e-6 * whole.epochs[i].loss, `epoch ${i + 1}: loss ${r.loss} vs ${whole.epochs[i].loss}`));
    }
  }, { timeoutMs: 300_000 });
}

test("--resume: options given with it must agree with the checkpoint's; a folder with no checkpoint is named", () => {
  const folder = join(dir, "refuse");
  train([...COMMON, "--epochs", "1", "--out", join(dir, "refuse-out"), "--checkpoint", folder, "--json"]);
  const run = (...args: string[]) => {
    const [cmd, ...rest] = command(args);
    return spawnSync(cmd, rest, { encoding: "utf8", timeout: 120_000, cwd: dir });
  };
  const r = run("--resume", folder, "--batch", "32");
  assert.is(r.status, 2, r.stderr);
  assert.match(r.stderr, /'--batch' is 32 here but 64 in the checkpoint .*checkpoint\.cstw/);
  const same = run("--resume", folder, "--batch", "64", "--json");
  assert.is(same.status, 0, same.stderr); // the same value is accepted (and the run is complete: nothing left to train)
  assert.is(JSON.parse(same.stdout.trim().split("\n").pop()!).epochs.length, 1);
  const empty = join(dir, "empty");
  mkdirSync(empty, { recursive: true });
  const e = run("--resume", empty);
  assert.is(e.status, 2);
  assert.match(e.stderr, /Cannot resume from .*empty as it holds no checkpoint \(checkpoint\.cstw\)/);
});

test("weights files carry the model and each tensor's shape and dtype; another model's are refused by name", async () => {
  const device = await requestDevice();
  const mlp = createModel(device, "mlp", { seed: 1 }), cnn = createModel(device, "cnn", { seed: 1 });
  try {
    const file = join(dir, "mlp.cstw");
    await mlp.save(file);
    const header = JSON.parse(new TextDecoder().decode(readFileSync(file).subarray(12, 12 + readFileSync(file).readUInt32LE(8))));
    assert.equal(header.model, JSON.parse(JSON.stringify(mlp.spec)));
    assert.ok(header.tensors.every((t: { dtype: string; shape: number[] }) => t.dtype === "f32" && t.shape.length > 0));
    let err: unknown;
    try {
      await cnn.load(file);
    } catch (x) {
      err = x;
    }
    assert.instance(err, CassetteError);
    assert.match((err as Error).message, /Cannot load weights from .*mlp\.cstw into this model as (the file has \d+ tensors|tensor \d+ is)/);
    // Same shapes, another model (no ReLU): the header's spec tells them apart.
    const spec = (relu: boolean) => ({ input: [1, 4, 4], layers: [{ kind: "dense" as const, units: 8, relu }, { kind: "dense" as const, units: 3 }] });
    const a = createModel(device, spec(true)), b = createModel(device, spec(false));
    await a.save(join(dir, "a.cstw"));
    err = undefined;
    await b.load(join(dir, "a.cstw")).catch((x) => (err = x));
    await a.destroy();
    await b.destroy();
    assert.match((err as Error)?.message ?? "", /as the file's model is .*"relu":true.*: this model is .*"relu":false/);
    // A checkpoint is not a weights file, and says what to do with it.
    const ck = join(dir, "refuse", "checkpoint.cstw");
    if (existsSync(ck)) {
      err = undefined;
      await mlp.load(ck).catch((x) => (err = x));
      assert.match((err as Error).message, /a checkpoint: its folder is what --resume takes/);
    }
  } finally {
    await mlp.destroy();
    await cnn.destroy();
    device.destroy();
  }
});
