/** A small argument parser shared by the subcommands: `--name value`, `--name=value`, flags. */
import { CassetteError } from "../errors.ts";

export interface Parsed {
  positional: string[];
  options: Map<string, string | true>;
}

/**
 * Parses `argv` against the options a command knows. `valued` options take a value; `flags`
 * do not. Unknown options are an error that names them and points at --help.
 */
export function parseArgs(argv: string[], command: string, valued: string[], flags: string[] = []): Parsed {
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
    if (flags.includes(name) || name === "help" || name === "json") {
      if (inline !== undefined) usageError(command, `--${name} takes no value`);
      options.set(name, true);
    } else if (valued.includes(name)) {
      const v = inline ?? argv[++i];
      if (v === undefined) usageError(command, `--${name} needs a value`);
      options.set(name, v);
    } else usageError(command, `unknown option '${a}'`);
  }
  return { positional, options };
}

function splitOnce(s: string): [string, string | undefined] {
  const i = s.indexOf("=");
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
}

export function usageError(command: string, why: string): never {
  throw new CassetteError("ERR_INVALID_OPTION", `${why} (see cassette ${command} --help)`);
}

/** A required valued option. */
export function required(options: Map<string, string | true>, command: string, name: string): string {
  const v = options.get(name);
  if (typeof v !== "string" || v === "") usageError(command, `needs --${name}`);
  return v as string;
}

/** An optional integer option; errors name the option and value. */
export function intOption(options: Map<string, string | true>, command: string, name: string): number | undefined {
  const v = options.get(name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) usageError(command, `--${name} must be an integer: current value is ${v}`);
  return n;
}

/** An optional comma-separated list option. */
export function listOption(options: Map<string, string | true>, name: string): string[] | undefined {
  const v = options.get(name);
  return typeof v === "string" ? v.split(",").map((x) => x.trim()).filter(Boolean) : undefined;
}
