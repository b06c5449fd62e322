/**
 * bun run train.ts — the main job: train a small model on Fashion-MNIST (or any dataset in a
 * store) with the whole flow of a sample in the loop.
 *
 *   store ─► Loader (out-of-order prefetch, exactly once) ─► wasm JPEG decode (its transform)
 *         ─► GPU preprocess (resize + normalize, WGSL) ─► training step (WGSL) ─► eval on test
 *
 * First run: Fashion-MNIST is ingested from Debian's idx files into the embedded SQLite store
 * (the default store is the only one train.ts makes). `--no-io` trains on the same decoded pixels
 * held on the GPU: the upper bound of the loader-fed run. Each epoch appends a line to
 * metrics.jsonl and redraws the plots in the run's folder from those lines, so a run cut short
 * keeps every finished epoch.
 *
 * Run it with `bun run train.ts`, `deno task train` or `node train.ts` (Node ≥ 22.18, which
 * runs TypeScript; the kernels' loader hooks are registered below).
 */
import { appendFileSync } from "node:fs";
import { appendFile, mkdir, writeFile } from "node:fs/promises";
import process from "node:process";
import { runtime } from "./runtime-adapters/index.ts";
import { CassetteError } from "./src/errors.ts";
import { count } from "./src/util/plural.ts";
import { stopOnCtrlC } from "./src/util/ctrl_c.ts";
import { openStore } from "./src/source/open.ts";
import type { Store } from "./src/dataset/store.ts";
import type { Sample } from "./src/read/sample.ts";
import { readWorkers } from "./src/read/worker_source.ts";
import { redact } from "./src/source/address.ts";
import { parseStoreAddress } from "./src/source/kinds.ts";
import { ingest } from "./src/dataset/ingest.ts";
import { loadSplit, loadSplits, type Split, type SplitFile } from "./src/dataset/splits.ts";
import { progress } from "./src/observe/progress.ts";
import { lineChart } from "./src/observe/svg.ts";
import { Loader } from "./src/loader.ts";
import { deviceInfo, requestDevice } from "./src/gpu/device.ts";
import type { Sequential, TrainBatch } from "./src/train/model.ts";
import type { AugmentOptions } from "./src/decode/augment.ts";
import { carried, type EpochCarry, fit, type EpochReport } from "./src/train/fit.ts";
import { loaderBatches, type LoaderTrainBatch, pixelsOf } from "./src/train/loader_batches.ts";
import { epochPlan } from "./src/plan/epoch.ts";
import { FASHION_MNIST_MEAN, FASHION_MNIST_STD } from "./src/dataset/fashion_mnist.ts";
import { startProxyProcess, type ProxyProcess } from "./tools/proxy/process.ts";
import { optionalValue, parseArgs } from "./src/cli/args.ts";
import { interrupted as ingestInterrupted } from "./src/cli/ingest.ts";
import { type Dashboard, type DashboardFrame, frameFromStats, startDashboard } from "./src/observe/dashboard.ts";

// The modules below import WGSL kernels as text, which Node does only through the loader hooks
// of runtime-adapters/node_hooks.mjs. `node train.ts` has not registered them (`node --import
// …/node_hooks.mjs`, as the tests run it, has): register them now, then import those modules.
// Static imports would load before this line runs, hence `await import`.
if (runtime.name === "node") await import("./runtime-adapters/node_hooks.mjs");
const { createPreprocessor } = await import("./src/gpu/preprocess.ts");
const { parseAugment } = await import("./src/decode/augment.ts");
const { createModel } = await import("./src/train/model.ts");
const { inputNormalization } = await import("./src/train/predict.ts");
const { MODELS } = await import("./src/train/models.ts");
const { GpuDataset } = await import("./src/train/gpu_dataset.ts");
const { readCheckpoint, restoreCheckpoint, saveCheckpoint, CHECKPOINT_FILE } = await import("./src/train/checkpoint.ts");
type Checkpoint = Awaited<ReturnType<typeof readCheckpoint>>;

const DEFAULT_STORE = "sqlite:data/fashion-mnist.sqlite";
/** Steps between checkpoints: on a GPU a few seconds of training, and a checkpoint of the default models costs milliseconds. */
const DEFAULT_EVERY = 200;

