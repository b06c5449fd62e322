/**
 * index.ts in the browser graph: the bundle for pages (build.ts, dist/browser/) resolves every
 * import of `index.ts` to this file, as does the browser walk of test/architecture.test.ts
 * (ARCHITECTURE.md, "The browser graph"). index.ts's detection imports the Bun, Deno and Node
 * adapters, whose built-ins a page cannot load.
 */
import type { Runtime } from "./runtime.ts";
import { browser } from "./browser.ts";
export type * from "./runtime.ts";

export const runtime: Runtime = browser;
