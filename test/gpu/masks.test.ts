/**
 * Blob labels on the GPU (src/gpu/preprocess.ts, shaders/preprocess/mask_nearest.wgsl): each
 * mask is cropped and flipped with its image and resampled by nearest neighbour, checked
 * against the CPU reference on fresh random masks, crops and flips. A mask at another size
 * than its image gets the same box in its own pixels.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { testDevice } from "../_support/gpu.ts";
import { freshSeed, randomBytes, randomInt, rng } from "../_support/random.ts";
import { maskNearestRef, neighbourhood } from "../reference/mask_nearest.ts";
import { readBuffer } from "../../src/gpu/buffers.ts";
import { createPreprocessor } from "../../src/gpu/preprocess.ts";
import type { DecodedImage } from "../../src/gpu/pack.ts";
import { CassetteError } from "../../src/errors.ts";

function randomImage(next: () => number, width: number, height: number, channels: number): DecodedImage {
  return { data: randomBytes(next, width * height * channels), width, height, channels };
}

test("masks: cropped and flipped with their images, nearest neighbour, as the CPU reference on random masks", async () => {
  const device = await testDevice();
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 3; round++) {
    const W = randomInt(next, 1, 24), H = randomInt(next, 1, 24);
    const pre = await createPreprocessor(device, {
      width: W, height: H, channels: 1, crop: round === 0 ? { kind: "resize" } : { kind: "random-resized", scale: [0.1, 1] }, flip: 0.5, seed: randomInt(next, 0, 1000),
    });
    const n = randomInt(next, 1, 6);
    const images: DecodedImage[] = [], masks: DecodedImage[] = [];
    for (let i = 0; i < n; i++) {
      const w = randomInt(next, 1, 90), h = randomInt(next, 1, 90);
      images.push(randomImage(next, w, h, 3));
      // Mostly the image's size; sometimes half of it (a mask stored smaller); 1, 3 or 4 channels.
      const half = next() < 0.3;
      masks.push(randomImage(next, half ? Math.max(1, w >> 1) : w, half ? Math.max(1, h >> 1) : h, [1, 3, 4][randomInt(next, 0, 2)]));
    }
    const ids = images.map((_, i) => `mask-${seed}-${round}-${i}`);
    const batch = await pre.run(images, { epoch: round, ids, masks });
    assert.ok(batch.masks, `masks out (seed ${seed})`);
    assert.equal(batch.masks!.shape, [n, H, W]);
    const got = new Uint32Array(await readBuffer(device, batch.masks!.buffer, batch.masks!.bytes));
    let flipped = 0;
    for (let i = 0; i < n; i++) {
      const p = batch.plans[i], mp = batch.masks!.plans[i];
      assert.is(mp.mirror, p.mirror, "a mask is mirrored with its image");
      flipped += +p.mirror;
      const sx = masks[i].width / images[i].width;
      assert.ok(Math.abs(mp.x - p.x * sx) < 1e-9 && Math.abs(mp.w - p.w * sx) < 1e-9, "the image's box in the mask's pixels");
      const ref = maskNearestRef(masks[i], mp, W, H);
      for (let k = 0; k < W * H; k++) {
        const g = got[i * W * H + k];
        if (g === ref.values[k]) continue;
        // Only where the source position lies on a pixel boundary may f32 rounding pick a neighbour.
        assert.ok(ref.alt[k] >= 0 && neighbourhood(masks[i], mp, W, H, k % W, Math.floor(k / W)).has(g),
          `mask ${i} pixel ${k % W},${Math.floor(k / W)}: ${g}, want ${ref.values[k]} (seed ${seed}, round ${round})`);
      }
    }
    pre.destroy();
    void flipped;
  }
});

test("masks: one mask per image, or a named error", async () => {
  const device = await testDevice();
  const pre = await createPreprocessor(device, { width: 4, height: 4, channels: 1 });
  const img = { data: new Uint8Array(16), width: 4, height: 4, channels: 1 };
  try {
    await pre.run([img, img], { masks: [img] });
    assert.unreachable("one mask for two images");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.match((e as Error).message, /one mask per image: current value is 1 masks for 2 images/);
  }
  pre.destroy();
});