const HELP = `usage: bun run train.ts [options]   (or: deno task train …, node train.ts …)

Trains a small model from a store with the loader, the wasm JPEG decoder and GPU
preprocessing in the loop, evaluates on the test split after every epoch, and writes
metrics.jsonl (a line per epoch, each step's loss included) and four plots into the run's
folder: loss.svg and accuracy.svg per epoch, steps.svg (the loss of every step) and
throughput.svg (images/s and the share of time spent waiting for data, per epoch).

Defaults depend on the adapter: on a CPU driver (lavapipe/llvmpipe, SwiftShader) --model mlp
--epochs 3; on a GPU --model cnn --epochs 10. --workers comes from the cores on every adapter:
max(2, min(8, cores − 2)), sized as reading goes on more than 4 cores (none with --transform).
Explicit options always win. Every epoch
trains on every training sample: the last batch is short when the batch size does not divide
them (the model line says its size).

  --store ADDRESS     sqlite:PATH or cassandra://…/KEYSPACE (default ${DEFAULT_STORE}, the only
                      store train.ts makes: another must exist, e.g. made by cassette ingest)
  --dataset NAME      the dataset in the store (default fashion-mnist, which train.ts ingests from
                      --idx when the store lacks it; any other dataset must be in the store)
  --idx PREFIX        Fashion-MNIST idx files (default /usr/share/datasets/fashion-mnist/)
  --split FILE[:INDEX|:NAME]  a split file (cassette splits): trains on the split named (else on
                      "train", else the first) and tests on "test" (else the last) when that
                      is another split; default: the idx files' train / t10k
  --model NAME        ${Object.keys(MODELS).join(", ")}
  --epochs E          epochs to train
  --batch B           images per training step (default 128)
  --lr LR             Adam's learning rate (default 0.001)
  --augment POLICY    augment the training samples (never the test split's) in the GPU
                      preprocessing pass, drawn per sample from (--seed, epoch, sample id):
                      comma-separated terms of trivial (TrivialAugment), brightness|contrast|
                      saturation|hue=V or LO:HI (ColorJitter), jitter=V, solarize=P,
                      posterize=P, erase=P (RandomErasing), rotate=D, degrees=D, translate=F,
                      scale=LO:HI, shear=S (RandomAffine), fill=V, blur=K, mixup[=A] and
                      cutmix[=A] (once a batch, Beta(A, A); the loss takes the mixed labels),
                      or photos (trivial,erase=0.25); see cassette read --help. Default: none
  --seed S            seeds the weights, the shuffles and the loader's plan (default 0)
  --limit N           train on the first N training samples (and test on the first N test samples)
  --order ORDER       ready (default: batches from whatever arrived first) or strict (plan order)
  --prefetch K        batches of requests in flight (default auto: deepens while starved)
  --workers N         read and decode in N worker threads, each with its own connections to the
                      store, handing over batch-sized packets; 0: in the training thread.
                      Frees that thread, which submits the GPU's work, from the driver's and
                      the decoder's (default: max(2, min(8, cores − 2)), sized as it goes on
                      more than 4 cores; 0 with --transform)
  --latency-ms MS     add MS of one-way delay per direction through the project's TCP proxy
                      (cassandra:// stores only: the round trip grows by 2·MS)
  --jitter-ms J       through the proxy, delay each piece of data MS ± J (reorders arrivals
                      across connections, never within one)
  --decode cpu|hybrid|gpu|auto
                      where JPEGs are decoded: cpu, to pixels where they are read; hybrid, the
                      CPU stops after entropy decoding and the GPU dequantizes, transforms,
                      upsamples and converts them in the preprocessing pass (the same pixels
                      exactly, less CPU a sample); gpu, the CPU reads only headers and the GPU
                      decodes the Huffman codes too (baseline JPEGs; others decode to pixels,
                      counted); auto (default): hybrid on a GPU's own driver, cpu on a CPU
                      driver (lavapipe), with --transform or --no-io
  --transform MODULE  a transform module (a path or URL exporting transform(sample, options,
                      ctx), src/decode/transform.ts) run on each decoded sample where samples are
                      decoded, off the training thread: in the decode pool, where a sample slower
                      than most keeps running in the slow lane and joins a later batch, or in the
                      read workers with --workers. E.g. src/decode/transforms/random_resized_crop.ts
  --transform-options JSON
                      the options handed to every call of --transform's function (default none)
  --no-io             train on the same pixels held on the GPU (read and decoded once): the
                      upper bound of the loader-fed run
  --out DIR           where metrics.jsonl and the plots go (default data/runs/train-<time>)
  --save FILE         save the weights to FILE after every epoch (replaced atomically)
  --checkpoint DIR    save a checkpoint into DIR (checkpoint.cstw: the weights, Adam's moments
                      and step, the loader's place in the epoch, the epochs done, this run's
                      options; and weights.cstw) every --every steps and at each epoch's end,
                      each written whole then renamed over the last: a run killed at any
                      moment keeps its last checkpoint
  --every N           steps between checkpoints (default ${DEFAULT_EVERY})
  --resume DIR        continue the run whose checkpoint is in DIR with the samples of its epoch
                      not yet trained on, then its other epochs; its options come from the
                      checkpoint (options given as well must agree with them, but for
                      --workers, which may differ: they are read workers, not ranks) and it goes
                      on checkpointing into DIR. In strict order the weights come out as an
                      uninterrupted run's, bit for bit on the same adapter
  --dashboard [PORT]  serve a live dashboard of the run at http://127.0.0.1:PORT/ (default: any
                      free port; the URL is printed on stderr): loss and accuracy curves,
                      images/s, the wait share, batch times, throughput per connection, window
                      depth, retries, hedges, skips, workers; /metrics has the same figures in
                      Prometheus' text format. It stops when the run ends
  --dashboard-host H  listen on H instead of 127.0.0.1 (loopback: this machine only)
  --trace-ids FILE    append a line per step to FILE: {"epoch","step","ids"} (for checking that
                      every sample is trained on once per epoch across a resume)
  --backend NAME      WebGPU backend: dawn, or builtin (Deno only)
  --on-error POLICY   a sample that cannot be read or decoded after its retries: throw (default:
                      stop, naming it) or skip (train on the rest; each epoch reports how many
                      it left out as 'skipped' and 'testSkipped')
  --json              print one JSON document: { model, epochs: [ { epoch, seconds,
                      imagesPerSec, loss, testAccuracy, waitShare, stepLoss, … } ], … } where
                      waitShare is the share of the epoch spent waiting for the loader
                      (fetch + decode) and outOfPlanShare the share of samples that ready
                      order moved to another batch than the plan's
  -h, --help          this text`;

const OPTIONS = [
  "store", "dataset", "idx", "split", "model", "epochs", "batch", "lr", "augment", "seed", "limit", "order",
  "prefetch", "latency-ms", "jitter-ms", "workers", "out", "save", "backend", "on-error",
  "checkpoint", "every", "resume", "trace-ids", "dashboard", "dashboard-host", "transform", "transform-options", "decode",
];
/**
 * Options a resumed run may give differently from the checkpoint's (they do not change what is
 * trained). --workers are read workers of this one process, not data-parallel ranks: how many
 * read and decode changes neither the plan nor the state (src/schedule/resume.ts).
 */
const FREE_ON_RESUME = new Set(["resume", "checkpoint", "every", "trace-ids", "json", "help", "dashboard", "dashboard-host", "workers", "decode"]);

interface Run {
  json: boolean;
  address: string;
  dataset: string;
  idx: string;
  split?: string;
  model?: string;
  epochs?: number;
  batch: number;
  lr: number;
  /** Augmentations of the training samples (--augment). */
  augment?: AugmentOptions;
  seed: number;
  limit?: number;
  order: "ready" | "strict";
  prefetch: number | "auto";
  workers?: number;
  latencyMs: number;
  jitterMs: number;
  noIo: boolean;
  /** A transform module and its options (--transform, --transform-options). */
  transform?: { module: string; options?: unknown };
  out: string;
  save?: string;
  backend?: "dawn" | "builtin";
  onError: "throw" | "skip";
  /** Where JPEGs are decoded (--decode): to pixels on the CPU, hybrid (the GPU finishes them), gpu (the GPU decodes them), or auto. */
  decode: "cpu" | "hybrid" | "gpu" | "auto";
  checkpoint?: string;
  every: number;
  resume?: string;
  traceIds?: string;
  dashboard?: { port: number; host?: string };
  /** The options given on the command line (their Run field names): a resume checks them against the checkpoint's. */
  given: string[];
}

