/** `cassette info --store URL [--dataset NAME]`: datasets, counts per label, bytes. */
import { openStore } from "../source/open.ts";
import { labelClasses } from "../dataset/label.ts";
import { parseArgs, required } from "./args.ts";
import { count } from "../util/plural.ts";

export const help = `usage: cassette info --store URL [--dataset NAME] [--json]

Lists the datasets of a store with their sample counts per label and bytes.
  --json   print { "store", "datasets": [ { "name", "count", "bytes", "perLabel", "spec" } ] }`;

export async function run(argv: string[]): Promise<number> {
  const { options } = parseArgs(argv, "info", ["store", "dataset"]);
  if (options.has("help")) return void console.log(help), 0;
  const store = await openStore(required(options, "info", "store"), { create: false });
  try {
    const only = options.get("dataset") as string | undefined;
    const names = only ? [(await store.getDataset(only)).name] : (await store.listDatasets()).map((d) => d.name);
    const datasets = [];
    for (const name of names) {
      const i = await store.info(name);
      datasets.push({ name, count: i.count, bytes: i.bytes, perLabel: i.perLabel, spec: i.spec });
    }
    if (options.has("json")) console.log(JSON.stringify({ store: store.address, datasets }));
    else {
      if (datasets.length === 0) console.log(`${store.address}: no datasets (cassette ingest …)`);
      for (const d of datasets) {
        console.log(`${d.name}: ${count(d.count, "sample")}, ${(d.bytes / 1e6).toFixed(1)} MB (${store.address})`);
        console.log(`  columns: ${d.spec.columns.map((c) => `${c.name}:${c.type}`).join(", ") || "none"}${d.spec.groupBy.length ? `; grouped by ${d.spec.groupBy.join(",")}` : ""}`);
        for (const [l, n] of Object.entries(d.perLabel)) console.log(`  ${String(l).padStart(4)} ${(labelClasses(d.spec.label)?.[Number(l)] ?? "").padEnd(14)} ${n}`);
      }
    }
    return 0;
  } finally {
    await store.close();
  }
}
