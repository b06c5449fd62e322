/**
 * Runs the tests of one file in the current runtime and prints one result line that
 * test/run.ts reads: `##cassette {"passed":N,"failed":N,"skipped":N}`.
 *
 *   bun test/_support/main.ts test/gpu/roundtrip.test.ts [--filter TEXT]
 */
import { registeredCleanups, registeredTests } from "./harness.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const args = runtime.args();
const file = args[0];
const fi = args.indexOf("--filter");
const filter = fi >= 0 ? args[fi + 1] : undefined;
if (!file) {
  console.error("usage: main.ts FILE.test.ts [--filter TEXT]");
  runtime.exit(2);
}

let passed = 0, failed = 0, skipped = 0;
const fileUrl = new URL(file, `file://${runtime.cwd()}/`).href;
try {
  await import(fileUrl);
} catch (e) {
  console.log(`  ✗ ${file}: cannot load: ${describe(e)}`);
  failed++;
}

for (const t of registeredTests()) {
  if (filter && !t.name.includes(filter)) continue;
  if (t.options.skip) {
    skipped++;
    console.log(`  - ${t.name} (skipped: ${t.options.skip})`);
    continue;
  }
  const t0 = runtime.now();
  const limit = t.options.timeoutMs ?? 120_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(t.fn),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${limit} ms`)), limit);
      }),
    ]);
    passed++;
    console.log(`  ✓ ${t.name} (${(runtime.now() - t0).toFixed(0)} ms)`);
  } catch (e) {
    failed++;
    console.log(`  ✗ ${t.name} (${(runtime.now() - t0).toFixed(0)} ms)\n${indent(describe(e))}`);
  } finally {
    clearTimeout(timer);
  }
}
for (const c of registeredCleanups()) {
  try {
    await c();
  } catch (e) {
    failed++;
    console.log(`  ✗ cleanup: ${describe(e)}`);
  }
}
console.log(`##cassette ${JSON.stringify({ passed, failed, skipped })}`);
runtime.exit(0);

function describe(e: unknown): string {
  if (e instanceof Error) {
    const extra = (e as { details?: string }).details ? `\n${(e as { details?: string }).details}` : "";
    return `${e.stack ?? e.message}${extra}`;
  }
  return String(e);
}
function indent(s: string): string {
  return s.split("\n").slice(0, 30).map((l) => "      " + l).join("\n");
}
