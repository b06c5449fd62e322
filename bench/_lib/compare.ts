/**
 * Side-by-side comparison for benchmarks: every contender runs in the same process,
 * interleaved round by round so that noise on a shared machine hits all of them alike. Prints
 * a table sorted fastest first with the ratio to a named baseline and the spread.
 *
 *   const table = await compare("decode 224×224 q90", { rounds: 11, unit: "Mpx/s" }, [
 *     { name: "cassette", run: () => decodeAll(), work: megapixels },
 *     { name: "jpeg-js", run: () => jpegjsAll(), work: megapixels, baseline: true },
 *   ]);
 */
import { appendFileSync } from "node:fs";
import { runtime } from "../../runtime-adapters/index.ts";

/** When set, the file each printed table is appended to as one JSON line (bench/main.ts's summary). */
export const RECORD_ENV = "CASSETTE_BENCH_RECORD";

/** One printed table, as RECORD_ENV's file holds it. */
export interface TableRecord {
  title: string;
  unit: string;
  baseline: string;
  /** Fastest first, as printed. */
  rows: { name: string; best: number; ratio: number }[];
}

export interface Contender {
  name: string;
  /** One measured repetition. */
  run: () => unknown | Promise<unknown>;
  /** Before each repetition, warm-ups included, not timed (e.g. a fresh client). */
  before?: () => unknown | Promise<unknown>;
  /** Units of work one repetition does (images, megapixels, bytes…). */
  work: number;
  /** Ratios are given relative to this contender (default: the slowest). */
  baseline?: boolean;
}

export interface CompareOptions {
  /** Repetitions per contender (default 11); the best and the median are reported. */
  rounds?: number;
  /** Unwarmed repetitions before measuring (default 1). */
  warmup?: number;
  /** What `work / seconds` is called, e.g. "Mpx/s". */
  unit: string;
}

export interface Row {
  name: string;
  /** work/s of the fastest round. */
  best: number;
  /** work/s of the median round. */
  median: number;
  /** (slowest − fastest) / fastest round time. */
  spread: number;
  /** best / baseline's best. */
  ratio: number;
}

export async function compare(title: string, opts: CompareOptions, contenders: Contender[]): Promise<Row[]> {
  const rounds = opts.rounds ?? 11;
  const times = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let w = 0; w < (opts.warmup ?? 1); w++) for (const c of contenders) await c.before?.(), await c.run();
  for (let r = 0; r < rounds; r++) {
    for (const c of contenders) {
      await c.before?.();
      const t0 = runtime.now();
      await c.run();
      times.get(c.name)!.push((runtime.now() - t0) / 1000);
    }
  }
  const rows = contenders.map((c) => {
    const t = times.get(c.name)!.slice().sort((a, b) => a - b);
    return { name: c.name, best: c.work / t[0], median: c.work / t[t.length >> 1], spread: (t[t.length - 1] - t[0]) / t[0], ratio: 0 };
  });
  const base = rows[contenders.findIndex((c) => c.baseline)] ?? rows.reduce((a, b) => (a.best < b.best ? a : b));
  for (const r of rows) r.ratio = r.best / base.best;
  rows.sort((a, b) => b.best - a.best);
  printTable(title, opts.unit, rows, base.name, rounds);
  return rows;
}

export function printTable(title: string, unit: string, rows: Row[], baseline: string, rounds: number): void {
  console.log(`\n${title}  (${rounds} rounds, interleaved; ratio vs ${baseline})`);
  const file = runtime.env(RECORD_ENV);
  if (file) {
    const rec: TableRecord = { title, unit, baseline, rows: rows.map((r) => ({ name: r.name, best: r.best, ratio: r.ratio })) };
    appendFileSync(file, JSON.stringify(rec) + "\n");
  }
  const w = Math.max(...rows.map((r) => r.name.length), 10);
  console.log(`  ${"".padEnd(w)}  ${`best ${unit}`.padStart(14)}  ${`median`.padStart(10)}  ${"spread".padStart(7)}  ${"ratio".padStart(7)}`);
  for (const r of rows) {
    console.log(
      `  ${r.name.padEnd(w)}  ${fmt(r.best).padStart(14)}  ${fmt(r.median).padStart(10)}  ${(r.spread * 100).toFixed(0).padStart(6)}%  ${r.ratio.toFixed(2).padStart(6)}×`,
    );
  }
}

function fmt(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}
