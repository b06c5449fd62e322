/**
 * The README's ```ts blocks and every `@example` in src/ are programs: this runs each one in
 * the current runtime, with `from "cassette"` and `from "cassette/SUBPATH"` pointing where
 * package.json exports them. A trailing comment on a console.log line says what that line prints
 * (`console.log(id); // 6ceecba5-…`): the commented lines must be lines of the output, in order.
 */
import * as assert from "uvu/assert";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { afterAll, test } from "./_support/harness.ts";
import { runtime } from "../runtime-adapters/index.ts";

const ROOT = resolve(runtime.cwd());
const OUT = join(ROOT, ".tmp", `docs-${runtime.name}`);
/** "cassette" and "cassette/train" …: the modules package.json exports, as Bun and Deno load them. */
const SUBPATHS: Record<string, string> = Object.fromEntries(
  Object.entries(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).exports as Record<string, { bun: string }>).map(([k, v]) => [k, v.bun]),
);
mkdirSync(OUT, { recursive: true });
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

/**
 * A console.log's comment says what it prints: the whole line, where "…" stands for any text
 * (a hash cut short), or the line followed by ": why" or " (why)".
 */
function printed(comment: string, line: string): boolean {
  const pattern = new RegExp(`^${comment.split("…").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
  if (pattern.test(line)) return true;
  return comment.startsWith(line) && line.length > 0 && /^(: | \()/.test(comment.slice(line.length));
}

interface Snippet {
  where: string;
  from: string; // file the snippet's relative imports are relative to
  code: string;
}

function blocks(text: string): string[] {
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const snippets: Snippet[] = blocks(readFileSync(join(ROOT, "README.md"), "utf8")).map((code, i) => ({
  where: `README.md block ${i + 1}`,
  from: join(ROOT, "README.md"),
  code,
}));
for (const file of sources(join(ROOT, "src"))) {
  const text = readFileSync(file, "utf8");
  for (const m of text.matchAll(/@example\n((?:\s*\*.*\n)+?)\s*\*\//g)) {
    const body = m[1].split("\n").map((l) => l.replace(/^\s*\* ?/, "")).join("\n");
    for (const code of blocks(body)) snippets.push({ where: `${relative(ROOT, file)} @example`, from: file, code });
  }
}

test("the docs have runnable examples", () => {
  assert.ok(snippets.length >= 3, `found ${snippets.length}`);
});

test("a console.log's comment is read as its whole line of output", () => {
  assert.ok(printed("true", "true") && printed("8 true", "8 true"));
  assert.not.ok(printed("true", "true true"), "a word of the line is not the line");
  assert.not.ok(printed("true", "untrue"));
  assert.ok(printed("6ceecba5-…", "6ceecba5-6052-5b9e") && !printed("6ceecba5-…", "7ceecba5-6052"));
  assert.ok(printed("4: twice the median", "4") && printed("true (3 where idle)", "true"));
  assert.not.ok(printed("4: twice the median", "5"));
});

snippets.forEach((s, i) => {
  test(`example runs: ${s.where}`, () => {
    const code = s.code
      .replace(/from "cassette(\/[a-z]+)?"/g, (_, sub) => `from ${JSON.stringify(join(ROOT, SUBPATHS[`.${sub ?? ""}`]))}`)
      .replace(/from "(\.\.?\/[^"]+)"/g, (_, rel) => `from ${JSON.stringify(resolve(dirname(s.from), rel))}`);
    const file = join(OUT, `example_${i}.ts`);
    writeFileSync(file, code);
    const [cmd, ...args] = runtime.scriptCommand(file);
    const r = spawnSync(cmd, args, { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
    assert.is(r.status, 0, `${s.where} exited ${r.status}:\n${r.stderr}`);
    // Each commented console.log, in the order written, is a whole line of the output, in order.
    const lines = r.stdout.split("\n").map((l) => l.trimEnd());
    let at = 0;
    for (const m of s.code.matchAll(/console\.log\(.*\);[ \t]*\/\/[ \t]*(.+?)[ \t]*$/gm)) {
      const k = lines.findIndex((l, i) => i >= at && printed(m[1], l));
      assert.ok(k >= 0, `${s.where}: no line of the output (from line ${at + 1}) reads '${m[1]}':\n${r.stdout}`);
      at = k + 1;
    }
  }, { timeoutMs: 150_000 });
});
