/** `cassette ingest SOURCE --store URL --dataset NAME`: samples from a source into a store. */
import { ingest } from "../dataset/ingest.ts";
import { openStore } from "../source/open.ts";
import { progress } from "../observe/progress.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { intOption, listOption, parseArgs, required, usageError } from "./args.ts";

export const help = `usage: cassette ingest SOURCE --store URL --dataset NAME [options]

SOURCE is one of:
  DIR                  an ImageFolder: DIR/<class>/<image>.jpg (label = class index, sorted)
  idx:PATH-PREFIX      (Fashion-)MNIST idx files, e.g. idx:/usr/share/datasets/fashion-mnist/
                       (each image is encoded to JPEG with jpeg-js at --quality)
  FILE.jsonl|FILE.csv  a manifest: 'path' (relative to the manifest), 'label' (int or class
                       name), optional 'key', and any metadata columns (e.g. patient_id)

Samples are written atomically and keyed by sampleId(NAME, KEY): a re-run skips what is
stored and resumes an interrupted ingest. Bad files are reported with their path and skipped.

  --store URL          sqlite:PATH or cassandra://[user:pass@]host[,host…][:port]/KEYSPACE
  --dataset NAME       dataset name (letters, digits, . - _)
  --group-by COL,…     columns that group samples (metadata_by_nat's partition key)
  --quality Q          JPEG quality for idx sources (default 90)
  --limit N            only the first N items (per idx split)
  --strict             stop at the first bad file instead of skipping it
  --json               print one JSON document: the summary
Credentials may also come from CASSETTE_CASSANDRA_USER / CASSETTE_CASSANDRA_PASSWORD.`;

export async function run(argv: string[]): Promise<number> {
  const { positional, options } = parseArgs(argv, "ingest", ["store", "dataset", "group-by", "quality", "limit"], ["strict"]);
  if (options.has("help")) return void console.log(help), 0;
  const [source, extra] = positional;
  if (!source) usageError("ingest", "needs a SOURCE");
  if (extra) usageError("ingest", `takes one SOURCE: got also '${extra}'`);
  const json = options.has("json");
  const store = await openStore(required(options, "ingest", "store"));
  try {
    let bar: ReturnType<typeof progress> | undefined;
    const summary = await ingest(store, source, {
      dataset: required(options, "ingest", "dataset"),
      groupBy: listOption(options, "group-by"),
      quality: intOption(options, "ingest", "quality"),
      limit: intOption(options, "ingest", "limit"),
      strict: options.has("strict"),
      onProgress: (p) => {
        bar ??= progress("ingest", p.total, json, runtime.now() - p.seconds * 1000);
        bar.update(p.done, `${p.written} new, ${p.existing} stored, ${p.errors} bad, ${(p.bytes / 1e6).toFixed(1)} MB`);
      },
    });
    bar?.done();
    if (json) console.log(JSON.stringify({ ...summary, store: store.address }));
    else {
      console.log(`dataset ${summary.dataset} in ${store.address}: ${summary.written} written, ${summary.existing} already stored, ${summary.errors.length} skipped`);
      console.log(`  ${(summary.bytes / 1e6).toFixed(1)} MB in ${summary.seconds.toFixed(1)} s (${(summary.written / Math.max(summary.seconds, 1e-9)).toFixed(0)} samples/s)`);
      const labels = Object.entries(summary.perLabel);
      if (labels.length) console.log(`  per label: ${labels.map(([l, n]) => `${l}:${n}`).join(" ")}`);
      for (const e of summary.errors.slice(0, 20)) console.log(`  skipped ${e.path ?? e.key}: ${e.reason}`);
      if (summary.errors.length > 20) console.log(`  … and ${summary.errors.length - 20} more (--json lists all)`);
    }
    return summary.errors.length ? 1 : 0;
  } finally {
    await store.close();
  }
}
