/**
 * A benchmark's input script (bash), run before it measures. Its failure ends the run with one
 * line naming the script, its last words and what to run instead, not a stack trace: the jpeg
 * bench's first run fetches Debian packages, and without a network that was an uncaught error
 * (issue 38).
 */
import { spawnSync } from "node:child_process";
import process from "node:process";
import { runtime } from "../../runtime-adapters/index.ts";

/**
 * Runs `bash script`; its stdout shows as it goes. On failure prints `program: Cannot make the
 * benchmark's inputs as SCRIPT failed (LAST LINE OF ITS STDERR): HINT [ERR_RUNTIME]` and exits 1.
 */
export function makeInputs(program: string, script: string, hint: string): void {
  const r = spawnSync("bash", [script], { stdio: ["ignore", "inherit", "pipe"], encoding: "utf8" });
  if (r.status === 0) return void (r.stderr && process.stderr.write(r.stderr));
  // A tool's colours are not part of the message.
  const last = String(r.stderr ?? "").replace(/\x1b\[[0-9;]*m/g, "").trim().split("\n").pop()?.trim();
  const why = last || (r.error ? r.error.message : `exit status ${r.status ?? r.signal}`);
  // process.stderr, not console.error: Bun prints the latter in red, escape codes and all.
  process.stderr.write(`${program}: Cannot make the benchmark's inputs as ${script} failed (${why}): ${hint} [ERR_RUNTIME]\n`);
  runtime.exit(1);
}
