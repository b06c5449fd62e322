/**
 * The import rules of ARCHITECTURE.md, checked against every import statement of the code
 * (static, dynamic, re-exports and type-only imports alike): each room imports only the rooms
 * its rule lists, and no files import each other in a cycle.
 */
import * as assert from "uvu/assert";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { test } from "./_support/harness.ts";
import { runtime } from "../runtime-adapters/index.ts";
import { browserSourceTree } from "../tools/browser_source.ts";

const ROOT = runtime.cwd();
const SCANNED = ["src", "runtime-adapters", "wasm/jpeg", "tools", "bench", "train.ts", "build.ts"];

/** The room a repository path belongs to: `src/read`, `src/loader.ts`, `wasm/jpeg`, `bench`, … */
export function roomOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "src") return parts.length === 2 ? path : `src/${parts[1]}`;
  if (parts[0] === "wasm" || parts[0] === "tools") return parts.slice(0, 2).join("/");
  return parts[0];
}

/** The ```rules block of ARCHITECTURE.md: room → the rooms it may import. */
export function parseRules(markdown: string): Map<string, Set<string>> {
  const block = markdown.match(/```rules\n([\s\S]*?)```/);
  if (!block) throw new Error("ARCHITECTURE.md has no ```rules block");
  const rules = new Map<string, Set<string>>();
  for (const line of block[1].split("\n")) {
    if (!line.trim()) continue;
    const [room, allowed] = line.split(":");
    rules.set(room.trim(), new Set(allowed.trim().split(/\s+/).filter(Boolean)));
  }
  return rules;
}

/** Relative specifiers a file imports, resolved to repository paths (comments ignored, so `@example`s do not count). */
export function importsOf(path: string, text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const out: string[] = [];
  for (const m of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.\.?\/[^"'?]+)/g)) {
    const to = normalize(join(dirname(path), m[1]));
    out.push(/\.[a-z]+$/.test(to) ? to : `${to}.ts`); // AssemblyScript imports name no extension

  }
  return out;
}

/** Room-level imports that no rule allows, and rooms without a rule. */
export function violations(edges: [string, string][], rules: Map<string, Set<string>>): string[] {
  const found = new Set<string>();
  for (const [from, to] of edges) {
    const a = roomOf(from), b = roomOf(to);
    if (a === b) continue;
    const allowed = rules.get(a);
    if (!allowed) found.add(`${a} has no rule in ARCHITECTURE.md (${from} imports ${to})`);
    else if (!allowed.has(b)) found.add(`${from} imports ${to}: ${a} may not import ${b}`);
  }
  return [...found];
}

/** Import cycles between files, each as the files on it (Tarjan's strongly connected components). */
export function cycles(edges: [string, string][]): string[][] {
  const next = new Map<string, string[]>();
  for (const [a, b] of edges) {
    next.set(a, [...(next.get(a) ?? []), b]);
    if (!next.has(b)) next.set(b, []);
  }
  const index = new Map<string, number>(), low = new Map<string, number>(), onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter), low.set(v, counter++);
    stack.push(v), onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) visit(w), low.set(v, Math.min(low.get(v)!, low.get(w)!));
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do (w = stack.pop()!, onStack.delete(w), scc.push(w)); while (w !== v);
      if (scc.length > 1 || next.get(v)!.includes(v)) found.push(scc.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return found;
}

/**
 * The kind table's files: kinds.ts, and kinds_open.ts (how each kind opens, the values it
 * takes from the protocols' folders) with its twin for the browser graph.
 */
const KIND_TABLE = /^src\/source\/kinds(_open)?(\.browser)?\.ts$/;

/** Folders of src/source/ that wrap any source rather than being a kind (the table names the cache's options). */
const WRAPPERS = new Set(["src/source/cache", "src/source/mix"]);

/** The folders of src/source/ that hold a store kind: those the kind table (src/source/kinds.ts, kinds_open.ts) imports from. */
export function kindFolders(edges: [string, string][]): Set<string> {
  const out = new Set<string>();
  for (const [from, to] of edges) {
    const m = /^(src\/source\/[^/]+)\//.exec(to);
    if (KIND_TABLE.test(from) && m && !WRAPPERS.has(m[1])) out.add(m[1]);
  }
  return out;
}

