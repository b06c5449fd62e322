/** A small argument parser shared by the subcommands: `--name value`, `--name=value`, flags. */
import { CassetteError } from "../errors.ts";

export interface Parsed {
  positional: string[];
  options: Map<string, string | true>;
}

/**
 * Parses `argv` against the options a command knows. `valued` options take a value; `flags`
 * do not. Unknown options are an error that names them and points at --help. --help and -h are
 * always flags, and so is --json unless the command lists it in `valued` (as `--json FILE`).
 *
 * `program` is what the --help hint names before `command`: a script with options of its own
 * (a benchmark, a tool) passes its path as `program` and "" as `command`.
 */
export function parseArgs(argv: string[], command: string, valued: string[], flags: string[] = [], program = "cassette"): Parsed {
  const positional: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith("-") || a === "-") {
      positional.push(a);
      continue;
    }
    const [name, inline] = a.startsWith("--") ? splitOnce(a.slice(2)) : [a === "-h" ? "help" : a.slice(1), undefined];
    if (flags.includes(name) || name === "help" || (name === "json" && !valued.includes(name))) {
      if (inline !== undefined) usageError(command, `--${name} takes no value`, program);
      options.set(name, true);
    } else if (valued.includes(name)) {
      const v = inline ?? argv[++i];
      if (v === undefined) usageError(command, `--${name} needs a value`, program);
      options.set(name, v);
    } else usageError(command, `unknown option '${a}'`, program);
  }
  return { positional, options };
}

/**
 * An option whose value may be left out (`--dashboard` or `--dashboard 8080`): a bare one,
 * not followed by a value matching `value`, is given `fallback`. Run on argv before parseArgs.
 */
export function optionalValue(argv: string[], name: string, fallback: string, value = /^\d+$/): string[] {
  return argv.map((a, i) => (a === `--${name}` && !value.test(argv[i + 1] ?? "") ? `--${name}=${fallback}` : a));
}

function splitOnce(s: string): [string, string | undefined] {
  const i = s.indexOf("=");
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
}

/** A usage error: `why`, and the --help to read (`program` as for parseArgs). */
export function usageError(command: string, why: string, program = "cassette"): never {
  const help = [program, command].filter(Boolean).join(" ");
  throw new CassetteError("ERR_INVALID_OPTION", `${why} (see ${help} --help)`);
}

/** A required valued option. */
export function required(options: Map<string, string | true>, command: string, name: string, program = "cassette"): string {
  const v = options.get(name);
  if (typeof v !== "string" || v === "") usageError(command, `needs --${name}`, program);
  return v as string;
}

/** An optional integer option; errors name the option and value. */
export function intOption(options: Map<string, string | true>, command: string, name: string, program = "cassette"): number | undefined {
  const v = options.get(name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) usageError(command, `--${name} must be an integer: current value is ${v}`, program);
  return n;
}

/** An optional number option that may have decimals (a step or a round trip in ms); errors name the option and value. */
export function numberOption(options: Map<string, string | true>, command: string, name: string, program = "cassette"): number | undefined {
  const v = options.get(name);
  if (v === undefined) return undefined;
  // Number("") is 0: an empty value is refused, not read as zero.
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
  if (!Number.isFinite(n)) usageError(command, `--${name} must be a number: current value is ${v}`, program);
  return n;
}

/** An optional comma-separated list option. */
export function listOption(options: Map<string, string | true>, name: string): string[] | undefined {
  const v = options.get(name);
  return typeof v === "string" ? v.split(",").map((x) => x.trim()).filter(Boolean) : undefined;
}

/** A size on the command line (--shard-bytes, --cache-bytes): bytes, or a number with kB/MB/GB (powers of 1000) or KiB/MiB/GiB (of 1024). */
export function parseBytes(v: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(|b|kb|mb|gb|tb|kib|mib|gib|tib)\s*$/i.exec(v);
  if (!m) return undefined;
  const unit = m[2].toLowerCase();
  const mult: Record<string, number> = { "": 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };
  const n = Math.floor(Number(m[1]) * mult[unit]);
  return n > 0 && Number.isSafeInteger(n) ? n : undefined;
}
