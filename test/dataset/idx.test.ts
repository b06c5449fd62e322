import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { parseIdx, readIdxDataset } from "../../src/dataset/idx.ts";
import { CassetteError } from "../../src/errors.ts";

const FASHION = "/usr/share/datasets/fashion-mnist/";

test("reads the real Fashion-MNIST from Debian's dataset-fashion-mnist", async () => {
  const splits = await readIdxDataset(FASHION);
  assert.equal(splits.map((s) => [s.name, s.count, s.height, s.width]), [["train", 60000, 28, 28], ["t10k", 10000, 28, 28]]);
  const train = splits[0];
  assert.is(train.images.length, 60000 * 28 * 28);
  const perLabel = new Array(10).fill(0);
  for (const l of train.labels) perLabel[l]++;
  assert.equal(perLabel, new Array(10).fill(6000), "Fashion-MNIST's train split has 6000 images per class");
});

test("idx: a truncated file is a malformed-input error naming the sizes", () => {
  const bytes = new Uint8Array([0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3]);
  try {
    parseIdx(bytes, "x.idx");
    assert.unreachable();
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_MALFORMED_INPUT");
    assert.match((e as Error).message, /x\.idx.*needs 8 data bytes after offset 16: the file has 3/);
  }
  assert.throws(() => parseIdx(new Uint8Array([1, 2, 3, 4]), "y"), /idx magic/);
  assert.throws(() => parseIdx(new Uint8Array([0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0]), "z"), /not u8/);
});

test("idx: a missing prefix names what it looked for", async () => {
  try {
    await readIdxDataset("/nonexistent/fmnist-");
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /\/nonexistent\/fmnist-train-images-idx3-ubyte\.gz/);
  }
});
