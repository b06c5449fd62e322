/**
 * Does out-of-order assembly hurt learning? (MINATOLoader §5.6 makes the same check.) The same
 * model trained from Cassandra through the TCP proxy with jitter — so that ready order really
 * reorders samples across batches — in ready order and in strict order, over several seeds,
 * runs interleaved. Prints test accuracy per epoch, mean ± sd over seeds for each order, the
 * difference, and the share of samples ready order moved to another batch than the plan's.
 *
 *   bun bench/train_order.bench.ts [--model mlp] [--epochs 5] [--seeds 3] [--first-seed 0] [--limit N]
 *                                  [--latency-ms 10] [--jitter-ms 10] [--prefetch K] [--strict-no-io]
 *                                  [--store URL] [--quick] [--json]
 *
 * A slow consumer (the cnn on lavapipe) finds most samples in long before it asks, so ready
 * order barely reorders at 10 ± 10 ms; a fixed shallow window and more jitter make it
 * (--latency-ms 200 --jitter-ms 200 --prefetch 4: about a third of the samples move batch).
 * --strict-no-io runs strict order as train.ts --no-io, which trains exactly as the loader-fed
 * strict run (the same permutation and pixels: test/e2e/train.test.ts holds their losses equal)
 * without its waiting.
 *
 * --transform MODULE [--transform-options JSON] runs a transform module on every training
 * sample in the decode pool (train.ts --transform): with a heavy-tailed one (bench/minato's
 * spin: one sample in ten costs 20–60 ms of CPU) ready order's slow lane sends the slow samples
 * to later batches, and this compares its accuracy with strict order's (MINATOLoader §5.6):
 *
 *   bun bench/train_order.bench.ts --store sqlite:data/fashion-mnist.sqlite --latency-ms 0 --jitter-ms 0 \
 *     --limit 4096 --batch 32 --transform test/fixtures/transforms/spin.ts \
 *     --transform-options '{"keepImage":true,"fastMs":0.2,"slowMs":[20,60],"slowShare":0.1}'
 */
import { ensureStore, runTrain, type TrainEpoch } from "./_lib/train_run.ts";
import { benchArgs } from "./_lib/args.ts";

const args = benchArgs({
  program: "bench/train_order.bench.ts",
  usage: "usage: bun bench/train_order.bench.ts [--model mlp] [--epochs E] [--seeds S] [--first-seed F] [--limit N] [--latency-ms MS] [--jitter-ms J] [--prefetch K] [--strict-no-io] [--store URL] [--batch B] [--transform MODULE [--transform-options JSON]] [--quick] [--json]",
  valued: ["model", "epochs", "seeds", "first-seed", "limit", "store", "latency-ms", "jitter-ms", "prefetch", "batch", "transform", "transform-options"],
  flags: ["strict-no-io", "quick"],
});
const quick = args.has("quick");
const json = args.has("json");
const model = args.str("model", "mlp");
const epochs = args.int("epochs", quick ? 2 : 5);
const seeds = args.int("seeds", quick ? 2 : 3);
// Long comparisons (the cnn over 10 epochs: ~25 min a run on lavapipe) can be split over sessions.
const firstSeed = args.int("first-seed", 0, 0);
// Passed on to train.ts as given (it checks them); "" is not given.
const limit = args.str("limit", quick ? "4096" : "");
const store = args.str("store", "cassandra://127.0.0.1:9042/cassette_bench?connections=4");
await ensureStore(store);
const latency = args.str("latency-ms", "10"), jitter = args.str("jitter-ms", "10");
const prefetch = args.str("prefetch", "");
const strictNoIo = args.has("strict-no-io");
const batch = args.str("batch", "");
const transform = args.str("transform", "");
const transformOptions = args.str("transform-options", "");
if (transformOptions && !transform) args.fail("'--transform-options' needs --transform");
if (transform && strictNoIo) args.fail("'--transform' needs the loader in both orders: drop --strict-no-io");
// Passed to train.ts as given, in both orders (it names a bad module or JSON).
const extra = [...(batch ? ["--batch", batch] : []), ...(transform ? ["--transform", transform] : []), ...(transformOptions ? ["--transform-options", transformOptions] : [])];
const log = (s: string) => json || console.log(s);

log(`${model}, ${epochs} epochs, seeds ${firstSeed}…${firstSeed + seeds - 1}, ${limit || "all"} training images, ${store} through the proxy at ${latency} ± ${jitter} ms each way` +
  `${prefetch ? `, window ${prefetch} batches` : ""}${strictNoIo ? "; strict order as --no-io" : ""}` +
  `${batch ? `, batch ${batch}` : ""}${transform ? `, transform ${transform} ${transformOptions}` : ""}`);
const runs: Record<string, TrainEpoch[][]> = { ready: [], strict: [] };
for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
  for (const order of ["ready", "strict"]) {
    const io = order === "strict" && strictNoIo ? ["--no-io"] : ["--order", order, "--latency-ms", latency, "--jitter-ms", jitter, ...(prefetch ? ["--prefetch", prefetch] : [])];
    const r = runTrain(["--store", store, "--model", model, "--epochs", String(epochs), "--seed", String(seed), ...io,
      "--out", `.tmp/bench-train-order/${model}-${order}-${seed}`, ...(limit ? ["--limit", limit] : []), ...extra]);
    runs[order].push(r.epochs);
    const last = r.epochs.at(-1)!;
    const prep = (r.loader as { prepare?: { slowLane?: number; thresholdMs?: number } } | undefined)?.prepare;
    log(`  seed ${seed} ${order.padEnd(6)}: test accuracy ${r.epochs.map((e) => (100 * e.testAccuracy).toFixed(2)).join(" → ")} %` +
      ` · ${(r.epochs.reduce((a, e) => a + e.imagesPerSec, 0) / r.epochs.length).toFixed(0)} img/s` +
      ` · ${(100 * (r.epochs.reduce((a, e) => a + (e.outOfPlanShare ?? 0), 0) / r.epochs.length)).toFixed(0)} % of samples out of plan` +
      ` · loss ${last.loss.toFixed(4)}` +
      (prep?.slowLane !== undefined ? ` · slow lane ${prep.slowLane} (deadline ${prep.thresholdMs?.toFixed(1)} ms)` : ""));
  }
}
const stats = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return { mean: m, sd: Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / Math.max(1, xs.length - 1)) };
};
const summary: Record<string, unknown> = {};
log(`\nfinal test accuracy over ${seeds} seeds (epoch ${epochs}):`);
for (const order of ["ready", "strict"]) {
  const acc = stats(runs[order].map((e) => e.at(-1)!.testAccuracy));
  const out = stats(runs[order].map((e) => e.reduce((a, x) => a + (x.outOfPlanShare ?? 0), 0) / e.length));
  summary[order] = { testAccuracy: acc, outOfPlanShare: out.mean };
  log(`  ${order.padEnd(6)} ${(100 * acc.mean).toFixed(2)} ± ${(100 * acc.sd).toFixed(2)} %   (samples out of plan: ${(100 * out.mean).toFixed(0)} %)`);
}
const d = (summary.ready as { testAccuracy: { mean: number } }).testAccuracy.mean - (summary.strict as { testAccuracy: { mean: number } }).testAccuracy.mean;
log(`  ready − strict: ${(100 * d).toFixed(2)} points`);
if (json) console.log(JSON.stringify({ model, epochs, seeds, firstSeed, limit: limit || "all", store, latencyMs: latency, jitterMs: jitter, prefetch: prefetch || "auto", strictNoIo, batch: batch || "default", transform: transform || undefined, transformOptions: transformOptions || undefined, summary, runs }));
