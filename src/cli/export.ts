/**
 * `cassette export --store URL --dataset NAME --out DIR|s3://BUCKET/PREFIX`: the command over
 * src/source/export/export.ts (exportDataset, exportShards), which says how each format is written
 * and resumed.
 */
import { loadSplit } from "../dataset/splits.ts";
import { DEFAULT_SHARD_BYTES } from "../dataset/webdataset.ts";
import { progress } from "../observe/progress.ts";
import { exportDataset, exportShards, objectPath, openSink } from "../source/export/export.ts";
import { LABELS_FILE } from "../source/kinds.ts";
import { openStore } from "../source/open.ts";
import { intOption, parseArgs, parseBytes, required, usageError } from "./args.ts";
import { count } from "../util/plural.ts";

export const help = `usage: cassette export --store URL --dataset NAME --out DIR|s3://BUCKET/PREFIX [--split FILE[:INDEX|:NAME]] [options]

--format files (the default) writes each sample of the dataset (or of one split) as DIR/<id>,
its bytes exactly as stored, and the labels as DIR/labels.json. Read the folder in place with
--store file:DIR, or serve it with any static web server and read it with
--store http://HOST/PREFIX (objects at PREFIX/<id>).

--format webdataset writes WebDataset shards DIR/PREFIX-000000.tar, -000001.tar, … that
webdataset and wids read: per sample ID.jpg (or .png), ID.cls (the label) and ID.json
({"label", "class" when the dataset names its labels, the metadata columns}); the __key__
is the sample id. Samples are in an order shuffled by --seed (default: the split's seed
with --split, else 0): the same seed gives the same shards, byte for byte. Each shard is at
most --shard-bytes (end blocks included; a larger sample goes alone) and --shard-samples.
DIR/PREFIX.index.json, wids' shard list, is written last. cassette ingest reads the shards
back ('DIR/PREFIX-{000000..000009}.tar', or DIR).

Files are written under a temporary name and renamed: an interrupted export never leaves a
partial file under its final name. A re-run skips the files already there (shards: after
checking that they hold what this order puts there). labels.json (index.json) is written
last; until it exists the folder is not a complete export.

  --store URL          sqlite:PATH or cassandra://[user:pass@]host[,host…][:port]/KEYSPACE
  --dataset NAME       the dataset to export
  --out DIR            the folder (created if missing; may hold an earlier export of NAME),
                       or s3://BUCKET/PREFIX[?endpoint=URL&region=R&style=path|virtual&profile=P]:
                       each object one PUT (whole or absent), read back with --store s3://…;
                       credentials as for reading (AWS_ACCESS_KEY_ID…, ~/.aws/credentials)
  --create-bucket      make the s3:// bucket when it is missing (default: a missing bucket is an error)
  --split FILE[:INDEX|:NAME]   only that split's samples (default: the whole dataset)
  --format F           files (default) or webdataset
  --concurrency N      files written at once (default 16; files only)
 webdataset only:
  --seed N             the shuffle's seed (default: the split's seed, else 0)
  --shard-bytes N      most bytes per shard: N, or with kB MB GB (10^3) or KiB MiB GiB
                       (2^10); default ${DEFAULT_SHARD_BYTES / 1e6}MB
  --shard-samples N    most samples per shard (default: no limit)
  --prefix NAME        shard names' prefix (default: the dataset, -SPLIT with --split)
  --json               print { store, dataset, out, samples, written, existing, bytes,
                       seconds, labels } (webdataset: format, prefix, seed, shards: [{ name,
                       samples, bytes }], index) instead of the summary`;

