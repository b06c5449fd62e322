/** `cassette splits`: train/val/test splits from a dataset's metadata, saved as a split file. */
import { createFolds, createSplits, formatSplits, saveSplits } from "../dataset/splits.ts";
import type { NatRow } from "../dataset/store.ts";
import { labelClasses } from "../dataset/label.ts";
import { openStore } from "../source/open.ts";
import { intOption, listOption, parseArgs, required, usageError } from "./args.ts";
import { count } from "../util/plural.ts";

export const help = `usage: cassette splits --store URL --dataset NAME --ratios 7,2,1 --out FILE [options]
       cassette splits --store URL --dataset NAME --folds K --out FILE [--group-by COL,…] [--seed S]

Builds splits from the dataset's metadata: groups (--group-by) never straddle two splits,
ratios and class balance are met approximately, rows are taken round-robin across groups.

  --ratios R1,R2,…      relative split sizes
  --folds K             k-fold cross-validation instead: K splits fold0…, every sample in
                        exactly one, classes spread as in the data, groups kept whole; round i
                        validates on FILE:fold<i> and trains on FILE:!fold<i> (every other fold)
  --names N1,N2,…       split names (default train,test | train,val,test | split0…)
  --group-by COL,…      columns whose values form a group (e.g. patient_id)
  --balance B           data (as in the data, default) | equal | W1,W2,… (one weight per label)
  --max N               total samples over all splits
  --seed S              seed (default 0): the same seed gives the same splits
  --out FILE            where to write the split file (JSON, version 1)
  --json                print { "out", "splits": [ { "name", "count", "groups", "counts" } ] }`;

export async function run(argv: string[]): Promise<number> {
  const { options } = parseArgs(argv, "splits", ["store", "dataset", "ratios", "folds", "names", "group-by", "balance", "max", "seed", "out"]);
  if (options.has("help")) return void console.log(help), 0;
  const out = required(options, "splits", "out");
  const folds = intOption(options, "splits", "folds");
  if (folds !== undefined) {
    // Every sample in exactly one fold: nothing may be left out or weighed.
    for (const o of ["ratios", "names", "balance", "max"]) if (options.has(o)) usageError("splits", `--folds makes K equal folds of every sample: it takes no --${o}`);
  }
  const ratios = folds !== undefined ? [] : (listOption(options, "ratios") ?? usageError("splits", "needs --ratios, e.g. --ratios 7,2,1 (or --folds K)")).map(Number);
  const b = options.get("balance") as string | undefined;
  const balance = b === undefined || b === "data" || b === "equal" ? (b as "data" | "equal" | undefined) : b.split(",").map(Number);
  const store = await openStore(required(options, "splits", "store"), { create: false });
  try {
    const spec = await store.getDataset(required(options, "splits", "dataset"));
    const rows: NatRow[] = [];
    for await (const page of store.scanNat(spec.name)) rows.push(...page);
    const file = folds !== undefined
      ? createFolds(spec, rows, { folds, groupBy: listOption(options, "group-by"), seed: intOption(options, "splits", "seed") })
      : createSplits(spec, rows, {
        ratios,
        names: listOption(options, "names"),
        groupBy: listOption(options, "group-by"),
        balance,
        max: intOption(options, "splits", "max"),
        seed: intOption(options, "splits", "seed"),
      });
    await saveSplits(out, file);
    // Samples in no split: those a balance or --max left out. Said every time, never silently.
    const leftOut = rows.length - file.splits.reduce((n, s) => n + s.ids.length, 0);
    if (options.has("json")) {
      console.log(JSON.stringify({
        out, dataset: spec.name, params: file.params, samples: rows.length, leftOut,
        splits: file.splits.map((s) => ({ name: s.name, count: s.ids.length, groups: s.groups.length, counts: s.counts })),
      }));
    } else {
      console.log(formatSplits(file, labelClasses(spec.label)));
      const why = [b !== undefined && b !== "data" ? `--balance ${b}` : "", options.has("max") ? "--max" : ""].filter(Boolean).join(" and ");
      console.log(leftOut ? `left out: ${leftOut} of ${count(rows.length, "sample")}${why ? ` (${why})` : ""}` : `every one of the ${rows.length} samples is in a split`);
      console.log(`wrote ${out}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}