/**
 * The imports past the kind table that ARCHITECTURE.md names as exceptions: ingest's manifest
 * reader makes S3Client itself (the kind table re-exports no value from http/, which would
 * load undici with every read path).
 */
const DOOR_EXCEPTIONS = new Set(["src/cli/ingest.ts src/source/http/s3.ts"]);

/**
 * Imports of a store kind's internals from outside its folder that ARCHITECTURE.md's door rule
 * does not allow: only the kind table, the other folders of src/source/ (the protocols and the
 * export, which use one another), the mod.ts files (they re-export public classes), tests and
 * benchmarks reach into a kind's folder; everything else goes through src/source/kinds.ts.
 */
export function doorViolations(edges: [string, string][], kinds: Set<string>): string[] {
  const found: string[] = [];
  for (const [from, to] of edges) {
    const kind = [...kinds].find((k) => to.startsWith(`${k}/`));
    if (!kind || from.startsWith(`${kind}/`) || DOOR_EXCEPTIONS.has(`${from} ${to}`)) continue;
    const allowed = KIND_TABLE.test(from) || /^src\/source\/[^/]+\//.test(from) || /^src\/([^/]+\/)?mod\.ts$/.test(from) || /^(test|bench)\//.test(from);
    if (!allowed) found.push(`${from} imports ${to}: outside ${kind}/ a store kind is reached through src/source/kinds.ts`);
  }
  return found;
}

/**
 * The browser graph (ARCHITECTURE.md, "The browser graph"): the files a page loads from
 * `entries`, following every import that stays in the code (type-only imports are erased), a
 * file with a `NAME.browser.ts` beside it replaced by that file as build.ts's browser bundle
 * does; and what in it a page cannot load: any package or built-in (`node:*`, `bun:*`, `npm:*`,
 * undici, …: the graph imports none), the SQLite and Cassandra stores (Cassandra's address
 * parser, text only, is the kind table's), Deno's and Bun's globals.
 */
export function browserGraph(entries: string[], read: (path: string) => string | undefined): { files: string[]; bad: string[] } {
  const from = new Map<string, string>();
  const bad: string[] = [];
  const chain = (f: string): string => {
    const out = [f];
    for (let at = from.get(f); at; at = from.get(at)) out.push(at);
    return out.join(" ← ");
  };
  const queue = entries.map((e) => [e, ""]);
  while (queue.length) {
    const [asked, by] = queue.shift()!;
    const twin = asked.replace(/\.ts$/, ".browser.ts");
    const file = read(twin) !== undefined ? twin : asked;
    if (from.has(file)) continue;
    from.set(file, by);
    const text = read(file);
    if (text === undefined) continue; // generated (wasm/build/) or missing: the rule test names the latter
    if (/^src\/source\/(sqlite|cassandra)\/(?!address\.ts$)/.test(file)) bad.push(`${chain(file)}: a store a page cannot open`);
    const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "").replace(/^\s*(import|export) type\b[^;]*;/gm, "");
    if (/\b(Deno|Bun)\.[A-Za-z]/.test(code)) bad.push(`${chain(file)}: uses ${/\b(Deno|Bun)\./.exec(code)![1]}'s globals`);
    for (const m of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["']([^"'?]+)/g)) {
      if (!m[1].startsWith(".")) {
        bad.push(`${chain(file)} imports ${m[1]}`);
        continue;
      }
      const to = normalize(join(dirname(file), m[1]));
      queue.push([/\.[a-z]+$/.test(to) ? to : `${to}.ts`, file]);
    }
  }
  return { files: [...from.keys()], bad };
}

/**
 * The roots of the browser graph: the browser entry, the worker modules it starts by URL
 * (src/util/entry_url.ts), and WebCrypto's SigV4 signer, kept browser-clean ahead of s3:// in a
 * page (issue 39).
 */
const BROWSER_ENTRIES = ["src/browser.ts", "src/decode/worker.ts", "src/decode/transforms/random_resized_crop.ts", "src/read/read_worker.ts", "src/source/http/sigv4_web.ts"];

function sources(path: string): string[] {
  const full = join(ROOT, path);
  if (!statSync(full, { throwIfNoEntry: false })) return [];
  if (statSync(full).isFile()) return [path];
  return readdirSync(full).flatMap((n) => (n === "node_modules" || n === "build" ? [] : sources(join(path, n)))).filter((p) => /\.(ts|mjs)$/.test(p));
}

