/**
 * The package as a user installs it: `npm pack` of this checkout, `npm install` of the tarball
 * in a scratch project, then the `cassette` bin through npx and the module's subpaths through
 * an import, under Node ≥ 22.13, Bun and Deno; the install's size against a budget, and what an
 * older Node and a missing WebGPU binding tell the user.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { WEBGPU_PACKAGE } from "../../runtime-adapters/_gpu.ts";

const ROOT = runtime.cwd();
const scratch = mkdtempSync(join(tmpdir(), "cassette-install-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 240_000, env: { ...process.env, ...env } });
  assert.is(r.status, 0, `${cmd} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Installed bytes of a folder (files' sizes, as `du --apparent-size` counts them). */
function bytesUnder(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += bytesUnder(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

/** What an install may weigh, the optional WebGPU binding for Node (`webgpu`, ~130 MB) left out (issue 38). */
const INSTALL_BUDGET_MB = 60;

test("npm install of the packed package: its size, npx cassette on Node ≥ 22.13 (and one line on an older Node), 'cassette' and its subpaths import under Node, Bun and Deno", () => {
  const pack = join(scratch, "pack"), project = join(scratch, "project"), node22 = join(scratch, "node22");
  run("mkdir", ["-p", pack, project, node22], scratch);
  run("npm", ["pack", "--pack-destination", pack, "--loglevel=error"], ROOT);
  const tarball = join(pack, readdirSync(pack).find((n) => n.endsWith(".tgz"))!);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch", version: "1.0.0", type: "module", private: true }));
  // From npm's cache: the set-up's `npm ci` already fetched every dependency.
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], project);
  const mb = bytesUnder(join(project, "node_modules")) / 2 ** 20;
  console.log(`installed: ${mb.toFixed(1)} MB in node_modules (budget ${INSTALL_BUDGET_MB} MB)`);
  assert.ok(mb <= INSTALL_BUDGET_MB, `the install weighs ${mb.toFixed(1)} MB, over its ${INSTALL_BUDGET_MB} MB budget`);
  for (const tool of ["bun", "deno", "node", "esbuild", "assemblyscript", "uvu", "webgpu"]) {
    assert.not.ok(existsSync(join(project, "node_modules", tool)), `${tool} is a dev dependency (or an optional peer), not installed with cassette`);
  }
  // The optional peer's version is the one the Node and Deno adapters name in their error.
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  assert.is(`webgpu@${pkg.peerDependencies.webgpu}`, WEBGPU_PACKAGE);

  const bin = join(project, "node_modules/.bin");
  // The user's Node: 22 (this checkout's, linked alone into a folder) or Debian's 20.
  symlinkSync(join(ROOT, "node_modules/.bin/node"), join(node22, "node"));
  const path = `${bin}:${node22}:${process.env.PATH}`;
  assert.match(run("npx", ["--no-install", "cassette", "--help"], project, { PATH: path }), /usage: cassette COMMAND/);
  assert.match(run("npx", ["--no-install", "cassette", "id", "fashion-mnist", "train/0"], project, { PATH: path }), /6ceecba5-6052-5b9e-9e8a-368b24047c2e/);
  // The local Cassandra node needs the checkout's scripts: the installed command says what to do instead.
  const cassandra = spawnSync("npx", ["--no-install", "cassette", "cassandra", "status"], { cwd: project, encoding: "utf8", env: { ...process.env, PATH: path } });
  assert.is(cassandra.status, 2, `cassette cassandra from the package: ${cassandra.stderr}`);
  assert.match(cassandra.stderr.trim(), /^cassette cassandra: [^\n]*checkout[^\n]*--store cassandra:\/\/HOST:9042\/KEYSPACE[^\n]*$/);
  if (existsSync("/usr/bin/node") && Number(spawnSync("/usr/bin/node", ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" }).stdout) < 22) {
    const old = spawnSync("/usr/bin/node", [join(bin, "cassette"), "--help"], { cwd: project, encoding: "utf8" });
    assert.is(old.status, 1, `an old Node exits 1: ${old.stderr}`);
    assert.is(old.stderr.trim().split("\n").length, 1, `one line, no stack trace: ${old.stderr}`);
    assert.match(old.stderr, /cassette needs Node ≥ 22\.13 .*bunx cassette/);
  }

  const probe = `const m = await import("cassette"), t = await import("cassette/train"), d = await import("cassette/decode");
console.log(m.sampleId("fashion-mnist", "train/0"), typeof m.Loader, typeof t.createModel, typeof d.createDecodePool);`;
  writeFileSync(join(project, "probe.mjs"), probe);
  const want = "6ceecba5-6052-5b9e-9e8a-368b24047c2e function function function";
  assert.match(run(join(node22, "node"), ["probe.mjs"], project), want, "Node: the bundle in dist/");
  assert.match(run(join(ROOT, "node_modules/.bin/bun"), ["probe.mjs"], project), want, "Bun: the TypeScript sources");
  // Deno cannot strip types under node_modules: it takes the bundle too.
  assert.match(run(join(ROOT, "node_modules/.bin/deno"), ["run", "-A", "probe.mjs"], project), want, "Deno: the bundle in dist/");
  // WebGPU under Node without the optional peer: one named error that says what to install.
  writeFileSync(join(project, "gpu.mjs"), `const g = await import("cassette/gpu");
try { await g.requestDevice(); console.log("a device without webgpu?"); } catch (e) { console.log(e.code + ": " + e.message); }`);
  assert.match(run(join(node22, "node"), ["gpu.mjs"], project), /^ERR_NO_GPU_ADAPTER: .*npm install webgpu@\d/);
}, {
  timeoutMs: 300_000,
  skip: runtime.name !== "bun" && "the install does not depend on the runtime running this test: checked once, under Bun",
});
