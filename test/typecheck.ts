/**
 * The typecheck: `deno check` (with the repository's deno.json: Deno's globals, its WebGPU
 * types, `.wgsl` text imports) over every TypeScript file of the project except wasm/, which is
 * AssemblyScript. test/run.ts runs it once per run, as one test; alone (after `bun build.ts`,
 * which writes the wasm/build/jpeg_wasm.ts that src/decode imports):
 *
 *   bun test/typecheck.ts
 *
 * Errors in PENDING paths are printed but not counted: other work is changing those files.
 */
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const ROOT = join(fileURLToPath(new URL(".", import.meta.url)), "..");
const DIRS = ["src", "runtime-adapters", "test", "bench", "tools"];

/** Paths (prefixes) whose errors do not fail the check yet. Remove an entry once it is clean. */
const PENDING: string[] = [];

/** The files checked, relative to the root. */
export function typecheckFiles(root = ROOT): string[] {
  const out = readdirSync(root).filter((n) => n.endsWith(".ts")).sort();
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir)).sort()) {
      const p = join(dir, name);
      if (name.startsWith(".") || name === "fixtures" || name === "node_modules") continue;
      if (statSync(join(root, p)).isDirectory()) walk(p);
      else if (name.endsWith(".ts") || name.endsWith(".mts")) out.push(p);
    }
  };
  for (const d of DIRS) walk(d);
  return out;
}

export interface TypecheckResult {
  ok: boolean;
  /** What to print: the errors that count, then the pending ones (one line each). */
  report: string;
  files: number;
}

/** Runs `deno check` over typecheckFiles() and sorts its errors into counted and pending. */
export function typecheck(root = ROOT): Promise<TypecheckResult> {
  const files = typecheckFiles(root);
  return new Promise((done) => {
    // The binary itself, not .bin/deno (npm's Node shim since the set-up points it there for deno task): a kill reaches deno.
    const child = spawn(join(root, "node_modules/deno/deno"), ["check", "--quiet", ...files], {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", (e) => done({ ok: false, report: `cannot run deno check: ${e.message}`, files: files.length }));
    child.on("close", (code) => done({ ...judge(output, code ?? 1, root), files: files.length }));
  });
}

/** Splits deno check's output into diagnostics, each located by its first `at file:…` line. */
function judge(output: string, code: number, root: string): { ok: boolean; report: string } {
  output = output.replace(/\x1b\[[0-9;]*m/g, "");
  const counted: string[] = [], pending: string[] = [];
  for (const block of output.split(/^(?=TS\d+ \[ERROR\])/m).filter((b) => /^TS\d+/.test(b))) {
    const at = /^ {4}at (file:\/\/\S+):(\d+):(\d+)$/m.exec(block);
    const file = at ? relative(root, fileURLToPath(at[1])) : "?";
    const line = `${file}:${at?.[2] ?? "?"}: ${block.split("\n")[0].replace(" [ERROR]", "")}`;
    (PENDING.some((p) => file.startsWith(p)) ? pending : counted).push(at ? line : block.trimEnd());
  }
  const parts: string[] = [];
  // A failure that is not just the errors read above (a crash, a bad flag): show all of it.
  const found = Number(/^Found (\d+) errors\.$/m.exec(output)?.[1] ?? 1); // no such line for one
  const unread = code !== 0 && found !== counted.length + pending.length;
  if (unread) parts.push(output.trimEnd() || `deno check exited ${code}`);
  if (counted.length) parts.push(`${counted.length} type error(s):`, ...counted);
  if (pending.length) parts.push(`${pending.length} type error(s) in paths being changed elsewhere, not counted (${PENDING.join(", ")}):`, ...pending);
  return { ok: counted.length === 0 && !unread, report: parts.join("\n") };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const t0 = performance.now();
  const r = await typecheck();
  if (r.report) console.log(r.report);
  console.log(`${r.ok ? "✓" : "✗"} deno check of ${r.files} files (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  process.exit(r.ok ? 0 : 1);
}