export async function run(argv: string[]): Promise<number> {
  const { positional, options } = parseArgs(argv, "export", ["store", "dataset", "out", "split", "concurrency", "format", "seed", "shard-bytes", "shard-samples", "prefix"], ["create-bucket"]);
  if (options.has("help")) return void console.log(help), 0;
  if (positional.length) usageError("export", `takes no positional arguments: got '${positional[0]}'`);
  const json = options.has("json");
  const dataset = required(options, "export", "dataset");
  const out = required(options, "export", "out");
  const address = required(options, "export", "store");
  const format = String(options.get("format") ?? "files");
  if (format !== "files" && format !== "webdataset") usageError("export", `--format must be files or webdataset: current value is ${format}`);
  const shardOnly = ["seed", "shard-bytes", "shard-samples", "prefix"].filter((k) => options.has(k));
  if (format === "files" && shardOnly.length) usageError("export", `--${shardOnly[0]} is for --format webdataset`);
  if (format === "webdataset" && options.has("concurrency")) usageError("export", "--concurrency is for --format files");
  let ids: string[] | undefined;
  let split: { name: string; seed: number } | undefined;
  if (options.has("split")) {
    const { file, split: s } = await loadSplit(String(options.get("split")));
    if (file.dataset !== dataset) usageError("export", `the split file is for dataset '${file.dataset}', not '${dataset}'`);
    ids = s.ids;
    split = { name: s.name, seed: file.params?.seed ?? 0 };
  }
  if (options.has("create-bucket") && !out.startsWith("s3://")) usageError("export", "--create-bucket is for an s3:// --out");
  const s3 = { createBucket: options.has("create-bucket") };
  if (format === "webdataset") return runShards(options, { address, dataset, out, json, ids, split, s3 });
  const store = await openStore(address, { create: false });
  try {
    let bar: ReturnType<typeof progress> | undefined;
    const summary = await exportDataset(store, dataset, out, {
      ids,
      s3,
      concurrency: intOption(options, "export", "concurrency"),
      onProgress: (p) => {
        bar ??= progress("export", p.total, json);
        bar.update(p.done, `${p.written} written, ${(p.bytes / 1e6).toFixed(1)} MB`);
      },
    });
    bar?.done(`${summary.written} written`);
    if (json) console.log(JSON.stringify({ store: store.address, ...summary }));
    else {
      console.log(`dataset ${dataset} of ${store.address} → ${out}: ${summary.written} written, ${summary.existing} already there`);
      console.log(`  ${(summary.bytes / 1e6).toFixed(1)} MB in ${summary.seconds.toFixed(1)} s; ${objectPath(out, LABELS_FILE)} lists ${count(summary.labels, "sample")}`);
      console.log(out.startsWith("s3://") ? `  read it with --store ${out}` : `  read it with --store file:${out}, or serve ${out} and use --store http://HOST/PREFIX`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

/** `--format webdataset`: the shards, with progress, and the summary in text or --json. */
async function runShards(
  options: Map<string, string | true>,
  a: { address: string; dataset: string; out: string; json: boolean; ids?: string[]; split?: { name: string; seed: number }; s3: { createBucket: boolean } },
): Promise<number> {
  const bytesOpt = options.get("shard-bytes");
  const maxShardBytes = bytesOpt === undefined ? undefined : parseBytes(String(bytesOpt));
  if (bytesOpt !== undefined && maxShardBytes === undefined) usageError("export", `--shard-bytes must be a positive size such as 100000000 or 100MB: current value is ${bytesOpt}`);
  const maxSamples = intOption(options, "export", "shard-samples");
  if (maxSamples !== undefined && maxSamples < 1) usageError("export", `--shard-samples must be a positive integer: current value is ${maxSamples}`);
  const seed = intOption(options, "export", "seed") ?? a.split?.seed ?? 0;
  const prefix = (options.get("prefix") as string | undefined) ?? (a.split ? `${a.dataset}-${a.split.name}` : a.dataset);
  const store = await openStore(a.address, { create: false });
  let sink: Awaited<ReturnType<typeof openSink>> | undefined;
  try {
    sink = await openSink(a.out, a.s3);
    let bar: ReturnType<typeof progress> | undefined;
    const summary = await exportShards(store, a.dataset, sink, {
      ids: a.ids, seed, prefix, maxShardBytes, maxSamples,
      onProgress: (p) => {
        bar ??= progress("export", p.total, a.json);
        bar.update(p.done, `${p.written} written, ${count(p.shards, "shard")}, ${(p.bytes / 1e6).toFixed(1)} MB`);
      },
    });
    bar?.done(`${summary.written} written, ${count(summary.shards.length, "shard")}`);
    if (a.json) console.log(JSON.stringify({ store: store.address, ...summary }));
    else {
      const n = summary.shards.length;
      console.log(`dataset ${a.dataset} of ${store.address} → ${a.out}: ${count(summary.samples, "sample")} in ${count(n, "shard")} (seed ${seed}), ${summary.written} written now, ${summary.existing} already there`);
      console.log(`  ${(summary.bytes / 1e6).toFixed(1)} MB in ${summary.seconds.toFixed(1)} s; wids shard list ${objectPath(a.out, summary.index)}`);
      if (n) console.log(`  read it with webdataset: WebDataset("${objectPath(a.out, `${prefix}-{000000..${String(n - 1).padStart(6, "0")}}.tar`)}")`);
    }
    return 0;
  } finally {
    await sink?.close?.();
    await store.close();
  }
}
