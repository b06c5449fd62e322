/**
 * The current runtime, detected once. Import `runtime` from here; never test for Deno/Bun
 * elsewhere.
 */
import type { Runtime } from "./runtime.ts";
export type * from "./runtime.ts";

async function detect(): Promise<Runtime> {
  const g = globalThis as Record<string, unknown>;
  if (g.Deno) return (await import("./deno.ts")).deno;
  if (g.Bun) return (await import("./bun.ts")).bun;
  const node = (g.process as { versions?: { node?: string } } | undefined)?.versions?.node;
  if (node) {
    const [major, minor] = node.split(".").map(Number);
    if (major < 22 || (major === 22 && minor < 13)) {
      throw new Error(`cassette needs Node ≥ 22.13 (for node:sqlite): this is Node ${node}`);
    }
    return (await import("./node.ts")).node;
  }
  throw new Error("cassette runs on Deno, Bun or Node ≥ 22: this runtime is none of them");
}

export const runtime: Runtime = await detect();