const edges: [string, string][] = SCANNED.flatMap(sources).flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), "utf8")).map((t): [string, string] => [f, t]));

test("every import follows ARCHITECTURE.md's rules", () => {
  const rules = parseRules(readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8"));
  assert.ok(edges.length > 300, `found only ${edges.length} imports: the scan is broken`);
  const bad = violations(edges, rules);
  assert.equal(bad, [], `imports against the rules:\n  ${bad.join("\n  ")}`);
  const imported = edges.filter(([, to]) => !to.startsWith("node_modules")).map(([, to]) => to);
  for (const to of imported) {
    if (to.startsWith("wasm/build/")) continue; // generated by build.ts
    assert.ok(statSync(join(ROOT, to), { throwIfNoEntry: false }), `an import names ${relative(".", to)}, which does not exist`);
  }
});

test("nothing outside a store kind's folder reaches into it but the kind table, the other source folders, the mod.ts files, tests and benchmarks (ARCHITECTURE.md, Where to add)", () => {
  const kinds = kindFolders(edges);
  assert.equal([...kinds].sort(), ["src/source/cassandra", "src/source/files", "src/source/http", "src/source/sqlite", "src/source/webdataset"], "the kind table's folders");
  const bad = doorViolations(edges, kinds);
  assert.equal(bad, [], `imports past the kind table:\n  ${bad.join("\n  ")}`);
});

test("no files import each other in a cycle (type-only imports included)", () => {
  const found = cycles(edges.filter(([, to]) => !to.startsWith("node_modules")));
  assert.equal(found, [], `import cycles:\n  ${found.map((c) => c.join(" ↔ ")).join("\n  ")}`);
});

test("the checks catch what they are for: a forbidden direction, a missing rule, a cycle", () => {
  const rules = parseRules("```rules\nsrc/source : src/errors.ts\nsrc/decode :\n```");
  assert.equal(violations([["src/source/http/http.ts", "src/errors.ts"], ["src/source/a.ts", "src/source/b.ts"]], rules), []);
  assert.equal(violations([["src/source/source.ts", "src/decode/jpeg.ts"]], rules), ["src/source/source.ts imports src/decode/jpeg.ts: src/source may not import src/decode"]);
  assert.match(violations([["train.ts", "bench/x.ts"]], rules)[0], /train\.ts has no rule/);
  assert.equal(cycles([["a", "b"], ["b", "c"], ["c", "a"], ["c", "d"]]), [["a", "b", "c"]]);
  assert.equal(cycles([["a", "b"], ["b", "c"]]), []);
  const kinds = kindFolders([["src/source/kinds.ts", "src/source/http/http.ts"], ["src/source/kinds.ts", "src/source/address.ts"], ["src/read/open.ts", "src/source/files/file.ts"]]);
  assert.equal([...kinds], ["src/source/http"]);
  assert.equal(doorViolations([
    ["src/source/kinds.ts", "src/source/http/http.ts"], ["src/source/http/s3.ts", "src/source/http/http.ts"], ["src/source/webdataset/w.ts", "src/source/http/http.ts"],
    ["src/read/mod.ts", "src/source/http/s3.ts"], ["src/mod.ts", "src/source/http/s3.ts"], ["bench/s3.bench.ts", "src/source/http/s3.ts"], ["src/read/open.ts", "src/source/kinds.ts"],
    ["src/cli/ingest.ts", "src/source/http/s3.ts"],
  ], kinds), []);
  assert.equal(doorViolations([["src/read/open.ts", "src/source/http/http.ts"], ["src/source/open.ts", "src/source/http/s3.ts"], ["src/cli/read.ts", "src/source/http/s3.ts"]], kinds), [
    "src/read/open.ts imports src/source/http/http.ts: outside src/source/http/ a store kind is reached through src/source/kinds.ts",
    "src/source/open.ts imports src/source/http/s3.ts: outside src/source/http/ a store kind is reached through src/source/kinds.ts",
    "src/cli/read.ts imports src/source/http/s3.ts: outside src/source/http/ a store kind is reached through src/source/kinds.ts",
  ]);
  assert.equal(importsOf("src/x/y.ts", 'import type { A } from "../a.ts";\n/** import { B } from "./b.ts"; */\nexport { C } from "./c.ts";\nconst d = await import("../../d.ts");'), ["src/a.ts", "src/x/c.ts", "d.ts"]);
});

test("nothing a page loads from cassette/browser imports a Node, Bun or Deno built-in, a package, or the SQLite and Cassandra stores (ARCHITECTURE.md, The browser graph)", () => {
  const read = (p: string) => (statSync(join(ROOT, p), { throwIfNoEntry: false })?.isFile() ? readFileSync(join(ROOT, p), "utf8") : undefined);
  const { files, bad } = browserGraph(BROWSER_ENTRIES, read);
  assert.ok(files.length > 50, `the browser graph has only ${files.length} files: the walk is broken`);
  assert.ok(files.includes("runtime-adapters/index.browser.ts") && !files.includes("runtime-adapters/index.ts"), "index.ts is replaced by index.browser.ts");
  assert.ok(files.includes("src/train/fit.ts") && files.includes("src/decode/pool.ts") && files.includes("src/gpu/preprocess.ts"), "the graph reaches training, the decode pool and preprocessing");
  assert.equal(bad, [], `the browser graph loads what a page cannot:\n  ${bad.join("\n  ")}`);
});

test("deno.json's ./browser, the browser graph as source (tools/browser_source.ts, build.ts's dist/browser-src/), names the twins itself: it holds the files the walk reaches, none that has a twin, no import of one, no built-in", () => {
  const read = (p: string) => (statSync(join(ROOT, p), { throwIfNoEntry: false })?.isFile() ? readFileSync(join(ROOT, p), "utf8") : undefined);
  const hasTwin = (p: string) => p.endsWith(".ts") && !p.endsWith(".browser.ts") && read(p.replace(/\.ts$/, ".browser.ts")) !== undefined;
  const tree = browserSourceTree(["src/browser.ts", "src/decode/worker.ts", "src/decode/transforms/random_resized_crop.ts", "src/read/read_worker.ts"], read);
  const { files } = browserGraph(BROWSER_ENTRIES, read);
  assert.equal(files.filter((f) => !tree.has(f) && read(f) !== undefined), [], "every file a page loads is in the tree");
  assert.equal([...tree.keys()].filter(hasTwin), [], "no file that has a twin");
  const named = [...tree].flatMap(([path, text]) => importsOf(path, text).filter(hasTwin).map((to) => `${path} imports ${to}`));
  assert.equal(named, [], "every import of a twinned file names the twin");
  // Walked as written, with nothing but the tree to read: no built-in, package, store nor runtime global.
  const asWritten = browserGraph(BROWSER_ENTRIES, (p) => tree.get(p));
  assert.equal(asWritten.bad, []);
  assert.equal(JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).exports["./browser"], "./dist/browser-src/src/browser.ts");
});

