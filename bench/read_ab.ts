/**
 * A/B of a loader change: bench/read.bench.ts of this checkout and of another (`--before DIR`,
 * e.g. `git worktree add /tmp/before HEAD~3`), run alternately in one invocation, round by
 * round, so that the machine's noise falls on both alike. Each run compares the Loader with the
 * raw driver in its own process; this prints, per setting, the ratios ready / raw driver,
 * strict / raw driver and ready / strict of each checkout, and after / before.
 *
 * With rtt0 among the settings it also prints each setting's ready order ÷ ready order at RTT 0,
 * run by run (the "keeps ≥ 0.85× its RTT-0 rate over two epochs").
 *
 *   bun bench/read_ab.ts --before /tmp/before [--rounds 3] [--samples 10000] [--settings rtt0,rtt150] [--connections auto]
 * Needs a running node (cassette cassandra start); both checkouts built (build.ts).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { benchArgs } from "./_lib/args.ts";

const USAGE = `usage: bun bench/read_ab.ts --before DIR [options]
  --before DIR       the other checkout (its bench/read.bench.ts is run as it is there)
  --rounds R         alternations, each one run of each checkout (default 3)
  --samples N        fmnist samples per epoch (default 10000)
  --settings LIST    read.bench.ts settings (default rtt0,rtt150)
  --connections C    read.bench.ts's --connections, one value (default 4; auto: cassette's defaults)`;

const args = benchArgs({ program: "bench/read_ab.ts", usage: USAGE, valued: ["before", "rounds", "samples", "settings", "connections"] });
const before = args.str("before") ?? args.fail("needs --before DIR");
const rounds = args.int("rounds", 3);
const samples = args.int("samples", 10000);
const settings = args.str("settings", "rtt0,rtt150");
const connections = args.str("connections", "4");
if (connections.includes(",")) args.fail(`--connections takes one value here: current value is ${connections}`);
const HERE = resolve(new URL("..", import.meta.url).pathname);
const out = mkdtempSync(join(tmpdir(), "cassette-read-ab-"));

interface Setting {
  setting: string;
  samplesPerSec: Record<string, number>;
}
type Ratios = { readyRaw: number; strictRaw: number; readyStrict: number; readyVsRtt0?: number };
const got: Record<"before" | "after", Record<string, Ratios[]>> = { before: {}, after: {} };

function runOnce(which: "before" | "after", round: number): void {
  const root = which === "before" ? resolve(before) : HERE;
  const json = join(out, `${which}-${round}.json`);
  const argv = ["bench/read.bench.ts", "--set", "fmnist", "--samples", String(samples), "--rounds", "1", "--settings", settings, "--balance", "rate", "--connections", connections, "--json", json, "--out", join(out, "figures")];
  process.stdout.write(`round ${round + 1}/${rounds}: ${which} (${root}) … `);
  const t0 = performance.now();
  const r = spawnSync(join(HERE, "node_modules/.bin/bun"), argv, { cwd: root, encoding: "utf8", timeout: 20 * 60_000 });
  if (r.status !== 0) throw new Error(`${which}'s read.bench.ts exited ${r.status}:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
  console.log(`${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const results = (JSON.parse(readFileSync(json, "utf8")) as { results: Setting[] }).results;
  const rtt0 = results.find((s) => s.setting === "rtt0")?.samplesPerSec["ready order"];
  for (const s of results) {
    const v = s.samplesPerSec;
    (got[which][s.setting] ??= []).push({
      readyRaw: v["ready order"] / v["raw driver"], strictRaw: v["strict order"] / v["raw driver"], readyStrict: v["ready order"] / v["strict order"],
      ...(rtt0 && { readyVsRtt0: v["ready order"] / rtt0 }),
    });
  }
}

try {
  for (let i = 0; i < rounds; i++) {
    // Alternate who goes first, so neither always meets a warmer machine.
    for (const w of (i % 2 ? ["after", "before"] : ["before", "after"]) as ("before" | "after")[]) runOnce(w, i);
  }
  const med = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  console.log(`\nmedian (range) over ${rounds} runs of each, fmnist ${samples} samples, 2 epochs per run, connections ${connections}`);
  console.log("setting  ratio          before             after              after/before");
  for (const setting of Object.keys(got.after)) {
    const keys = ["readyRaw", "strictRaw", "readyStrict", ...(setting !== "rtt0" && got.after[setting][0].readyVsRtt0 ? ["readyVsRtt0"] as const : [])] as const;
    for (const k of keys) {
      const b = got.before[setting].map((r) => r[k]!), a = got.after[setting].map((r) => r[k]!);
      const name = { readyRaw: "ready/raw", strictRaw: "strict/raw", readyStrict: "ready/strict", readyVsRtt0: "ready/RTT0" }[k];
      console.log(`${setting.padEnd(8)} ${name.padEnd(14)} ${med(b).toFixed(2)} (${range(b)})  ${med(a).toFixed(2)} (${range(a)})  ${(med(a) / med(b)).toFixed(2)}`);
    }
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
