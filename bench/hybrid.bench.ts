/**
 * The hybrid JPEG decode end to end (issue 37): photos read by a Loader with read workers,
 * each sample's RandomResizedCrop plan drawn before its decode, then the GPU preprocessing
 * to SIZE² (loaderBatches, as train.ts feeds a model), two ways in the same run, interleaved:
 *
 *   - cpu:    `decode: { plan }`, the workers decode the pixels each plan reads;
 *   - hybrid: `decode: { plan, hybrid: true }`, the workers entropy-decode the blocks each plan
 *             reads and the GPU does the rest (dequantize, IDCT, upsample, colour).
 *
 * The same tensor either way (test/gpu/hybrid.test.ts). Figures: images/s, and CPU seconds per
 * 1 000 images (the process's, every thread: the loader's, the read workers', the GPU
 * driver's). On a CPU driver (lavapipe) the GPU's work is the same cores', so the hybrid path
 * shows only its correctness there; on a GPU it shows what moves off the cores.
 *
 *   node_modules/.bin/bun bench/hybrid.bench.ts [--quick] [--copies N] [--workers W] [--out SIZE]
 *
 * Inputs: bench/jpeg/data/photos (bench/jpeg/make_inputs.sh: five real photos, 640×427 and
 * 640×400, q90 4:2:0), each stored COPIES times under its own key in a SQLite store in .tmp/.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { compare } from "./_lib/compare.ts";
import { processCpuSeconds } from "./_lib/cpu.ts";
import { makeInputs } from "./_lib/inputs.ts";
import { benchArgs } from "./_lib/args.ts";
import { runtime } from "../runtime-adapters/index.ts";
import { ingest } from "../src/dataset/ingest.ts";
import { openStore } from "../src/source/open.ts";
import { Loader } from "../src/loader.ts";
import { createPreprocessor } from "../src/gpu/preprocess.ts";
import { deviceInfo, requestDevice } from "../src/gpu/device.ts";
import { loaderBatches } from "../src/train/loader_batches.ts";

const args = benchArgs({
  program: "bench/hybrid.bench.ts",
  usage: `usage: bun bench/hybrid.bench.ts [--quick] [--copies N] [--workers W] [--out SIZE]

  Photos through a Loader with read workers and the GPU preprocessing (RandomResizedCrop to
  SIZE², planned before the decode): the workers decode pixels (cpu) or only entropy-decode
  (hybrid: the GPU does the IDCT and colour). Images/s and CPU seconds per 1 000 images.

  --quick      3 rounds instead of 7, 40 copies of each photo instead of 200
  --copies N   how many times each of the five photos is stored (default 200)
  --workers W  read workers (default: max(2, cores − 2))
  --out SIZE   the output side (default 224)`,
  valued: ["copies", "workers", "out"],
  flags: ["quick"],
});
const quick = args.has("quick");
const rounds = quick ? 3 : 7;
const copies = args.int("copies", quick ? 40 : 200);
const workers = args.int("workers", Math.max(2, runtime.cpuTimes().cores - 2));
const side = args.int("out", 224);

const HERE = fileURLToPath(new URL("./jpeg/", import.meta.url));
makeInputs("hybrid.bench.ts", HERE + "make_inputs.sh", "run bash bench/jpeg/make_inputs.sh where the Debian mirror is reachable (it fetches the photos once)");
const photos = `${HERE}data/photos/`;
const names = readdirSync(photos).filter((f) => f.endsWith(".jpg")).sort();

// The store: each photo COPIES times, under keys of its own.
const root = ".tmp/hybrid-bench";
rmSync(root, { recursive: true, force: true });
mkdirSync(`${root}/files/p`, { recursive: true });
for (const n of names) for (let i = 0; i < copies; i++) copyFileSync(photos + n, `${root}/files/p/${i}-${n}`);
const address = `sqlite:${root}/photos.sqlite`;
const store = await openStore(address);
await ingest(store, `${root}/files`, { dataset: "photos" });
const ids: string[] = [];
for await (const page of store.scanNat("photos")) ids.push(...page.map((r) => r.id));
await store.close();
rmSync(`${root}/files`, { recursive: true, force: true });
const bytes = names.reduce((n, f) => n + readFileSync(photos + f).length, 0) * copies;

const device = await requestDevice();
const info = deviceInfo(device);
const pre = await createPreprocessor(device, { width: side, height: side, crop: { kind: "random-resized" }, flip: 0.5, seed: 7 });
console.log(`${ids.length} photos (${(bytes / 1e6).toFixed(0)} MB), ${workers} read workers, RandomResizedCrop to ${side}², on ${info ? `${info.backend}: ${info.adapter}${info.cpu ? " (a CPU driver: the GPU's work is the same cores')" : ""}` : "an unknown adapter"}`);

const ways = [
  { name: "cpu decode (decode: { plan })", decode: { plan: pre.options } },
  { name: "hybrid (decode: { plan, hybrid: true })", decode: { plan: pre.options, hybrid: true } },
];
const cpu = new Map<string, { s: number; images: number }>();
const loaders = ways.map((w) => new Loader({ store: address, dataset: "photos", ids, batchSize: 64, workers, decode: w.decode, seed: 7 }));
const epochs = ways.map(() => 0);
try {
  await compare(`Photos to a ${side}² tensor on the GPU, ${ids.length} a round`, { rounds, unit: "images/s" }, ways.map((w, k) => ({
    name: w.name,
    baseline: k === 0,
    work: ids.length,
    run: async () => {
      const c0 = processCpuSeconds();
      let n = 0;
      for await (const b of loaderBatches(loaders[k], pre, epochs[k]++)) n += b.n;
      await device.queue.onSubmittedWorkDone();
      const c1 = processCpuSeconds();
      if (n !== ids.length) throw new Error(`${w.name}: ${n} images of ${ids.length}`);
      if (c0 !== undefined && c1 !== undefined) {
        const was = cpu.get(w.name) ?? { s: 0, images: 0 };
        cpu.set(w.name, { s: was.s + c1 - c0, images: was.images + n });
      }
    },
  })));
  if (cpu.size === ways.length) {
    const per = ways.map((w) => ({ name: w.name, s: (1000 * cpu.get(w.name)!.s) / cpu.get(w.name)!.images }));
    console.log(`\nCPU seconds per 1 000 images (every thread, warm-up included)`);
    for (const p of per) console.log(`  ${p.name.padEnd(44)} ${p.s.toFixed(2)} s   ${(p.s / per[0].s).toFixed(2)}×`);
  }
} finally {
  for (const l of loaders) await l.close();
  pre.destroy();
  device.destroy();
}
