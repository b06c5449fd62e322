/** Runs `train.ts … --json` in this runtime and returns its JSON document (benchmarks that compare whole training runs). */
import { spawnSync } from "node:child_process";
import { runtime } from "../../runtime-adapters/index.ts";
import { openStore } from "../../src/source/open.ts";

export interface TrainEpoch {
  epoch: number;
  seconds: number;
  imagesPerSec: number;
  loss: number;
  testAccuracy: number;
  waitShare: number;
  outOfPlanShare?: number;
}

/** `cpus`: run it on those CPUs only (taskset), e.g. "0" while the store's server has the others. */
export function runTrain(argv: string[], cpus?: string): { model: string; epochs: TrainEpoch[]; [k: string]: unknown } {
  const [cmd0, ...rest0] = runtime.scriptCommand("train.ts", [...argv, "--json"]);
  const [cmd, ...rest] = cpus ? ["taskset", "-c", cpus, cmd0, ...rest0] : [cmd0, ...rest0];
  const r = spawnSync(cmd, rest, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 3_600_000, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`train.ts ${argv.join(" ")} exited ${r.status}:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

/**
 * Makes the benchmark's store if it is absent: train.ts makes only its default store (a typo in
 * `--store` must not fill a new one), then ingests Fashion-MNIST into whichever store it is given.
 */
export async function ensureStore(address: string): Promise<void> {
  const store = await openStore(address, { create: true });
  await store.close();
}