function options(): Run | undefined {
  const { options: o } = parseArgs(optionalValue(runtime.args(), "dashboard", "0"), "", OPTIONS, ["no-io"], "bun run train.ts");
  if (o.has("help")) return void console.log(HELP);
  const str = (k: string) => (o.has(k) ? String(o.get(k)) : undefined);
  const order = str("order") ?? "ready";
  if (order !== "ready" && order !== "strict") bad(`'--order' must be ready or strict: current value is ${order}`);
  const model = str("model");
  if (model !== undefined && !MODELS[model]) bad(`'--model' must be one of ${Object.keys(MODELS).join(", ")}: current value is ${model}`);
  const backend = str("backend");
  if (backend !== undefined && backend !== "dawn" && backend !== "builtin") bad(`'--backend' must be dawn or builtin: current value is ${backend}`);
  const lr = Number(str("lr") ?? 0.001);
  if (!(lr > 0 && lr < 10)) bad(`'--lr' must be a number between 0 and 10: current value is ${str("lr")}`);
  const latencyMs = Number(str("latency-ms") ?? 0);
  if (!(latencyMs >= 0 && latencyMs <= 10_000)) bad(`'--latency-ms' must be from 0 to 10000: current value is ${str("latency-ms")}`);
  const jitterMs = Number(str("jitter-ms") ?? 0);
  if (!(jitterMs >= 0 && jitterMs <= latencyMs)) bad(`'--jitter-ms' must be from 0 to --latency-ms (${latencyMs}): current value is ${str("jitter-ms")}`);
  const prefetch = str("prefetch") ?? "auto";
  const onError = str("on-error") ?? "throw";
  if (onError !== "throw" && onError !== "skip") bad(`'--on-error' must be throw or skip: current value is ${onError}`);
  const decode = str("decode") ?? "auto";
  if (decode !== "cpu" && decode !== "hybrid" && decode !== "gpu" && decode !== "auto") bad(`'--decode' must be cpu, hybrid, gpu or auto: current value is ${decode}`);
  if ((decode === "hybrid" || decode === "gpu") && (o.has("transform") || o.has("no-io"))) bad(`'--decode ${decode}' leaves JPEGs ${decode === "gpu" ? "undecoded" : "as DCT blocks"} for the GPU pass, and ${o.has("no-io") ? "--no-io holds pixels" : "--transform takes pixels"}: give --decode cpu`);
  const augment = augmentOption(str("augment"));
  if (augment && o.has("no-io")) bad("'--augment' runs in the preprocessing pass, which --no-io skips (it trains on the pixels held on the GPU): give one or the other");
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return {
    json: o.has("json"),
    address: str("store") ?? DEFAULT_STORE,
    dataset: str("dataset") ?? "fashion-mnist",
    idx: str("idx") ?? "/usr/share/datasets/fashion-mnist/",
    split: str("split"),
    model,
    epochs: o.has("epochs") ? int("epochs", str("epochs"), 1) : undefined,
    batch: int("batch", str("batch") ?? "128", 1),
    lr,
    augment,
    seed: int("seed", str("seed") ?? "0", 0),
    limit: o.has("limit") ? int("limit", str("limit"), 1) : undefined,
    order,
    prefetch: prefetch === "auto" ? "auto" : int("prefetch", prefetch, 1),
    workers: o.has("workers") ? int("workers", str("workers"), 0) : undefined,
    latencyMs,
    jitterMs,
    noIo: o.has("no-io"),
    transform: transformOption(str("transform"), str("transform-options")),
    out: str("out") ?? `data/runs/train-${stamp}`,
    save: str("save"),
    backend: backend as Run["backend"],
    onError,
    decode: decode as "cpu" | "hybrid" | "gpu" | "auto",
    checkpoint: str("checkpoint") ?? str("resume"),
    every: int("every", str("every") ?? String(DEFAULT_EVERY), 1),
    resume: str("resume"),
    traceIds: str("trace-ids"),
    dashboard: dashboardOption(str("dashboard"), str("dashboard-host")),
    given: [...o.keys()].filter((k) => !FREE_ON_RESUME.has(k)),
  };
}

function transformOption(module: string | undefined, options: string | undefined): Run["transform"] {
  if (module === undefined) {
    if (options !== undefined) bad("'--transform-options' needs --transform");
    return undefined;
  }
  if (module === "") bad("'--transform' must name a module (a path or URL): current value is empty");
  if (options === undefined) return { module };
  try {
    return { module, options: JSON.parse(options) };
  } catch (e) {
    return bad(`'--transform-options' must be JSON: current value is ${options} (${(e as Error).message})`);
  }
}

function augmentOption(policy: string | undefined): AugmentOptions | undefined {
  if (policy === undefined) return undefined;
  try {
    const o = parseAugment(policy);
    return Object.keys(o).length ? o : undefined;
  } catch (e) {
    return bad(`'--augment': ${(e as Error).message}`);
  }
}

function dashboardOption(port: string | undefined, host: string | undefined): Run["dashboard"] {
  if (port === undefined) {
    if (host !== undefined) bad("'--dashboard-host' needs --dashboard");
    return undefined;
  }
  return { port: int("dashboard", port, 0), host };
}

/** The Run fields a checkpoint records, by option name. */
const RECORDED: Record<string, keyof Run> = {
  store: "address", dataset: "dataset", idx: "idx", split: "split", model: "model", epochs: "epochs", batch: "batch", lr: "lr",
  augment: "augment", seed: "seed", limit: "limit", order: "order", prefetch: "prefetch", "latency-ms": "latencyMs", "jitter-ms": "jitterMs",
  workers: "workers", out: "out", save: "save", backend: "backend", "on-error": "onError", "no-io": "noIo",
  transform: "transform", "transform-options": "transform",
};

/**
 * A resumed run: the checkpoint's options, with this command line's free ones (--json, --every,
 * …); an option given that the checkpoint recorded otherwise is refused by name.
 */
function resumedRun(now: Run, c: Checkpoint): Run {
  const was = c.run.options as Partial<Run>;
  for (const flag of now.given) {
    const k = RECORDED[flag];
    if (!k) continue;
    if (JSON.stringify(now[k]) !== JSON.stringify(was[k])) {
      bad(`'--${flag}' is ${JSON.stringify(now[k])} here but ${JSON.stringify(was[k] ?? null)} in the checkpoint ${c.path}: give --resume alone, or the same value`);
    }
  }
  return {
    ...now, ...(was as Run), json: now.json, checkpoint: now.checkpoint, every: now.every, resume: now.resume, traceIds: now.traceIds, dashboard: now.dashboard, given: now.given,
    workers: now.workers ?? was.workers, decode: now.decode,
  };
}

/** What a checkpoint records of the run: the options that decide what is trained, resolved. */
function recordedOptions(run: Run, modelName: string, epochs: number, workers: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.values(RECORDED)) out[k] = run[k];
  return { ...out, model: modelName, epochs, workers };
}

