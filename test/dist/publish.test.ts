/**
 * The JSR package as `deno publish` sees it: `deno publish --dry-run` (the package's files,
 * slow types, the module graph inside the package) and `deno doc --lint` over deno.json's
 * exports (every exported name documented, no public type naming a private one).
 *
 * The publish includes wasm/build/*_wasm.ts and deno.json's `./browser`, dist/browser-src/
 * (the browser graph with its twins named, tools/browser_source.ts), which `bun build.ts` writes
 * (gitignored): run after the build, as `deno task test` and CI do. `--allow-dirty`: a dry run checks what would be
 * published, not whether the checkout is committed.
 *
 * Every doc-lint finding fails the test, except those KNOWN_LINT lists with the reason each
 * stays; a listed one that deno no longer finds fails it too, so that the list stays true.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import process from "node:process";
import { test } from "../_support/harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const ROOT = runtime.cwd();
const DENO = join(ROOT, "node_modules/.bin/deno");
const ENTRIES = Object.values(JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).exports as Record<string, string>);
/** Warnings deno allows that are there on purpose, each with its reason where it stands. */
const ALLOWED_WARNINGS = [
  "unanalyzable-dynamic-import src/decode/transform.ts", // the user's transform module, named at run time
  "unanalyzable-dynamic-import dist/browser-src/src/decode/transform.ts", // the same, in ./browser's graph
];
/** Doc-lint findings that stay, each with why (as `findings` keys them). */
const KNOWN_LINT: { key: string; why: string }[] = [];
const allowed = (f: Finding) => ALLOWED_WARNINGS.some((a) => f.key.startsWith(`${a} `));
const skip = runtime.name !== "bun" &&
  "deno publish and deno doc run as their own process whatever runtime runs this test: checked once, under Bun";

function deno(args: string[]): { status: number | null; out: string } {
  const r = spawnSync(DENO, args, { cwd: ROOT, encoding: "utf8", timeout: 120_000, env: { ...process.env, NO_COLOR: "1" } });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

export interface Finding {
  kind: string; // "error[missing-jsdoc]", "warning[unanalyzable-dynamic-import]"
  /** The finding as a stable line: its code, file and the source line it points at (line numbers move). */
  key: string;
}

/** Deno's diagnostics in `out`: each `error[CODE]:`/`warning[CODE]:` with the file and line under it. */
export function findings(out: string): Finding[] {
  const lines = out.split("\n");
  const found: Finding[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(error|warning)\[([a-z-]+)\]: (.*)$/.exec(lines[i]);
    if (!m) continue;
    const at = /--> (\S+?):(\d+):\d+$/.exec(lines[i + 1] ?? "");
    const file = at ? relative(ROOT, at[1]) : "?";
    const source = at ? (lines.slice(i + 2, i + 5).find((l) => new RegExp(`^\\s*${at[2]} \\| `).test(l)) ?? "").replace(/^\s*\d+ \| /, "").trim() : "";
    const what = m[2] === "missing-jsdoc" ? source : m[3];
    found.push({ kind: `${m[1]}[${m[2]}]`, key: `${m[2]} ${file} | ${what}` });
  }
  return found;
}

test("deno publish --dry-run: no error, no warning but the allowed ones", () => {
  assert.ok(existsSync(join(ROOT, "wasm/build/jpeg_wasm.ts")), "wasm/build/jpeg_wasm.ts is missing: run `bun build.ts` first");
  assert.ok(existsSync(join(ROOT, "dist/browser-src/src/browser.ts")), "dist/browser-src/ is missing: run `bun build.ts` first");
  const { status, out } = deno(["publish", "--dry-run", "--allow-dirty"]);
  const bad = findings(out).filter((f) => f.kind.startsWith("error") || !allowed(f));
  assert.is(status, 0, `deno publish --dry-run exited ${status}:\n${out}`);
  assert.equal(bad.map((f) => f.key), [], `deno publish --dry-run:\n${out}`);
  assert.match(out, /Simulating publish of @cassette\/cassette@/);
  // What the package carries: its module graph, and nothing of the checkout's tests, benches or data.
  const files = [...out.matchAll(/file:\/\/(\S+)/g)].map((m) => relative(ROOT, m[1]));
  // ./browser is the browser graph build.ts writes with its twins named (dist/browser-src/): no file that has a twin, the decoders beside
  // (the CPU tensor's small resampler is imported inline, as on the other runtimes).
  const browser = ["dist/browser-src/src/browser.ts", "dist/browser-src/src/source/kinds_open.browser.ts", "dist/browser-src/runtime-adapters/index.browser.ts", "dist/browser-src/wasm/build/jpeg.wasm"];
  for (const f of ["LICENSE", "src/mod.ts", "wasm/build/jpeg_wasm.ts", "wasm/build/png_wasm.ts", "shaders/train/relu.wgsl", "runtime-adapters/index.ts", ...browser]) {
    assert.ok(files.includes(f), `the package carries ${f}`);
  }
  const stray = files.filter((f) => !/^(dist\/browser-src\/)?(src|runtime-adapters|shaders)\/|^(dist\/browser-src\/)?wasm\/build\/[a-z]+_wasm\.ts$|^dist\/browser-src\/wasm\/build\/[a-z]+\.wasm$|^(LICENSE|README\.md|CHANGELOG\.md|ARCHITECTURE\.md|deno\.json)$/.test(f));
  assert.equal(stray, [], "files outside the package's module graph");
  assert.equal(files.filter((f) => f.startsWith("dist/browser-src/") && /(kinds_open|runtime-adapters\/index|objects|wasm_bytes)\.ts$/.test(f)), [], "the browser graph holds the twins, not the files they replace");
}, { skip, timeoutMs: 180_000 });

test("deno doc --lint over deno.json's exports: no finding but the known ones", () => {
  const { status, out } = deno(["doc", "--lint", ...ENTRIES]);
  const keys = findings(out).map((f) => f.key);
  const known = KNOWN_LINT.map((k) => k.key);
  const shown = out.split("\n").filter((l) => !/^(Warning|\s+at) /.test(l)).join("\n"); // @types/node's resolution warnings left out
  assert.equal(keys.filter((k) => !known.includes(k)), [], `deno doc --lint found:\n${shown}`);
  assert.equal(known.filter((k) => !keys.includes(k)), [], "KNOWN_LINT lists findings deno no longer reports: remove them");
  if (keys.length === 0) assert.is(status, 0, out);
}, { skip, timeoutMs: 120_000 });
