/**
 * Where a worker entry is, from the module that starts it. From source it is a .ts file beside
 * that module; in the bundles (build.ts) every worker entry is at a fixed place under dist/ (and
 * under dist/browser/ in the browser's), while the code that starts it may sit in any chunk or
 * entry, at any depth.
 */
export function entryUrl(here: string, sourceRel: string, distPath: string): URL {
  if (here.endsWith(".ts")) return new URL(sourceRel, here);
  const root = here.includes("/dist/browser/") ? "/dist/browser/" : "/dist/";
  const at = here.lastIndexOf(root);
  return at < 0 ? new URL(distPath, here) : new URL(distPath, here.slice(0, at + root.length));
}
