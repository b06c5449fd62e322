/**
 * The `cassette` command (src/cli/main.ts) run as a user runs it, in a child process of the
 * runtime under test, for the tests of the CLI's output, exit status and messages.
 */
import { type ChildProcessByStdio, spawn, spawnSync } from "node:child_process";
import type { Readable } from "node:stream";
import { runtime } from "../../runtime-adapters/index.ts";

export interface CliResult {
  /** The exit status (null when it was killed, e.g. past the time limit). */
  code: number | null;
  out: string;
  err: string;
}

/** Runs `cassette ...args` to its end (at most 60 s): its exit status, stdout and stderr. */
export function cassette(...args: string[]): CliResult {
  const [cmd, ...pre] = runtime.scriptCommand("src/cli/main.ts", args);
  const r = spawnSync(cmd, pre, { encoding: "utf8", timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Starts `cassette ...args` and returns at once, for tests that watch its output or kill it. */
export function startCassette(...args: string[]): ChildProcessByStdio<null, Readable, Readable> {
  const [cmd, ...pre] = runtime.scriptCommand("src/cli/main.ts", args);
  return spawn(cmd, pre, { stdio: ["ignore", "pipe", "pipe"] });
}
