/**
 * The README's ```ts blocks and every `@example` in src/ are programs: this runs each one in
 * the current runtime, with `from "cassette"` and `from "cassette/SUBPATH"` pointing where package.json exports them. A trailing one-word
 * comment on a console.log line (`console.log(id); // 6ceecba5-…`) must appear in the output.
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
    for (const m of s.code.matchAll(/console\.log\(.*\);\s*\/\/\s*(\S+)\s*$/gm)) {
      assert.ok(r.stdout.includes(m[1]), `${s.where}: output lacks '${m[1]}':\n${r.stdout}`);
    }
  }, { timeoutMs: 150_000 });
});
