/** `cassette id DATASET KEY…`: the portable sample id of each key. */
import { sampleId } from "../dataset/sample_id.ts";
import { checkDatasetName } from "../dataset/spec.ts";
import { parseArgs, usageError } from "./args.ts";

export const help = `usage: cassette id DATASET KEY… [--json]

Prints the sample id (UUIDv5 of DATASET/KEY under cassette's namespace) of each KEY.
KEY is a manifest's key column, a file path relative to the ingested folder, or
train/INDEX and t10k/INDEX for idx files.

  --json   one JSON document: { "dataset", "ids": { KEY: ID } }`;

export function run(argv: string[]): number {
  const { positional, options } = parseArgs(argv, "id", []);
  if (options.has("help")) return void console.log(help), 0;
  const [dataset, ...keys] = positional;
  if (!dataset || keys.length === 0) usageError("id", "needs a DATASET and at least one KEY");
  checkDatasetName(dataset); // an id for a name ingest refuses would match no sample
  const ids = Object.fromEntries(keys.map((k) => [k, sampleId(dataset, k)]));
  if (options.has("json")) console.log(JSON.stringify({ dataset, ids }));
  else for (const k of keys) console.log(`${ids[k]}  ${k}`);
  return 0;
}
