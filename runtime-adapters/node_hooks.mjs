// Node loader hooks, registered with `node --import ./runtime-adapters/node_hooks.mjs`:
// Bun imports `with { type: "text" }` natively and Deno with --unstable-raw-imports; Node 22
// needs this hook to import the .wgsl kernels as text (the esbuild bundle inlines them instead).
import { register } from "node:module";

if (!globalThis.__cassetteHooks) {
  globalThis.__cassetteHooks = true;
  register(new URL(import.meta.url));
}

export async function load(url, context, nextLoad) {
  if (url.endsWith(".wgsl") || context.importAttributes?.type === "text") {
    const { readFile } = await import("node:fs/promises");
    const text = await readFile(new URL(url), "utf8");
    return { format: "module", source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
  }
  return nextLoad(url, context);
}
