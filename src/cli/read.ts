/** `cassette read`: the tight loop — read a split as fast as the loader can, report figures. */
import { Loader } from "../loader.ts";
import { loadSplit } from "../dataset/splits.ts";
import { datasetNeeded, open } from "../read/open.ts";
import type { ReadSource } from "../read/sample.ts";
import { redact } from "../source/address.ts";
import { progress } from "../observe/progress.ts";
import { runtime } from "../../runtime-adapters/index.ts";
import { CassetteError } from "../errors.ts";
import { intOption, parseArgs, required, usageError } from "./args.ts";

export const help = `usage: cassette read --store URL [--dataset NAME] [--split FILE[:INDEX|:NAME]] [options]

Reads every sample of the split (default: every sample the store lists) through the loader,
with no decoding unless --decode, and reports MB/s, images/s and batch-time percentiles.

  --store URL          sqlite:PATH, cassandra://HOST/KEYSPACE, http(s)://HOST/PREFIX or file:DIR
                       (the last two: a folder written by cassette export)
  --dataset NAME       needed for sqlite: and cassandra://; for http(s):// and file: the
                       export's labels.json names it (checked when given)
  --split FILE[:INDEX|:NAME]  the ids to read (default: the store's scan, or labels.json)
  --batch B            samples per batch (default 128)
  --prefetch K|auto    batches of requests in flight once ramped up (default auto: start
                       at 8 and deepen while the reader starves and depth pays)
  --order ready|strict ready (default): batches from whatever arrived; strict: plan order
  --epochs E           epochs to read (default 1); each epoch's tail already requests the
                       next one's first samples (one window in all)
  --seed S             shuffle seed (default 0)
  --rank R --world-size W   read rank R's shard of W
  --on-error throw|skip     after retries: stop (default) or skip and count
  --balance rate|driver  cassandra://: send each request where it should finish first (rate,
                       default) or leave the choice to the driver
  --hedge              re-ask for samples slower than the recent p95 latency × 2 (at most 5 %
                       of requests); the first answer wins
  --workers N          read in N worker threads, each with its own connections (default 0: in
                       the loader's thread)
  --decode             decode every JPEG as it arrives (in its read worker with --workers)
  --decode-workers N   with --decode and no --workers: read here, decode in N decode workers
  --grey               with --decode: one channel out (a colour file's luma, as djpeg
                       -grayscale; its chroma is not transformed)
  --json               print { samples, bytes, seconds, samplesPerSec, mbPerSec,
                       batchMs: { p50, p99, max }, errors, hedged, hedgeWins, … }`;

export async function run(argv: string[]): Promise<number> {
  const { options } = parseArgs(argv, "read", ["store", "dataset", "split", "batch", "prefetch", "order", "epochs", "seed", "rank", "world-size", "on-error", "balance", "workers", "decode-workers"], ["hedge", "decode", "grey"]);
  if (options.has("help")) return void console.log(help), 0;
  const json = options.has("json");
  const decode = options.has("decode"), grey = options.has("grey");
  if (grey && !decode) usageError("read", "--grey needs --decode");
  const address = required(options, "read", "store");
  let dataset = options.get("dataset") as string | undefined;
  const why = datasetNeeded(address, dataset);
  if (why) usageError("read", `needs --dataset: ${why}`);
  const order = (options.get("order") ?? "ready") as "ready" | "strict";
  if (order !== "ready" && order !== "strict") usageError("read", `--order must be ready or strict: current value is ${order}`);
  const onError = (options.get("on-error") ?? "throw") as "throw" | "skip";
  const balance = (options.get("balance") ?? "rate") as "rate" | "driver";
  if (balance !== "rate" && balance !== "driver") usageError("read", `--balance must be rate or driver: current value is ${balance}`);
  const prefetch = options.get("prefetch") === "auto" ? "auto" : intOption(options, "read", "prefetch");
  const split = options.has("split") ? await loadSplit(String(options.get("split"))) : undefined;
  const source: ReadSource = await open(address, { mode: "read", dataset, balance });
  let closeSource = true;
  try {
    dataset ??= source.dataset;
    let ids: string[];
    if (split) {
      if (dataset !== undefined && split.file.dataset !== dataset) usageError("read", `the split file is for dataset '${split.file.dataset}', not '${dataset}'`);
      ids = split.split.ids;
    } else if (source.ids) ids = await source.ids();
    else {
      throw new CassetteError("ERR_INVALID_OPTION", `Cannot read from ${redact(address)} without sample ids as it cannot list them: pass --split FILE (see cassette read --help)`);
    }
    const epochs = intOption(options, "read", "epochs") ?? 1;
    const workers = intOption(options, "read", "workers") ?? 0;
    if (workers > 0) {
      closeSource = false;
      await source.close(); // it listed the ids; each worker opens its own
    }
    const loader = new Loader({
      store: workers > 0 ? address : source, dataset, workers, decode: decode && { grey }, ids, order, onError,
      decodeWorkers: intOption(options, "read", "decode-workers"),
      batchSize: intOption(options, "read", "batch") ?? 128,
      prefetch,
      seed: intOption(options, "read", "seed"),
      rank: intOption(options, "read", "rank"),
      worldSize: intOption(options, "read", "world-size"),
      hedge: options.has("hedge"),
      reaskTail: true,
    });
    closeSource = false; // the loader closes it
    const t0 = runtime.now();
    try {
      for (let e = 0; e < epochs; e++) {
        const bar = progress(`epoch ${e}`, Math.ceil(ids.length / ((loader.options.worldSize ?? 1))), json);
        let n = 0;
        for await (const b of loader.epoch(e, { readAhead: e + 1 < epochs })) bar.update((n += b.ids.length), `${(loader.stats().mbPerSec).toFixed(1)} MB/s`);
        bar.done();
      }
    } finally {
      await loader.close();
    }
    const s = loader.stats();
    const report = {
      store: redact(address), dataset: dataset ?? null, order, epochs, samples: s.samples, bytes: s.bytes,
      seconds: (runtime.now() - t0) / 1000, samplesPerSec: s.samplesPerSec, mbPerSec: s.mbPerSec,
      batchMs: s.batchMs, errors: s.errors, retries: s.retries, duplicates: s.duplicates, maxOutstanding: s.maxOutstanding,
      hedged: s.hedged, hedgeWins: s.hedgeWins, prefetch: s.prefetch, readAhead: s.readAhead,
      workers, decode, grey,
    };
    if (json) console.log(JSON.stringify(report));
    else {
      console.log(`read ${s.samples} samples, ${(s.bytes / 1e6).toFixed(1)} MB in ${report.seconds.toFixed(2)} s (${order} order)`);
      console.log(`  ${s.samplesPerSec.toFixed(0)} samples/s, ${s.mbPerSec.toFixed(1)} MB/s`);
      console.log(`  batch time p50 ${s.batchMs.p50.toFixed(1)} ms, p99 ${s.batchMs.p99.toFixed(1)} ms, max ${s.batchMs.max.toFixed(1)} ms`);
      console.log(`  errors ${s.errors}, retries ${s.retries}, most samples outstanding ${s.maxOutstanding}`);
      if (options.has("hedge")) console.log(`  hedged ${s.hedged} requests, the hedge answered first ${s.hedgeWins} times`);
    }
    return s.errors ? 1 : 0;
  } finally {
    if (closeSource) await source.close();
  }
}
