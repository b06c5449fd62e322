/**
 * The package as a user installs it: `npm pack` of this checkout, `npm install` of the tarball
 * in a scratch project, then the `cassette` bin through npx and the module's subpaths through
 * an import, under Node (the Node 22 the package brings) and Bun.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const ROOT = runtime.cwd();
const scratch = mkdtempSync(join(tmpdir(), "cassette-install-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 240_000, env: { ...process.env, ...env } });
  assert.is(r.status, 0, `${cmd} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test("npm install of the packed package: npx cassette works, and 'cassette' and its subpaths import", () => {
  const pack = join(scratch, "pack"), project = join(scratch, "project");
  run("mkdir", ["-p", pack, project], scratch);
  run("npm", ["pack", "--pack-destination", pack, "--loglevel=error"], ROOT);
  const tarball = join(pack, readdirSync(pack).find((n) => n.endsWith(".tgz"))!);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch", version: "1.0.0", type: "module", private: true }));
  // From npm's cache: the set-up's `npm ci` already fetched every dependency.
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], project);
  const bin = join(project, "node_modules/.bin");
  const path = `${bin}:${process.env.PATH}`;
  assert.match(run("npx", ["--no-install", "cassette", "--help"], project, { PATH: path }), /usage: cassette COMMAND/);
  assert.match(run("npx", ["--no-install", "cassette", "id", "fashion-mnist", "train/0"], project, { PATH: path }), /6ceecba5-6052-5b9e-9e8a-368b24047c2e/);
  const probe = `const m = await import("cassette"), t = await import("cassette/train"), d = await import("cassette/decode");
console.log(m.sampleId("fashion-mnist", "train/0"), typeof m.Loader, typeof t.createModel, typeof d.createDecodePool);`;
  writeFileSync(join(project, "probe.mjs"), probe);
  const want = "6ceecba5-6052-5b9e-9e8a-368b24047c2e function function function";
  assert.match(run(join(bin, "node"), ["probe.mjs"], project), want, "Node: the bundle in dist/");
  assert.match(run(join(bin, "bun"), ["probe.mjs"], project), want, "Bun: the TypeScript sources");
}, {
  timeoutMs: 300_000,
  skip: runtime.name !== "bun" && "the install does not depend on the runtime running this test: checked once, under Bun",
});
