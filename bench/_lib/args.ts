/**
 * A benchmark's options, read by the cassette command's parser (src/cli/args.ts), so that every
 * bench answers alike: `--help` or `-h` prints its usage and exits 0; an unknown option, a
 * missing value or a bad number is one line naming it, on stderr, and exit status 2.
 *
 *   const a = benchArgs({ program: "bench/http.bench.ts", usage: USAGE, valued: ["rounds"], flags: ["quick"] });
 *   const rounds = a.int("rounds", a.has("quick") ? 3 : 7);
 */
import { runtime } from "../../runtime-adapters/index.ts";
import { intOption, listOption, numberOption, parseArgs, required, usageError } from "../../src/cli/args.ts";
import { CassetteError } from "../../src/errors.ts";

export interface BenchSpec {
  /** The script's path from the repository root: errors name it and point at its --help. */
  program: string;
  /** What --help prints. */
  usage: string;
  /** Options that take a value, without the dashes. */
  valued?: string[];
  /** Options that take none (--help and --json need not be listed, unless --json takes a value). */
  flags?: string[];
  /** Whether arguments that are not options are taken (bench/main.ts: benchmark names); else they are refused. */
  positional?: boolean;
  /** The arguments to read (default: the process's). */
  argv?: string[];
}

export interface BenchArgs {
  positional: string[];
  /** Whether the option was given. */
  has(name: string): boolean;
  /** A valued option as given, or `fallback`. */
  str(name: string): string | undefined;
  str(name: string, fallback: string): string;
  /** A valued option that must be given. */
  required(name: string): string;
  /** An integer option, which must be at least `min` (1 unless said), or `fallback` when it is not given. */
  int(name: string, fallback: number, min?: number): number;
  /** A number option (decimals allowed), or `fallback` when it is not given. */
  num(name: string, fallback: number): number;
  /** A comma-separated option, or `fallback` when it is not given. */
  list(name: string, fallback: string[]): string[];
  /** Ends the run as a usage error naming `why`, as a bad option does. */
  fail(why: string): never;
}

export function benchArgs(spec: BenchSpec): BenchArgs {
  const { program } = spec;
  // The parser throws CassetteErrors; here they end the run as the cassette command ends it.
  const guard = <T>(f: () => T): T => {
    try {
      return f();
    } catch (e) {
      if (!(e instanceof CassetteError)) throw e;
      console.error(`${program}: ${e.message} [${e.code}]`);
      return runtime.exit(2);
    }
  };
  const fail = (why: string): never => guard(() => usageError("", why, program));
  const { positional, options } = guard(() => parseArgs(spec.argv ?? runtime.args(), "", spec.valued ?? [], spec.flags ?? [], program));
  if (options.has("help")) {
    console.log(spec.usage);
    runtime.exit(0);
  }
  if (!spec.positional && positional.length) fail(`takes only options: got '${positional[0]}'`);

  function str(name: string): string | undefined;
  function str(name: string, fallback: string): string;
  function str(name: string, fallback?: string): string | undefined {
    const v = options.get(name);
    return typeof v === "string" ? v : fallback;
  }
  return {
    positional,
    has: (name) => options.has(name),
    str,
    required: (name) => guard(() => required(options, "", name, program)),
    int(name, fallback, min = 1) {
      const n = guard(() => intOption(options, "", name, program));
      if (n === undefined) return fallback;
      if (n < min) fail(`--${name} must be an integer ≥ ${min}: current value is ${options.get(name)}`);
      return n;
    },
    num: (name, fallback) => guard(() => numberOption(options, "", name, program)) ?? fallback,
    list: (name, fallback) => listOption(options, name) ?? fallback,
    fail,
  };
}
