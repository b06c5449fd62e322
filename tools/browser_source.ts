/**
 * The browser graph as source (ARCHITECTURE.md, "The browser graph"), for deno.json's
 * `./browser` export: Deno (and JSR) resolve a relative import as written, with no conditions
 * and no plugin, so from src/browser.ts they would reach the Node files (kinds_open.ts,
 * runtime-adapters/index.ts, …) rather than their `NAME.browser.ts` twins. This walks the graph
 * from the browser entries as build.ts's bundle resolves it (a twin in its file's place) and
 * gives each file with its relative imports renamed to the twins, so that the tree build.ts
 * writes to dist/browser-src/ names the twins itself and holds no file that has one.
 *
 * Type-only imports are followed too (deno checks them); an import that is not TypeScript (a
 * shader, imported as text) is carried as it is. The wasm decoders, which the page fetches by
 * URL (src/decode/wasm_bytes.browser.ts), are not imports: build.ts copies them beside (the CPU
 * tensor's resampler, under 2 kB, is an import: src/decode/tensor_module.ts).
 *
 * @example
 * ```ts
 * import { browserSourceTree } from "./browser_source.ts";
 * const files: Record<string, string> = {
 *   "src/browser.ts": 'export { k } from "./kinds.ts";',
 *   "src/kinds.ts": 'import * as o from "./kinds_open.ts";\nexport const k = o;',
 *   "src/kinds_open.ts": 'import { readFile } from "node:fs";',
 *   "src/kinds_open.browser.ts": "export const web = true;",
 * };
 * const tree = browserSourceTree(["src/browser.ts"], (p) => files[p]);
 * console.log([...tree.keys()].join(" ")); // src/browser.ts src/kinds.ts src/kinds_open.browser.ts
 * console.log(tree.get("src/kinds.ts")!.includes('"./kinds_open.browser.ts"')); // true
 * ```
 */

/** Relative specifiers in `from "…"`, `import "…"` and `import("…")`, with the quote they sit in. */
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.\.?\/[^"'\n]+)\2/g;

/** A path joined and normalized (`a/b/../c` → `a/c`), with `/` as separator. */
function resolve(from: string, spec: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const p of spec.split("/")) {
    if (p === "..") parts.pop();
    else if (p !== ".") parts.push(p);
  }
  return parts.join("/");
}

/**
 * Each file of the browser graph reached from `entries` (paths from the repository's root) and
 * its text, its relative imports of a file with a twin renamed to the twin. `read` gives a
 * file's text, or undefined where there is none; a file imported but missing is an Error.
 */
export function browserSourceTree(entries: string[], read: (path: string) => string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const twinOf = (path: string) => {
    const twin = path.replace(/\.ts$/, ".browser.ts");
    return path.endsWith(".ts") && !path.endsWith(".browser.ts") && read(twin) !== undefined ? twin : path;
  };
  const queue = entries.map(twinOf);
  while (queue.length) {
    const path = queue.shift()!;
    if (out.has(path)) continue;
    const text = read(path);
    if (text === undefined) throw new Error(`the browser graph imports ${path}, which is not there`);
    if (!path.endsWith(".ts")) {
      out.set(path, text);
      continue;
    }
    out.set(path, text.replace(SPECIFIER, (whole, lead: string, quote: string, spec: string) => {
      const target = twinOf(resolve(path, spec));
      queue.push(target);
      return target === resolve(path, spec) ? whole : `${lead}${quote}${spec.replace(/\.ts$/, ".browser.ts")}${quote}`;
    }));
  }
  return out;
}
