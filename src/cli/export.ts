/**
 * `cassette export --store URL --dataset NAME --out DIR`: a dataset (or one split of it) as a
 * folder of objects, DIR/<id> plus DIR/labels.json (the layout in src/source/file.ts), which
 * `file:DIR` reads in place and any static web server serves as `http(s)://HOST/PREFIX`.
 *
 * Each file is written under a temporary name (`.cassette-part-…`, never an id) and renamed,
 * so an interrupted export leaves no partial file under a final name; a re-run skips the
 * files already there. labels.json is written last, the same way: its presence marks a
 * complete export. One export at a time per folder (a run removes the parts it finds).
 */
import { mkdir, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { loadSplit } from "../dataset/splits.ts";
import { progress } from "../observe/progress.ts";
import { formatLabels, isObjectName, LABELS_FILE, parseLabels, PART_PREFIX } from "../source/file.ts";
import { mapLimit } from "../util/map_limit.ts";
import { openStore } from "../source/open.ts";
import type { Store } from "../dataset/store.ts";
import { intOption, parseArgs, required, usageError } from "./args.ts";

export const help = `usage: cassette export --store URL --dataset NAME --out DIR [--split FILE[:INDEX|:NAME]] [options]

Writes each sample of the dataset (or of one split) as DIR/<id>, its bytes exactly as stored,
and the labels as DIR/labels.json. Read the folder in place with --store file:DIR, or serve it
with any static web server and read it with --store http://HOST/PREFIX (objects at PREFIX/<id>).

Files are written under a temporary name and renamed: an interrupted export never leaves a
partial file under its final name, and a re-run skips the files already there. labels.json
is written last; until it exists the folder is not a readable store.

  --store URL          sqlite:PATH or cassandra://[user:pass@]host[,host…][:port]/KEYSPACE
  --dataset NAME       the dataset to export
  --out DIR            the folder (created if missing; may hold an earlier export of NAME)
  --split FILE[:INDEX|:NAME]   only that split's samples (default: the whole dataset)
  --concurrency N      files written at once (default 16)
  --json               print { store, dataset, out, samples, written, existing, bytes,
                       seconds, labels } instead of the summary`;

export interface ExportOptions {
  /** Only these ids (default: every sample of the dataset). */
  ids?: readonly string[];
  /** Files written at once (default 16). */
  concurrency?: number;
  onProgress?: (p: { done: number; total: number; written: number; bytes: number }) => void;
}

export interface ExportSummary {
  dataset: string;
  out: string;
  /** Samples of this export (written now or already there). */
  samples: number;
  written: number;
  existing: number;
  /** Bytes written now. */
  bytes: number;
  seconds: number;
  /** Labels in labels.json (this export's and an earlier one's into the same folder). */
  labels: number;
}

/** Samples read from the store per request. */
const CHUNK = 64;

/** Writes `ids` (default: all) of `dataset` into `dir`; resumable, see the file's doc. */
export async function exportDataset(store: Store, dataset: string, dir: string, o: ExportOptions = {}): Promise<ExportSummary> {
  const t0 = runtime.now();
  const concurrency = o.concurrency ?? 16;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new CassetteError("ERR_INVALID_OPTION", `Cannot export as 'concurrency' must be a positive integer: current value is ${concurrency}`);
  }
  await store.getDataset(dataset); // names the datasets that exist when it does not
  const labels = new Map<string, number>();
  for await (const page of store.scanNat(dataset)) for (const r of page) labels.set(r.id, r.label);
  const ids = o.ids ? [...new Set(o.ids)] : [...labels.keys()];
  for (const id of ids) {
    if (!labels.has(id)) throw new CassetteError("ERR_INVALID_OPTION", `Cannot export sample ${id} as it is not in dataset '${dataset}' of ${store.address}`);
    if (!isObjectName(id)) throw new CassetteError("ERR_UNSUPPORTED", `Cannot export sample ${id} as its id is not a file name (a letter or digit, then letters, digits, . _ -)`);
  }

  await mkdir(dir, { recursive: true });
  const labelsPath = join(dir, LABELS_FILE);
  const all = new Map<string, number>();
  const earlier = await readFile(labelsPath, "utf8").catch((e) => (e?.code === "ENOENT" ? undefined : Promise.reject(e)));
  if (earlier !== undefined) {
    const prev = parseLabels(earlier, labelsPath);
    if (prev.dataset !== dataset) {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot export dataset '${dataset}' to ${dir} as it holds an export of dataset '${prev.dataset}': choose another --out`);
    }
    for (const [id, l] of prev.labels) all.set(id, l);
  }
  const names = new Set(await readdir(dir));
  // Parts left by an interrupted run: never renamed, so never complete.
  await Promise.all([...names].filter((n) => n.startsWith(PART_PREFIX)).map((n) => rm(join(dir, n), { force: true })));
  const todo = ids.filter((id) => !names.has(id));
  const existing = ids.length - todo.length;

  let written = 0, bytes = 0, done = existing;
  o.onProgress?.({ done, total: ids.length, written, bytes });
  const chunks: string[][] = [];
  for (let i = 0; i < todo.length; i += CHUNK) chunks.push(todo.slice(i, i + CHUNK));
  // A few chunks in flight keeps the store busy while files are written; each chunk's files
  // are written at most `concurrency` at once overall.
  const perChunk = Math.max(1, Math.ceil(concurrency / 4));
  await mapLimit(chunks, Math.min(4, concurrency), async (chunk) => {
    const samples = await store.get(dataset, chunk);
    await mapLimit(samples, perChunk, async (s) => {
      await writeAtomic(dir, s.id, s.data);
      written++;
      bytes += s.data.length;
      o.onProgress?.({ done: ++done, total: ids.length, written, bytes });
    });
  });

  for (const id of ids) all.set(id, labels.get(id)!);
  await writeAtomic(dir, LABELS_FILE, new TextEncoder().encode(formatLabels(dataset, all)));
  return { dataset, out: dir, samples: ids.length, written, existing, bytes, seconds: (runtime.now() - t0) / 1000, labels: all.size };
}

/** Writes `data` as DIR/name through a temporary name and a rename. */
async function writeAtomic(dir: string, name: string, data: Uint8Array): Promise<void> {
  const part = join(dir, `${PART_PREFIX}${name}-${Math.random().toString(36).slice(2, 10)}`);
  try {
    await runtime.writeFile(part, data);
    await rename(part, join(dir, name));
  } catch (e) {
    await rm(part, { force: true }).catch(() => {});
    throw new CassetteError("ERR_RUNTIME", `Cannot write ${join(dir, name)}: ${(e as Error).message}`, { cause: e });
  }
}

export async function run(argv: string[]): Promise<number> {
  const { positional, options } = parseArgs(argv, "export", ["store", "dataset", "out", "split", "concurrency"]);
  if (options.has("help")) return void console.log(help), 0;
  if (positional.length) usageError("export", `takes no positional arguments: got '${positional[0]}'`);
  const json = options.has("json");
  const dataset = required(options, "export", "dataset");
  const out = required(options, "export", "out");
  const address = required(options, "export", "store");
  let ids: string[] | undefined;
  if (options.has("split")) {
    const { file, split } = await loadSplit(String(options.get("split")));
    if (file.dataset !== dataset) usageError("export", `the split file is for dataset '${file.dataset}', not '${dataset}'`);
    ids = split.ids;
  }
  const store = await openStore(address, { create: false });
  try {
    let bar: ReturnType<typeof progress> | undefined;
    const summary = await exportDataset(store, dataset, out, {
      ids,
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
      console.log(`  ${(summary.bytes / 1e6).toFixed(1)} MB in ${summary.seconds.toFixed(1)} s; ${join(out, LABELS_FILE)} lists ${summary.labels} samples`);
      console.log(`  read it with --store file:${out}, or serve ${out} and use --store http://HOST/PREFIX`);
    }
    return 0;
  } finally {
    await store.close();
  }
}
