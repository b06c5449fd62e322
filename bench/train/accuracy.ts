/**
 * Accuracy run: trains a named model on the whole of Fashion-MNIST (no I/O: tensors in GPU
 * memory) and prints one JSON line per epoch; the figures in bench/RESULTS.md "Training
 * kernels" come from it.
 *
 *   bun bench/train/accuracy.ts [--model cnn] [--epochs 10] [--batch 128] [--lr 0.001] [--seed 0] [--limit N] [--save FILE]
 */
import { benchArgs } from "../_lib/args.ts";
import { deviceInfo, requestDevice } from "../../src/gpu/device.ts";
import { loadFashionMnist } from "../../src/dataset/fashion_mnist.ts";
import { trainInGpu } from "../../src/train/train_in_gpu.ts";

const args = benchArgs({
  program: "bench/train/accuracy.ts",
  usage: "usage: bun bench/train/accuracy.ts [--model cnn] [--epochs 10] [--batch 128] [--lr 0.001] [--seed 0] [--limit N] [--save FILE]",
  valued: ["model", "epochs", "batch", "lr", "seed", "limit", "save"],
});
const model = args.str("model", "cnn"), epochs = args.int("epochs", 10), batch = args.int("batch", 128);
const lr = args.num("lr", 0.001), seed = args.int("seed", 0, 0);
const limit = args.has("limit") ? args.int("limit", 0) : undefined;
const save = args.str("save");

const device = await requestDevice();
console.log(JSON.stringify({ device: deviceInfo(device), model, epochs, batch, lr, seed, limit: limit ?? null }));
const { train, test } = await loadFashionMnist(undefined, limit);
const r = await trainInGpu(device, {
  model, train, test, epochs, batch, seed, optimizer: { kind: "adam", lr }, keepModel: !!save,
  onEpoch: (e) => console.log(JSON.stringify(e)),
});
if (save && r.model) {
  await r.model.save(save);
  await r.model.destroy();
}
device.destroy();