async function main(): Promise<number> {
  const given = options();
  if (!given) return 0;
  const resume = given.resume ? await readCheckpoint(given.resume) : undefined;
  const run = resume ? resumedRun(given, resume) : given;
  if (run.checkpoint && run.noIo) bad("'--checkpoint' needs the loader: with --no-io there is no loader state to keep");
  if (run.transform && run.noIo) bad("'--transform' needs the loader: with --no-io the pixels are read once and held on the GPU, so a per-sample transform would run once, not every epoch");
  // On stderr (stdout is for --json) in the terminal's own colour: Bun prints console.error red.
  const log = (s: string) => run.json || say(s);

  if (run.split) await splitToTrain(run.split, run.dataset);
  // The device first: its kind picks the defaults.
  const device = await requestDevice({ backend: run.backend });
  const setup = defaults(run, device);
  log(`device   ${setup.info.runtime}, ${setup.info.backend}: ${setup.info.adapter}${setup.info.cpu ? " (a CPU driver: small defaults)" : ""}`);
  if (resume) {
    const r = resume.run;
    log(`resume   ${resume.path}: epoch ${r.epoch + 1} of ${setup.epochs}, ${r.loader.handed} of its ${count(r.loader.planned, "sample")} trained, step ${r.step} (written ${r.time})`);
  }
  const held: Held = { loaders: [] };
  try {
    const store = held.store = await openRunStore(run);
    const ingested = await ensureDataset(store, run, log);
    if (ingested === "interrupted") return 130;
    const ing = ingested.written;
    const { train, test, splitNote } = await pickSamples(store, run);
    log(`data     ${run.dataset} in ${store.address}: ${train.length} training and ${test.length} test samples` + (ing ? ` (${ing} ingested now)` : ""));
    if (splitNote) log(`split    ${splitNote}`);
    const loader = loaderMaker(run, setup, await readThrough(run, setup.workers, held, log), held);
    // Every epoch trains on every sample: the last batch is short when the batch size does not
    // divide them (its program is compiled once, below). The test split is read in plan order, whole.
    const trainLoader = loader(train, { order: run.order, shuffle: true, batch: run.batch, dropLast: false, resume: resume?.run.loader, train: true });
    const evalBatch = Math.max(run.batch, 500);
    const testLoader = test.length ? loader(test, { order: "strict", shuffle: false, batch: evalBatch, dropLast: false }) : undefined;
    const [C, H, W] = setup.input;
    const normalize = inputNormalization(C === 1 ? 1 : 3);
    const pre = await createPreprocessor(device, { width: W, height: H, channels: C === 1 ? 1 : 3, ...normalize });
    // The training samples' pass, with the augmentations when asked for; the test split's never augments.
    const trainPre = run.augment ? await createPreprocessor(device, { ...pre.options, seed: run.seed, augment: run.augment }) : pre;
    const model = createModel(device, setup.modelName, { seed: run.seed, optimizer: { kind: "adam", lr: run.lr } });
    model.normalize = normalize; // into the weights' header: predict normalizes as this run did
    if (resume) await restoreCheckpoint(model, resume);

    await mkdir(run.out, { recursive: true });
    const loop = new TrainLoop(run, setup, model, trainLoader, testLoader, resume, train.length);
    await loop.startMetrics();
    const batches = run.noIo
      ? await heldOnGpu(run, setup, device, loader, train, test, evalBatch, model.classes, held, log)
      : {
        train: (e: number) => loop.counted(loaderBatches(trainLoader, trainPre, e, { classes: model.classes, readAhead: e + 1 < setup.epochs }), e),
        test: testLoader && (() => loaderBatches(testLoader, pre, 0, { classes: model.classes })),
      };
    const steps = Math.ceil(train.length / run.batch), short = train.length % run.batch;
    log(`model    ${setup.modelName} (${describeModel(setup.modelName)}), Adam lr ${run.lr}, batch ${run.batch} ` +
      `(${count(steps, "step")} an epoch${short ? `, the last of ${short}` : ""}), ${count(setup.epochs, "epoch")}, ` +
      (run.noIo ? "no I/O (data held on the GPU)" : `${run.order} order, prefetch ${run.prefetch}, ${setup.workers ? `${setup.workers} read workers` : "read in this thread"}${setup.gpu ? ", GPU JPEG decode (Huffman codes on the GPU)" : setup.hybrid ? ", hybrid JPEG decode (IDCT on the GPU)" : ""}` +
        (run.transform ? `, transform ${run.transform.module} ${setup.workers ? "in the read workers" : "in the decode pool (slow lane on)"}` : "")) + `; metrics in ${run.out}/`);
    // Compile every program a step or an evaluation will use before the clock starts.
    const tc = runtime.now();
    const testN = test.length ? [evalBatch, ...(test.length % evalBatch ? [test.length % evalBatch] : [])] : [];
    const trainN = [Math.min(run.batch, train.length), ...(train.length > run.batch && short ? [short] : [])];
    await model.prepare(...trainN, ...testN);
    log(`compile  ${((runtime.now() - tc) / 1000).toFixed(1)} s (training and evaluation programs)`);
    await loop.start(held);
    await fit(model, loop.fitOptions(batches.train, batches.test));
    const seconds = loop.seconds();
    const reports = loop.finish();
    if (run.save) log(`saved    weights to ${run.save} (after each epoch)`);
    if (run.checkpoint) log(`saved    checkpoints to ${run.checkpoint}/${CHECKPOINT_FILE} (every ${count(run.every, "step")} and after each epoch)`);
    await model.destroy();
    for (const d of held.gpuData ?? []) await d.destroy();
    pre.destroy();
    if (trainPre !== pre) trainPre.destroy();
    summary(run, setup, { store, ing, ingestSeconds: ingested.seconds, train, test, resume, reports, seconds, loader: run.noIo ? undefined : trainLoader.stats() });
    return 0;
  } finally {
    await closeHeld(held);
    device.destroy();
  }
}

/** What a run's defaults come to on `device`: the model, the epochs, the read workers. */
function defaults(run: Run, device: GPUDevice) {
  const info = deviceInfo(device)!;
  // The GPU default is the model whose 10-epoch accuracy was measured (bench/RESULTS.md).
  const modelName = run.model ?? (info.cpu ? "mlp" : "cnn");
  return {
    info,
    modelName,
    input: MODELS[modelName].input,
    epochs: run.epochs ?? (info.cpu ? 3 : 10),
    // Reading in the training thread costs it 30-70 µs a sample, which caps what a fast card can
    // be fed; read workers hand it packets at ~0.1 µs a sample, and on lavapipe, whose training
    // takes the same cores, they cost nothing either (NOTE [ Read workers: how many ]).
    workers: run.workers ?? readWorkers(run.address, { transform: run.transform }),
    // The hybrid decode where asked, or where a GPU (not a CPU driver) finishes it and nothing
    // between wants pixels (src/gpu/idct.ts).
    hybrid: run.decode === "hybrid" || (run.decode === "auto" && !info.cpu && !run.transform && !run.noIo),
    // The GPU decode only where asked: unmeasured on a GPU yet (bench/gpu_decode.bench.ts).
    gpu: run.decode === "gpu",
  };
}
type Setup = ReturnType<typeof defaults>;

/** What a run opened, closed in its `finally` whatever happened. */
interface Held {
  store?: Store;
  readStore?: Store;
  proxy?: ProxyProcess;
  loaders: Loader<Sample>[];
  dashboard?: Dashboard;
  dashboardTimer?: ReturnType<typeof setInterval>;
  /** --no-io's pixels on the GPU. */
  gpuData?: { destroy(): Promise<void> }[];
}

async function closeHeld(h: Held): Promise<void> {
  clearInterval(h.dashboardTimer);
  await h.dashboard?.close();
  for (const l of h.loaders) await l.close();
  if (h.readStore && h.readStore !== h.store) await h.readStore.close();
  await h.store?.close();
  await h.proxy?.close();
}

/**
 * Where reads go: through the latency proxy when asked (ingest and listing went direct), else
 * the run's address and store.
 */
async function readThrough(run: Run, workers: number, held: Held, log: (s: string) => void): Promise<{ address: string; store: Store }> {
  if (!(run.latencyMs > 0)) return { address: run.address, store: held.store! };
  const a = parseStoreAddress(run.address);
  if (a.kind !== "cassandra") bad(`'--latency-ms' needs a network store (cassandra://…): current store is ${redact(run.address)}`);
  const proxy = held.proxy = await startProxyProcess(`${a.hosts[0]}:${a.port}`, 0, ["--delay-ms", String(run.latencyMs), "--jitter-ms", String(run.jitterMs)]);
  // The same address (credentials, keyspace, options) with the proxy as its only host.
  const address = run.address.replace(/^(cassandra:\/\/(?:[^@/]*@)?)[^/]*/, (_, head) => `${head}127.0.0.1:${proxy.port}`);
  // Read workers open the address themselves: a store here would only hold idle connections.
  if (workers === 0) held.readStore = await openStore(address, { create: false });
  log(`latency  +${run.latencyMs}${run.jitterMs ? ` ± ${run.jitterMs}` : ""} ms each way through the proxy on 127.0.0.1:${proxy.port} (RTT +${2 * run.latencyMs} ms)`);
  return { address, store: held.readStore ?? held.store! };
}

type LoaderFor = (ids: string[], o: { order: "ready" | "strict"; shuffle: boolean; batch: number; dropLast: boolean; resume?: Checkpoint["run"]["loader"]; train?: boolean }) => Loader<Sample>;

