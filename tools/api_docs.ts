/**
 * The API reference, generated from the code: `deno doc --html` over the modules deno.json
 * exports, into docs/api/ (gitignored: rebuilt by `deno task docs`, never edited by hand).
 *
 *   deno task docs            # or: deno run -A tools/api_docs.ts [--output DIR]
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const ROOT = join(fileURLToPath(new URL(".", import.meta.url)), "..");
const USAGE = `usage: deno run -A tools/api_docs.ts [--output DIR]

Writes the HTML API reference of the modules deno.json exports into DIR (default docs/api).`;

/** The modules deno.json exports ("./src/mod.ts", …), in its order. */
export function apiEntries(root: string = ROOT): string[] {
  const exports = JSON.parse(readFileSync(join(root, "deno.json"), "utf8")).exports as Record<string, string>;
  return Object.values(exports);
}

/** The deno binary: this one when running under Deno, else the one the package pins. */
export function denoBin(root: string = ROOT): string {
  const d = (globalThis as { Deno?: { execPath(): string } }).Deno;
  return d ? d.execPath() : join(root, "node_modules/.bin/deno");
}

if (import.meta.main ?? process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    process.exit(0);
  }
  let output = "docs/api";
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--output" && args[i + 1]) output = args[++i];
    else {
      console.error(`unknown option '${args[i]}'\n${USAGE}`);
      process.exit(2);
    }
  }
  mkdirSync(resolve(ROOT, output), { recursive: true }); // deno doc makes only the last folder
  const r = spawnSync(denoBin(), ["doc", "--html", "--name=cassette", `--output=${output}`, ...apiEntries()], { cwd: ROOT, stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
  console.log(`api_docs: ${join(output, "index.html")}`);
}
