/**
 * `deno task bench` (or `bun bench/main.ts`): runs every bench/*.bench.ts in this runtime, one
 * after another (never in parallel: they measure), and says where the figures belong.
 *
 *   deno task bench [--quick] [NAME…] [-- OPTION…]     NAME: e.g. gpu_backend, jpeg
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { runtime } from "../runtime-adapters/index.ts";
import { benchArgs } from "./_lib/args.ts";

const USAGE = "usage: deno task bench [--quick] [NAME…] [-- OPTION…]\n  runs bench/NAME.bench.ts (all by default) with --quick and the OPTIONs after --; record figures in bench/RESULTS.md";
// Names and --quick are main's; everything after `--` goes to each benchmark as it is, and
// each refuses what it does not know (deno task bench jpeg -- --no-pool).
const argv = runtime.args();
const cut = argv.indexOf("--");
const args = benchArgs({ program: "bench/main.ts", usage: USAGE, flags: ["quick"], positional: true, argv: cut < 0 ? argv : argv.slice(0, cut) });
const names = args.positional;
const passed = [...(args.has("quick") ? ["--quick"] : []), ...(cut < 0 ? [] : argv.slice(cut + 1))];
const dir = new URL(".", import.meta.url).pathname;
const all = readdirSync(dir).filter((f) => f.endsWith(".bench.ts")).sort();
const chosen = names.length ? all.filter((f) => names.some((n) => f.startsWith(`${n}.`))) : all;
if (chosen.length === 0) {
  console.error(`bench: no benchmark matches ${names.join(", ")}: have ${all.join(", ")}`);
  runtime.exit(2);
}
let failed = 0;
for (const f of chosen) {
  console.log(`\n=== ${f} (${runtime.name} ${runtime.version})`);
  const [cmd, ...rest] = runtime.scriptCommand(`${dir}${f}`, passed);
  const r = spawnSync(cmd, rest, { stdio: "inherit" });
  if (r.status !== 0) {
    failed++;
    console.error(`bench: ${f} exited ${r.status}`);
  }
}
console.log("\nRecord the figures, the machine and the command in bench/RESULTS.md.");
runtime.exit(failed ? 1 : 0);