test("the browser walk catches what it is for: a built-in, a package, a store, a runtime's global, through a chain; a twin replaces its file", () => {
  const files: Record<string, string> = {
    "src/browser.ts": 'import { a } from "./a.ts";\nimport type { T } from "./typeonly.ts";\nexport { r } from "../runtime-adapters/index.ts";',
    "src/a.ts": 'import "./source/sqlite/sqlite.ts";\nconst u = await import("undici");\nexport const a = 1;',
    "src/source/sqlite/sqlite.ts": 'import { readFileSync } from "node:fs";',
    "src/typeonly.ts": 'import "node:os";',
    "runtime-adapters/index.ts": 'import "./node.ts";',
    "runtime-adapters/index.browser.ts": "export const r = Deno.args;",
  };
  const { files: reached, bad } = browserGraph(["src/browser.ts"], (p) => files[p]);
  assert.ok(!reached.includes("src/typeonly.ts") && !reached.includes("runtime-adapters/index.ts"));
  assert.equal(bad.sort(), [
    "runtime-adapters/index.browser.ts ← src/browser.ts: uses Deno's globals",
    "src/a.ts ← src/browser.ts imports undici",
    "src/source/sqlite/sqlite.ts ← src/a.ts ← src/browser.ts imports node:fs",
    "src/source/sqlite/sqlite.ts ← src/a.ts ← src/browser.ts: a store a page cannot open",
  ]);
});