/**
 * The run's Loaders. The loader decodes (its `decode`): in the read workers, else in this
 * thread as each sample arrives. Either way a sample is ready once decoded (NOTE [ Ready-order
 * assembly ] in src/assemble/assembler.ts), so a slow decode delays only its own sample, and a
 * file that does not decode is named by its key and id (src/read/decode_source.ts). A grey
 * model asks the decoder for one channel: a colour file's luma, with its chroma's IDCT and
 * conversion skipped (1.2-1.35x the decode rate) and a third of the bytes to move.
 */
function loaderMaker(run: Run, setup: Setup, read: { address: string; store: Store }, held: Held): LoaderFor {
  const decode = { ...(setup.input[0] === 1 ? { grey: true } : {}), ...(setup.gpu ? { gpu: true } : setup.hybrid ? { hybrid: true } : {}) };
  const workers = setup.workers;
  return (ids, o) => {
    const l = new Loader<Sample>({
      // "auto" where none was given: the same count, sized as reading goes on a larger machine (workerScale).
      store: workers > 0 ? read.address : read.store, workers: run.workers ?? (workers > 0 ? "auto" : 0), decode, dataset: run.dataset, ids, batchSize: o.batch, shuffle: o.shuffle, seed: run.seed,
      order: o.order, prefetch: run.prefetch, dropLast: o.dropLast, reaskTail: true, onError: run.onError, resume: o.resume,
      // --transform runs on the training samples only (evaluation sees the images as stored). A
      // module's answer becomes the sample's image. No function runs here per sample: with read
      // workers the batches are their packets, taken whole (NOTE [ Packets ], src/read/packet.ts).
      ...(o.train && run.transform ? { transform: run.transform } : {}),
    });
    held.loaders.push(l);
    return l;
  };
}

/** --no-io: read and decode once, keep the pixels on the GPU as bytes, gather each batch there. */
async function heldOnGpu(
  run: Run, setup: Setup, device: GPUDevice, loader: LoaderFor, train: string[], test: string[], evalBatch: number, classes: number, held: Held, log: (s: string) => void,
): Promise<{ train: (e: number) => AsyncIterable<TrainBatch>; test?: () => AsyncIterable<TrainBatch> }> {
  const t0 = runtime.now();
  const [C, H, W] = setup.input;
  const hold = async (l: Loader<Sample>, n: number, what: string) => {
    const bar = progress(`hold ${what}`, n, run.json);
    const { pixels, labels } = await readPixels(l, [C, H, W], classes, bar);
    bar.done();
    const d = new GpuDataset(device, pixels, labels, { shape: [C, H, W], normalize: { mean: FASHION_MNIST_MEAN, std: FASHION_MNIST_STD } });
    (held.gpuData ??= []).push(d);
    return d;
  };
  const tr = await hold(loader(train, { order: "strict", shuffle: false, batch: 1024, dropLast: false }), train.length, "train");
  const te = test.length ? await hold(loader(test, { order: "strict", shuffle: false, batch: 1024, dropLast: false }), test.length, "test") : undefined;
  log(`no-io    ${count(train.length + test.length, "image")} read, decoded and uploaded once in ${((runtime.now() - t0) / 1000).toFixed(1)} s`);
  return {
    train: (e) => tr.batches(e, { batch: run.batch, seed: run.seed, dropLast: false }),
    test: te && (() => te.batches(0, { batch: evalBatch, shuffle: false })),
  };
}

/**
 * The training loop's own figures as it goes: the progress bar and its live loss, the loader's
 * wait, the dashboard's frames, checkpoints, the metrics file and plots after each epoch, and
 * what a Ctrl-C keeps.
 */
class TrainLoop {
  readonly reports: EpochReport[];
  readonly #startEpoch: number;
  #step: number;
  #bar: ReturnType<typeof progress>;
  #latest = "";
  #polling = false;
  #lastPoll = runtime.now();
  #share = 0;
  #lastShare = 0;
  #loaderWait0 = 0;
  #displaced = 0;
  #testSkipped0 = 0;
  #stepIds: string[] = [];
  #writing: Promise<unknown> = Promise.resolve();
  #t0 = 0;
  #trained: number;
  #epochTrained: number;
  #trainedBefore: number;
  #lastHandOver = 0;
  readonly #live: { loss?: number; accuracy?: number } = {};
  readonly #batchTimes: number[] = [];
  #dashboard?: Dashboard;
  #dashboardTimer?: ReturnType<typeof setInterval>;
  readonly #recorded: Record<string, unknown>;
  readonly #metricsPath: string;
  readonly run: Run;
  readonly setup: Setup;
  readonly model: Sequential;
  readonly trainLoader: Loader<Sample>;
  readonly testLoader: Loader<Sample> | undefined;
  readonly resume: Checkpoint | undefined;
  readonly nTrain: number;

  // (No parameter properties: Node strips types only, and refuses them.)
  constructor(run: Run, setup: Setup, model: Sequential, trainLoader: Loader<Sample>, testLoader: Loader<Sample> | undefined, resume: Checkpoint | undefined, nTrain: number) {
    this.run = run;
    this.setup = setup;
    this.model = model;
    this.trainLoader = trainLoader;
    this.testLoader = testLoader;
    this.resume = resume;
    this.nTrain = nTrain;
    this.reports = [...(resume?.run.reports ?? [])];
    this.#startEpoch = resume?.run.epoch ?? 0;
    this.#step = resume?.run.step ?? 0;
    this.#bar = progress("epoch 1", nTrain, run.json);
    // Checkpoints: the run's options, resolved; the loader's state after each step's batch.
    this.#recorded = recordedOptions(run, setup.modelName, setup.epochs, setup.workers);
    this.#metricsPath = `${run.out}/metrics.jsonl`;
    this.#trained = this.reports.reduce((a, r) => a + r.samples, 0);
    this.#epochTrained = resume?.run.partial?.samples ?? 0;
    this.#trainedBefore = this.#trained + this.#epochTrained; // by the run this one resumes
  }

