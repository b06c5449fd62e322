/**
 * The `cassette` command. Each subcommand lives in its own file with its own --help; this
 * file only dispatches, and turns CassetteErrors into one clear line and exit status 2.
 */
import process from "node:process";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import * as cassandra from "./cassandra.ts";
import * as exportCmd from "./export.ts";
import * as id from "./id.ts";
import * as info from "./info.ts";
import * as ingest from "./ingest.ts";
import * as splits from "./splits.ts";
import * as predict from "./predict.ts";
import * as read from "./read.ts";

const commands: Record<string, { run(argv: string[]): number | Promise<number>; help: string }> = { cassandra, export: exportCmd, id, info, ingest, predict, read, splits };

const help = `cassette: a deep-learning data loader for Deno, Bun and Node

usage: cassette COMMAND [options]    (every command has --help and --json)

commands:
  ingest SOURCE --store URL --dataset NAME    samples from a folder, idx files or a manifest
  info --store URL [--dataset NAME]           datasets, counts per label, bytes
  splits --store URL --dataset NAME --ratios 7,2,1 --out FILE    splits from metadata
  read --store URL --dataset NAME [--split FILE[:INDEX]]     the tight loop: MB/s, batch times
  export --store URL --dataset NAME --out DIR   samples as DIR/<id> + labels.json (file:, http://)
  predict --store URL --dataset NAME --weights FILE [--out-table T | --out F.jsonl]   a trained model's top-k per sample, accuracy
  cassandra start|stop|restart|status   local test/dev Cassandra nodes (127.0.0.N:9042; --nodes 3: a cluster)
  id DATASET KEY…               the portable sample id of a key

The main job: bun run train.ts (see README.md).`;

/** An argument with any `scheme://user:password@` credentials as `user:***`. */
const withoutPassword = (arg: string) => arg.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)[^@\s]*@/gi, "$1***@");

export async function main(argv: string[]): Promise<number> {
  // The process's title without passwords: `ps` and /proc/PID/cmdline show it to every user of
  // the machine. Node and Deno rewrite their command line with it; Bun ignores it (there, give
  // the password as CASSETTE_CASSANDRA_PASSWORD, which no other user can read).
  process.title = ["cassette", ...argv].map(withoutPassword).join(" ");
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === "--help" || cmd === "-h" || cmd === "help") {
    console.log(help);
    return cmd ? 0 : 2;
  }
  if (cmd === "--version") {
    console.log("cassette 0.2.0");
    return 0;
  }
  const command = commands[cmd];
  if (!command) {
    console.error(`cassette: unknown command '${cmd}' (commands: ${Object.keys(commands).join(", ")}; see cassette --help)`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (e) {
    if (e instanceof CassetteError) {
      console.error(`cassette ${cmd}: ${e.message} [${e.code}]`);
      return 2;
    }
    throw e;
  }
}

/** Runs the command line this process was started with, then exits with its status (the package's bin, dist/cli/bin.js, calls it). */
export async function cli(): Promise<never> {
  return runtime.exit(await main(runtime.args()));
}

if (import.meta.main) await cli();
