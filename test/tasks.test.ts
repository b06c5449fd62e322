/**
 * The README's commands as a user types them after `bash tools/setup.sh`: every task in
 * deno.json (`deno task NAME --help`, names read from deno.json so that a new task is covered)
 * and `bun run train.ts --help`, each in a fresh bash with only HOME and the PATH the set-up
 * gives (its folder of the pinned bun and deno), nothing inherited from this run. Each must exit
 * 0 and print the usage of the program its task runs.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "./_support/harness.ts";
import { runtime } from "../runtime-adapters/index.ts";

const ROOT = runtime.cwd();
// What tools/setup.sh links into /usr/local/bin, or tells the user to put on PATH.
const PINNED_BIN = join(ROOT, "node_modules/.cassette-bin");
const skip = runtime.name !== "bun" && "the commands do not depend on the runtime running this test: checked once, under Bun";

/** Runs `command` in a fresh bash: only HOME and the PATH the set-up gives. */
function fresh(command: string): { status: number | null; out: string } {
  assert.ok(existsSync(join(PINNED_BIN, "deno")), `${PINNED_BIN}/deno is missing: run bash tools/setup.sh`);
  const env = { HOME: runtime.env("HOME") ?? "/root", PATH: `${PINNED_BIN}:/usr/local/bin:/usr/bin:/bin` };
  const r = spawnSync("bash", ["-c", command], { cwd: ROOT, encoding: "utf8", timeout: 60_000, env });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** `command`'s output, which must exit 0. */
function shell(command: string): string {
  const { status, out } = fresh(command);
  assert.is(status, 0, `'${command}' exited ${status}:\n${out}`);
  return out;
}

const tasks: Record<string, string> = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).tasks;

test("deno.json has the README's tasks", () => {
  for (const name of ["test", "bench", "build", "train"]) assert.type(tasks[name], "string", `task '${name}'`);
}, { skip });

for (const [name, line] of Object.entries(tasks)) {
  // The program that gets --help: the task's last `deno run … FILE.ts`.
  const script = [...line.matchAll(/deno run [^&|;]*?(\S+\.ts)/g)].at(-1)?.[1];
  test(`deno task ${name} --help: the usage of ${script}`, () => {
    assert.ok(script, `task '${name}' (${line}) runs no 'deno run … FILE.ts' to ask for --help`);
    const out = shell(`deno task ${name} --help`);
    assert.match(out, new RegExp(`usage: .*${script!.replace(/[.]/g, "\\.")}`), `deno task ${name} --help printed:\n${out}`);
  }, { skip, timeoutMs: 60_000 });
}

test("bun run train.ts --help", () => {
  assert.match(shell("bun run train.ts --help"), /usage: bun run train\.ts/);
}, { skip, timeoutMs: 60_000 });

test("deno task bench: a failing benchmark does not hide the next; a line for each, a summary, exit 1", () => {
  // An option no benchmark knows: each refuses it at once (exit 2), so both run and fail fast.
  const { status, out } = fresh("deno task bench gpu_backend preprocess -- --no-such-option");
  assert.is(status, 1, `exit status:\n${out}`);
  assert.match(out, /=== \[1\/2\] gpu_backend\.bench\.ts failed \(exit 2\) in \d+ s/);
  assert.match(out, /=== \[2\/2\] preprocess\.bench\.ts failed \(exit 2\) in \d+ s/);
  assert.match(out, /Summary: [\s\S]*gpu_backend\.bench\.ts +failed \(exit 2\)[\s\S]*preprocess\.bench\.ts +failed \(exit 2\)/);
  assert.match(out, /2 of 2 benchmarks failed/);
}, { skip, timeoutMs: 60_000 });

test("deno task bench --quick NAME: the summary gives the first table's ratio as the bench printed it", () => {
  const out = shell("deno task bench --quick preprocess");
  assert.match(out, /=== \[1\/1\] preprocess\.bench\.ts … \(deno [\d.]+, --quick\)/);
  // The first table's fastest row, from the bench's own output: "  NAME  best  median  spread  RATIO×".
  const table = /\n(batch: [^\n]*) {2}\(.*ratio vs ([^)\n]+)\)\n[^\n]*\n {2}(\S[^\n]*?) +[\d.]+ +[\d.]+ +\d+% +([\d.]+)×/.exec(out);
  assert.ok(table, `no ratio table in:\n${out}`);
  const [, title, baseline, fastest, ratio] = table!;
  const row = out.split("\n").find((l) => /^ {2}preprocess\.bench\.ts +ok +\d+ s/.test(l));
  assert.ok(row, `no summary row in:\n${out}`);
  const want = fastest === baseline ? `${baseline} fastest, then` : `${fastest} ${ratio}× vs ${baseline} (${title.slice(0, 59)}`;
  assert.ok(row!.includes(want), `summary row '${row}' lacks '${want}'`);
}, { skip, timeoutMs: 60_000 });