  /**
   * Metrics and plots are rewritten after every epoch. A resumed run's file holds the
   * checkpoint's whole epochs (a line the killed run wrote after its last checkpoint is
   * written again, once, when its epoch ends here).
   */
  async startMetrics(): Promise<void> {
    await writeFile(this.#metricsPath, (this.resume?.run.reports ?? []).map((r) => JSON.stringify({ model: this.setup.modelName, ...r }) + "\n").join(""));
  }

  /** The loader's batches of epoch `e`, counting those the plan puts in another batch (outOfPlanShare). */
  counted(batches: AsyncIterable<LoaderTrainBatch>, e: number): AsyncIterable<TrainBatch> {
    const handed = e === this.#startEpoch ? this.resume?.run.loader.handed ?? 0 : 0;
    return countDisplaced(batches, this.trainLoader, e, (n, ids) => ((this.#displaced = n), (this.#stepIds = ids)), handed);
  }

  /**
   * Starts the loop's clock and, with --dashboard, the page (refreshed every 250 ms). Ctrl-C or
   * a kill from here on: once the epoch being written (metrics, plots, weights) is on disk, say
   * what is kept and exit; the proxy process exits with us (tools/proxy/process.ts).
   */
  async start(held: Held): Promise<void> {
    const { run, setup, reports } = this;
    const interrupted = async (signal: "SIGINT" | "SIGTERM") => {
      await this.#writing.catch(() => {});
      say(`\n${signal}: stopped during epoch ${reports.length + 1} of ${setup.epochs}; ${reports.length === 1 ? "the whole epoch before it is" : `the ${reports.length} whole epochs before it are`} in ` +
        `${run.out}/metrics.jsonl${run.save && reports.length ? ` and ${reports.length === 1 ? "its" : "their"} weights in ${run.save}` : ""}` +
        (run.checkpoint ? `; the last checkpoint is in ${run.checkpoint}: --resume ${run.checkpoint} goes on from it` : ""));
      runtime.exit(signal === "SIGINT" ? 130 : 143);
    };
    process.on("SIGINT", () => void interrupted("SIGINT"));
    process.on("SIGTERM", () => void interrupted("SIGTERM"));
    this.#t0 = this.#lastHandOver = runtime.now();
    if (!run.dashboard) return;
    const dashboard = this.#dashboard = held.dashboard = await startDashboard({ ...run.dashboard, title: `train.ts: ${setup.modelName} on ${run.dataset}` });
    say(`dashboard ${dashboard.url}`); // with --json too: stderr, and the only way to find the page
    dashboard.update(this.#frame(false));
    this.#dashboardTimer = held.dashboardTimer = setInterval(() => dashboard.update(this.#frame(false)), 250);
  }

  /** The dashboard's figures: the loader's, this loop's step and samples, the last losses. */
  #frame(done: boolean): DashboardFrame {
    const last = this.reports.at(-1), now = runtime.now();
    const samples = this.#trained + this.#epochTrained;
    const extra: Partial<DashboardFrame> = {
      seconds: (now - this.#t0) / 1000, epoch: Math.min(this.setup.epochs, this.reports.length + (done ? 0 : 1)), step: this.#step, samples,
      imagesPerSec: (samples - this.#trainedBefore) / Math.max(1e-3, (now - this.#t0) / 1000),
      loss: { train: this.#live.loss ?? last?.loss, test: last?.testLoss },
      accuracy: { train: this.#live.accuracy ?? last?.trainAccuracy, test: last?.testAccuracy },
      batchTimesMs: this.#batchTimes.splice(0), done,
    };
    const workers = this.setup.workers;
    return this.run.noIo ? { waitShare: 0, ...extra } as DashboardFrame : frameFromStats(this.trainLoader.stats(), { ...extra, ...(workers ? { workers } : {}) });
  }

  #checkpoint(epoch: number, partial?: EpochCarry): Promise<void> {
    return saveCheckpoint(this.run.checkpoint!, this.model, {
      options: this.#recorded, epoch, step: this.#step, loader: this.trainLoader.state(), reports: this.reports, partial, seed: this.run.seed, time: new Date().toISOString(),
    });
  }

  fitOptions(train: (e: number) => AsyncIterable<TrainBatch>, test: (() => AsyncIterable<TrainBatch>) | undefined): Parameters<typeof fit>[1] {
    return {
      epochs: this.setup.epochs,
      startEpoch: this.#startEpoch,
      carry: this.resume?.run.partial,
      train: (e) => {
        this.#bar = progress(`epoch ${e + 1}/${this.setup.epochs}`, this.nTrain, this.run.json);
        this.#latest = "";
        this.#live.loss = this.#live.accuracy = undefined;
        this.#share = 0;
        this.#loaderWait0 = this.trainLoader.stats().waitSeconds;
        return train(e);
      },
      test,
      onStep: (e, samples, elapsedMs, waitedMs) => this.#onStep(e, samples, elapsedMs, waitedMs),
      onEpoch: (r) => this.#onEpoch(r),
    };
  }

  #onStep(e: number, samples: number, elapsedMs: number, waitedMs: number): Promise<void> | void {
    const { run, trainLoader } = this;
    this.#step++;
    this.#epochTrained = samples;
    if (this.#dashboard) {
      // Batch times for its histogram, taken by the next frame (none kept without one).
      const now = runtime.now();
      this.#batchTimes.push(now - this.#lastHandOver);
      this.#lastHandOver = now;
    }
    if (run.traceIds) appendFileSync(run.traceIds, JSON.stringify({ epoch: e, step: this.#step, ids: this.#stepIds }) + "\n");
    // Loss and accuracy need a read-back from the GPU: every 2 s at most, in the background.
    // With a dashboard open every half second, for its loss curve.
    if (!this.#polling && runtime.now() - this.#lastPoll > (this.#dashboard ? 500 : 2000)) {
      this.#polling = true;
      this.model.trainMetrics().then((m) => ((this.#live.loss = m.loss), (this.#live.accuracy = m.accuracy), (this.#latest = `loss ${m.loss.toFixed(3)} · acc ${(100 * m.accuracy).toFixed(1)}%`)))
        .finally(() => ((this.#polling = false), (this.#lastPoll = runtime.now())));
    }
    // stats() sorts every batch time so far: refresh the share twice a second, not per step.
    if (runtime.now() - this.#lastShare > 500 && elapsedMs > 0) {
      this.#lastShare = runtime.now();
      this.#share = (100 * (run.noIo ? waitedMs : 1000 * (trainLoader.stats().waitSeconds - this.#loaderWait0))) / elapsedMs;
    }
    this.#bar.update(samples, `${this.#latest}${this.#latest ? " · " : ""}wait ${this.#share.toFixed(0)}%`);
    if (run.checkpoint && this.#step % run.every === 0) {
      // What this epoch trained so far, an interrupted run's part included; the wait is the
      // loader's, as the epoch's report measures it.
      const carry = e === this.#startEpoch ? this.resume?.run.partial : undefined;
      this.#writing = this.model.peekTrainMetrics().then((m) =>
        this.#checkpoint(e, carried(carry, {
          ...m, samples: samples - (carry?.samples ?? 0), seconds: elapsedMs / 1000, waitedSeconds: trainLoader.stats().waitSeconds - this.#loaderWait0,
        }))
      );
      return this.#writing as Promise<void>;
    }
  }

  async #onEpoch(r: EpochReport): Promise<void> {
    const { run, trainLoader } = this;
    const ls = trainLoader.stats();
    const testSkipped = this.testLoader?.skipped(0) ?? 0; // every evaluation reads its epoch 0
    // The share of the epoch the training loop waited for the loader (fetch + decode); with
    // --no-io, for the GPU gather. Preprocessing is GPU work, not waiting for data.
    const carriedWait = r.epoch - 1 === this.#startEpoch ? this.resume?.run.partial?.waitedSeconds ?? 0 : 0;
    const report = run.noIo ? { ...r } : {
      ...r,
      waitShare: Math.min(1, (ls.waitSeconds - this.#loaderWait0 + carriedWait) / r.seconds),
      outOfPlanShare: r.samples ? this.#displaced / r.samples : 0,
      // Samples left out after their retries (--on-error skip): training, then the test split.
      skipped: trainLoader.skipped(r.epoch - 1),
      testSkipped: testSkipped - this.#testSkipped0,
    };
    this.#testSkipped0 = testSkipped;
    this.reports.push(report);
    this.#trained += report.samples;
    this.#epochTrained = 0;
    this.#live.loss = this.#live.accuracy = undefined;
    const skipped = "skipped" in report && report.skipped + report.testSkipped > 0 ? ` · skipped ${report.skipped} + ${report.testSkipped} test` : "";
    this.#bar.done(`loss ${r.loss.toFixed(3)} · train acc ${(100 * r.trainAccuracy).toFixed(1)}% · test acc ${(100 * r.testAccuracy).toFixed(2)}% · ` +
      `${r.imagesPerSec.toFixed(0)} img/s · wait ${(100 * report.waitShare).toFixed(1)}%${skipped}`);
    this.#writing = (async () => {
      await appendFile(this.#metricsPath, JSON.stringify({ model: this.setup.modelName, ...report }) + "\n");
      await writePlots(run.out, this.setup.modelName, this.reports);
      // Weights after every epoch (replaced atomically): a run cut short keeps its last epoch.
      if (run.save) await this.model.save(run.save);
      if (run.checkpoint) await this.#checkpoint(r.epoch);
    })();
    await this.#writing;
  }

  /** The loop is over: the dashboard's last frame; the reports. */
  finish(): EpochReport[] {
    clearInterval(this.#dashboardTimer);
    this.#dashboard?.update(this.#frame(true));
    return this.reports;
  }

  /** Seconds since the loop's clock started. */
  seconds(): number {
    return (runtime.now() - this.#t0) / 1000;
  }
}

/** The run's last words: its document with --json, else a line. */
function summary(
  run: Run, setup: Setup,
  r: { store: Store; ing: number; ingestSeconds: number; train: string[]; test: string[]; resume?: Checkpoint; reports: EpochReport[]; seconds: number; loader?: ReturnType<Loader<Sample>["stats"]> },
): void {
  const { reports, resume } = r;
  const last = reports.at(-1)!;
  const doc = {
    model: setup.modelName,
    epochs: reports,
    dataset: run.dataset,
    store: r.store.address,
    ingested: r.ing,
    device: setup.info,
    io: run.noIo ? "none" : "loader",
    order: run.noIo ? undefined : run.order,
    workers: run.noIo ? undefined : setup.workers,
    decode: run.noIo ? undefined : setup.gpu ? "gpu" : setup.hybrid ? "hybrid" : "cpu",
    latencyMs: run.latencyMs,
    batch: run.batch,
    lr: run.lr,
    augment: run.augment,
    seed: run.seed,
    resumedFrom: resume ? { path: resume.path, epoch: resume.run.epoch + 1, step: resume.run.step, trained: resume.run.loader.handed } : undefined,
    trainSamples: r.train.length,
    testSamples: r.test.length,
    seconds: r.seconds,
    ingestSeconds: r.ingestSeconds,
    out: run.out,
    loader: r.loader,
  };
  if (run.json) console.log(JSON.stringify(doc));
  else {
    console.log(`${setup.modelName}: test accuracy ${(100 * last.testAccuracy).toFixed(2)}% after ${count(reports.length, "epoch")}, ` +
      `${(reports.reduce((a, x) => a + x.imagesPerSec, 0) / reports.length).toFixed(0)} training images/s, ` +
      `waiting for data ${(100 * reports.reduce((a, x) => a + x.waitShare, 0) / reports.length).toFixed(1)}% of the time; ` +
      `${(r.seconds + r.ingestSeconds).toFixed(1)} s in all${r.ingestSeconds ? ` (${r.ingestSeconds.toFixed(1)} s of it ingesting)` : ""}. Metrics and plots: ${run.out}/`);
  }
}

/**
 * Counts the samples a batch carries that the epoch's plan puts in another batch: how much
 * ready order reordered (0 in strict order), reported per epoch as `outOfPlanShare`.
 */
async function* countDisplaced(batches: AsyncIterable<LoaderTrainBatch>, l: Loader<Sample>, epoch: number, report: (n: number, ids: string[]) => void, handed = 0) {
  const o = l.planIdentity();
  const plan = epochPlan(l.options.ids, { ...o, epoch });
  const at = new Map(plan.map((id, i) => [id, Math.floor(i / o.batchSize)]));
  // A resumed epoch's batches start where the checkpoint's handed-over samples end.
  let k = Math.round(handed / o.batchSize), n = 0;
  for await (const b of batches) {
    for (const id of b.ids) if (at.get(id) !== k) n++;
    k++;
    report(n, b.ids);
    yield b;
  }
}

/**
 * The run's store. Only the default store is made when absent (for Fashion-MNIST, which
 * train.ts ingests itself): another address names a store that must exist, so a typo in it
 * fails here instead of making and filling a new store.
 */
async function openRunStore(run: Run): Promise<Store> {
  const create = run.address === DEFAULT_STORE && run.dataset === "fashion-mnist";
  try {
    return await openStore(run.address, { create });
  } catch (e) {
    if (create || !(e instanceof CassetteError) || e.code !== "ERR_STORE") throw e;
    const why = run.address === DEFAULT_STORE
      ? `train.ts makes its default store only for fashion-mnist, which it ingests itself, not for '${run.dataset}'`
      : `train.ts makes only its default store (${DEFAULT_STORE})` + (run.dataset === "fashion-mnist"
        ? `; for Fashion-MNIST in another: cassette ingest idx:${run.idx} --store ${redact(run.address)} --dataset fashion-mnist`
        : "");
    throw new CassetteError("ERR_STORE", `${e.message}. ${why}`, { cause: e });
  }
}

/**
 * Ingests Fashion-MNIST from the idx files when the store lacks any of it: the samples written
 * and the seconds it took. Ctrl-C stops it as it stops `cassette ingest` (src/cli/ingest.ts):
 * after the samples being written, saying what is stored; the caller exits 130 and a re-run
 * resumes. A second Ctrl-C exits at once.
 */
async function ensureDataset(store: Store, run: Run, log: (s: string) => void): Promise<{ written: number; seconds: number } | "interrupted"> {
  if (run.dataset !== "fashion-mnist") {
    await store.getDataset(run.dataset); // throws naming the dataset when it is absent
    return { written: 0, seconds: 0 };
  }
  let bar: ReturnType<typeof progress> | undefined;
  const t0 = runtime.now();
  const stop = stopOnCtrlC(store.address);
  let ing: Awaited<ReturnType<typeof ingest>>;
  try {
    ing = await ingest(store, `idx:${run.idx}`, {
      dataset: run.dataset,
      limit: run.limit,
      signal: stop.signal,
      onProgress: (p) => {
        if (p.written === 0 && !bar) return; // a store that has it all: nothing to show
        bar ??= progress("ingest", p.total, run.json, runtime.now() - p.seconds * 1000);
        bar.update(p.done, `${p.written} new`);
      },
    });
  } finally {
    stop.dispose();
  }
  if (ing.interrupted) {
    ingestInterrupted(ing, store.address);
    return "interrupted";
  }
  if (ing.errors.length) {
    throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot use ${run.dataset}: ${count(ing.errors.length, "sample")} failed to ingest, first: ${ing.errors[0].reason}`);
  }
  const seconds = ing.written ? (runtime.now() - t0) / 1000 : 0;
  if (ing.written) log(`ingest   ${count(ing.written, "sample")} into ${store.address} in ${seconds.toFixed(1)} s`);
  return { written: ing.written, seconds };
}

/**
 * The split file of --split and the split to train on: FILE:INDEX or FILE:NAME names it, as the
 * CLI's --split does; else "train", else the first. Read before the device and the ingest too,
 * so a wrong file or split stops the run at once.
 */
async function splitToTrain(ref: string, dataset: string): Promise<{ file: SplitFile; train: Split }> {
  const picked = /:[^:/\\]+$/.test(ref) ? await loadSplit(ref) : undefined;
  const file = picked?.file ?? await loadSplits(ref);
  if (file.dataset !== dataset) bad(`the split file ${ref} is for dataset '${file.dataset}', not '${dataset}'`);
  return { file, train: picked?.split ?? file.splits.find((x) => x.name === "train") ?? file.splits[0] };
}

/**
 * The training and test ids: from --split, else the rows' `split` column (idx: train / t10k).
 * With --split, `splitNote` says which splits are used and how many of the dataset's samples
 * the file leaves out (its class balance or `max` drops some).
 */
async function pickSamples(store: Store, run: Run): Promise<{ train: string[]; test: string[]; splitNote?: string }> {
  const cap = (ids: string[]) => (run.limit ? ids.slice(0, run.limit) : ids);
  if (run.split) {
    const { file, train } = await splitToTrain(run.split, run.dataset);
    const s = file.splits;
    const test = s.find((x) => x.name === "test") ?? (s.length > 1 ? s.at(-1)! : undefined);
    const total = (await store.info(run.dataset)).count;
    const left = total - s.reduce((a, x) => a + x.ids.length, 0);
    const splitNote = `${run.split}: trains on '${train.name}' (${train.ids.length})` +
      (test && test !== train ? `, tests on '${test.name}' (${test.ids.length})` : ", tests on nothing") +
      `; ${left} of the dataset's ${count(total, "sample")} are in no split` +
      (left > 0 ? ` (left out by its ${file.params.balance === "data" ? "max" : "class balance or max"})` : "");
    return { train: cap(train.ids), test: test && test !== train ? cap(test.ids) : [], splitNote };
  }
  const rows: { id: string; split: unknown; idx: number }[] = [];
  for await (const page of store.scanNat(run.dataset)) for (const r of page) rows.push({ id: r.id, split: r.meta.split, idx: Number(r.meta.idx ?? 0) });
  if (!rows.some((r) => r.split === "train")) {
    bad(`dataset '${run.dataset}' has no 'split' column with "train" rows: pass --split FILE (made by cassette splits)`);
  }
  rows.sort((a, b) => a.idx - b.idx);
  const pick = (name: string) => cap(rows.filter((r) => r.split === name).map((r) => r.id));
  return { train: pick("train"), test: pick("t10k").length ? pick("t10k") : pick("test") };
}

/** Every image of one loader epoch as C×H×W bytes (grey or RGB as the model wants), with labels. */
async function readPixels(l: Loader<Sample>, [C, H, W]: number[], classes: number, bar: { update(n: number): void }) {
  const n = l.options.ids.length, per = C * H * W;
  const pixels = new Uint8Array(n * per), labels = new Uint32Array(n);
  let k = 0;
  for await (const b of l.epoch(0)) {
    b.items.forEach((item, i) => {
      const img = pixelsOf(item, b.ids[i]);
      if (img.width !== W || img.height !== H || (C === 3 && img.channels === 1)) {
        throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot hold sample ${b.ids[i]} for --no-io as it decodes to ${img.width}×${img.height}×${img.channels}, not the model's ${W}×${H}×${C}: train with the loader (no --no-io), which resizes on the GPU`);
      }
      const y = b.labels[i];
      if (!(y >= 0 && y < classes)) throw new CassetteError("ERR_MALFORMED_INPUT", `Cannot train on sample ${b.ids[i]} as its label must be a class from 0 to ${classes - 1}: current value is ${y}`);
      labels[k] = y;
      // Decoded pixels are HWC; the model reads CHW.
      const out = pixels.subarray(k * per, (k + 1) * per);
      const ch = img.channels;
      if (C === 1 && ch === 1) out.set(img.data.subarray(0, per));
      // BT.601 luma, as the GPU preprocessor computes for colour input (grey stored as RGB stays exact).
      else if (C === 1) for (let p = 0; p < per; p++) out[p] = Math.round(0.299 * img.data[p * ch] + 0.587 * img.data[p * ch + 1] + 0.114 * img.data[p * ch + 2]);
      else for (let p = 0; p < H * W; p++) for (let c = 0; c < C; c++) out[c * H * W + p] = img.data[p * img.channels + c];
      k++;
    });
    bar.update(k);
  }
  return { pixels: pixels.subarray(0, k * per), labels: labels.subarray(0, k) };
}

/** The plots, drawn from the epochs' reports (the lines of metrics.jsonl), every point marked. */
async function writePlots(dir: string, model: string, reports: EpochReport[]): Promise<void> {
  const pts = (f: (r: EpochReport) => number) => reports.map((r) => [r.epoch, f(r)] as [number, number]);
  await writeFile(`${dir}/loss.svg`, lineChart({
    title: `${model}: loss per epoch`, xLabel: "epoch", yLabel: "cross-entropy", markers: true, integerX: true,
    series: [{ name: "train (mean over the epoch's steps)", points: pts((r) => r.loss) }, { name: "test", points: pts((r) => r.testLoss) }],
  }));
  await writeFile(`${dir}/accuracy.svg`, lineChart({
    title: `${model}: accuracy per epoch`, xLabel: "epoch", yLabel: "accuracy (%)", markers: true, integerX: true,
    series: [{ name: "train", points: pts((r) => 100 * r.trainAccuracy) }, { name: "test", points: pts((r) => 100 * r.testAccuracy) }],
  }));
  // Steps numbered across the run; the test loss sits at the last step of its epoch.
  const steps: [number, number][] = [], testAt: [number, number][] = [];
  for (const r of reports) {
    for (const l of r.stepLoss) steps.push([steps.length + 1, l]);
    testAt.push([steps.length, r.testLoss]);
  }
  await writeFile(`${dir}/steps.svg`, lineChart({
    title: `${model}: training loss of every step`, xLabel: "step", yLabel: "cross-entropy", markers: true, integerX: true,
    series: [{ name: "train (each step's batch)", points: steps }, { name: "test (after each epoch)", points: testAt }],
  }));
  await writeFile(`${dir}/throughput.svg`, lineChart({
    title: `${model}: training images/s and waiting for data, per epoch`, xLabel: "epoch", yLabel: "images/s", yMin: 0, markers: true, integerX: true,
    yRight: { label: "waiting for data (% of the epoch)", min: 0 },
    series: [{ name: "images/s", points: pts((r) => r.imagesPerSec) }, { name: "waiting (%)", axis: "right", points: pts((r) => 100 * r.waitShare) }],
  }));
}

/** A line on stderr, in the terminal's own colour (console.error is red under Bun). */
function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

function describeModel(name: string): string {
  return MODELS[name].layers.map((l) => l.kind).join("→");
}

function int(name: string, v: string | undefined, min: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) bad(`'--${name}' must be an integer ≥ ${min}: current value is ${v}`);
  return n;
}

function bad(why: string): never {
  throw new CassetteError("ERR_INVALID_OPTION", `Cannot train as ${why}`);
}

try {
  runtime.exit(await main());
} catch (e) {
  if (e instanceof CassetteError) {
    console.error(`train.ts: ${e.message} [${e.code}]`);
    runtime.exit(2);
  }
  throw e;
}
