/**
 * The augmentation draws (src/decode/augment.ts): pure functions of (seed, epoch, id), each
 * op from its own stream so the crops and flips stay those of the same seed, distributions as
 * torchvision's get_params draw them, and options checked with the option named.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { type AugmentOptions, checkAugment, drawAugment, MAX_MEANS, MAX_STEPS } from "../../src/decode/augment.ts";
import { planImage, type PlanOptions } from "../../src/decode/crop.ts";
import { CassetteError } from "../../src/errors.ts";

const FULL: AugmentOptions = {
  trivial: true,
  jitter: { brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1 },
  solarize: { p: 0.5 },
  posterize: { p: 0.5 },
  erase: { p: 0.5 },
};

test("crops and flips are those of the same seed without augmentation; the draws repeat for the same (seed, epoch, id)", () => {
  const seed = freshSeed();
  const o: PlanOptions = { width: 64, height: 48, crop: { kind: "random-resized" }, flip: 0.5, seed };
  for (let i = 0; i < 200; i++) {
    const id = `6ceecba5-0000-5000-8000-${String(i).padStart(12, "0")}`;
    const plain = planImage(500, 375, o, 3, id);
    const aug = planImage(500, 375, { ...o, augment: FULL }, 3, id);
    assert.equal({ ...aug, augment: undefined }, { ...plain, augment: undefined }, `seed ${seed} sample ${i}`);
    assert.equal(planImage(500, 375, { ...o, augment: FULL }, 3, id), aug);
    // One option's draws do not move another's: the jitter's steps are the same without erasing.
    const noErase = planImage(500, 375, { ...o, augment: { ...FULL, erase: undefined } }, 3, id);
    assert.equal(noErase.augment?.steps ?? [], aug.augment?.steps ?? []);
  }
});

test("draws differ across epochs and ids, and follow ColorJitter's ranges, order and probability", () => {
  const seed = freshSeed();
  const o: AugmentOptions = { jitter: { brightness: [0.5, 1.5], contrast: 0.3, saturation: [0, 2], hue: 0.2, p: 0.7 } };
  const orders = new Set<string>();
  let applied = 0;
  const n = 3000;
  for (let i = 0; i < n; i++) {
    const a = drawAugment(o, seed, 0, i, 8, 8);
    if (!a) continue;
    applied++;
    assert.equal(a.steps.length, 4);
    orders.add(a.steps.map((s) => s.op[0]).join(""));
    const f = Object.fromEntries(a.steps.map((s) => [s.op, s.factor]));
    assert.ok(f.brightness >= 0.5 && f.brightness < 1.5 && f.contrast >= 0.7 && f.contrast < 1.3, JSON.stringify(f));
    assert.ok(f.saturation >= 0 && f.saturation < 2 && f.hue >= -0.2 && f.hue < 0.2, JSON.stringify(f));
  }
  assert.ok(Math.abs(applied / n - 0.7) < 0.04, `applied ${applied / n} (seed ${seed})`);
  assert.is(orders.size, 24, `orders seen: ${orders.size} (seed ${seed})`);
  const always = { jitter: { ...o.jitter, p: 1 } };
  assert.not.equal(drawAugment(always, seed, 0, 1, 8, 8), drawAugment(always, seed, 1, 1, 8, 8));
  assert.not.equal(drawAugment(always, seed, 0, 1, 8, 8), drawAugment(always, seed, 0, 2, 8, 8));
  // A value fixed here guards against silent changes of the draws across versions and runtimes.
  assert.equal(drawAugment({ jitter: { brightness: 0.4, hue: 0.1 }, erase: { p: 1 } }, 7, 0, 42, 32, 32), {
    steps: [{ op: "brightness", factor: 1.0955546339973807 }, { op: "hue", factor: -0.05128010390326381 }],
    erase: { x: 0, y: 10, w: 28, h: 12, value: [0, 0, 0] },
  });
});

test("TrivialAugment picks one op of its list uniformly, with TrivialAugmentWide's magnitudes", () => {
  const seed = freshSeed();
  const counts = new Map<string, number>();
  const n = 6000;
  for (let i = 0; i < n; i++) {
    const a = drawAugment({ trivial: true }, seed, 2, i, 8, 8);
    const s = a?.steps[0];
    const name = s?.op ?? (a?.warp ? "geometric" : "identity");
    counts.set(name, (counts.get(name) ?? 0) + 1);
    if (!s) continue;
    assert.equal(a!.steps.length, 1);
    assert.is(a!.warp, undefined);
    if (s.op === "posterize") assert.ok(Number.isInteger(s.factor) && s.factor >= 2 && s.factor <= 8);
    else if (s.op === "autocontrast") assert.is(s.factor, 0);
    else if (s.op === "solarize") assert.ok(s.factor >= 0 && s.factor <= 1 && Number.isInteger(Math.round(s.factor * 30 * 1e6) / 1e6));
    else {
      const m = Math.abs(s.factor - 1);
      assert.ok(m <= 0.99 + 1e-12 && Math.abs((m / 0.99) * 30 - Math.round((m / 0.99) * 30)) < 1e-9, `${s.op} ${s.factor}`);
    }
  }
  assert.equal([...counts.keys()].sort(), ["autocontrast", "brightness", "contrast", "geometric", "identity", "posterize", "saturation", "sharpness", "solarize"]);
  // Thirteen ops, five of them geometric (shear x, y, translate x, y, rotate).
  for (const [k, c] of counts) assert.ok(Math.abs(c / n - (k === "geometric" ? 5 : 1) / 13) < 0.03, `${k}: ${c / n} (seed ${seed})`);
  const only = drawAugment({ trivial: { ops: ["solarize"] } }, seed, 0, 5, 8, 8);
  assert.is(only?.steps[0].op, "solarize");
});

test("erasing follows RandomErasing's box: inside, area share within scale, p respected; chains stay within the table's room", () => {
  const seed = freshSeed();
  let erased = 0;
  const n = 3000;
  for (let i = 0; i < n; i++) {
    const a = drawAugment({ ...FULL, trivial: { ops: ["contrast"] }, jitter: { contrast: 0.5 }, erase: { p: 0.4, scale: [0.1, 0.3], ratio: [0.5, 2] } }, seed, 0, i, 50, 40);
    assert.ok(a!.steps.length <= MAX_STEPS);
    assert.ok(a!.steps.filter((s) => s.op === "contrast").length <= MAX_MEANS);
    const e = a!.erase;
    if (!e) continue;
    erased++;
    assert.ok(e.x >= 0 && e.y >= 0 && e.x + e.w <= 50 && e.y + e.h <= 40, JSON.stringify(e));
    const share = (e.w * e.h) / 2000;
    assert.ok(share > 0.08 && share < 0.33, `share ${share}`);
    assert.equal(e.value, [0, 0, 0]);
  }
  assert.ok(Math.abs(erased / n - 0.4) < 0.04, `erased ${erased / n} (seed ${seed})`);
  assert.is(drawAugment({ erase: { p: 0 } }, seed, 0, 1, 50, 40), undefined);
  // A box that cannot fit in ten tries (the whole image's area) erases nothing, as torchvision's.
  assert.is(drawAugment({ erase: { p: 1, scale: [1, 1], ratio: [1, 1] } }, seed, 0, 1, 50, 40), undefined);
});

test("bad options are named, with their value", () => {
  const cases: [AugmentOptions, RegExp][] = [
    [{ jitter: { brightness: -1 } }, /augment\.jitter\.brightness' must be a number ≥ 0: current value is -1/],
    [{ jitter: { hue: 0.7 } }, /augment\.jitter\.hue' must be a number from 0 to 0\.5/],
    [{ jitter: { contrast: [2, 1] } }, /augment\.jitter\.contrast' must be \[lo, hi\]/],
    [{ erase: { p: 2 } }, /augment\.erase\.p' must be a probability/],
    [{ erase: { value: [1, 2] } }, /augment\.erase\.value' must be a number or 3 numbers/],
    [{ posterize: { bits: 9 } }, /augment\.posterize\.bits'/],
    [{ trivial: { ops: ["equalize" as "identity"] } }, /augment\.trivial\.ops' must name some of identity, shearX/],
    [{ rotate: 30, affine: { degrees: 10 } }, /'augment\.rotate' and 'augment\.affine' are one op/],
    [{ affine: { shear: [10, 5] } }, /augment\.affine\.shear' must be s, \[lo, hi\]/],
    [{ affine: { translate: [0.5, 2] } }, /augment\.affine\.translate' must be \[x, y\]/],
    [{ fill: 2 }, /augment\.fill' must be a number from 0 to 1/],
    [{ sharpness: 1 } as unknown as AugmentOptions, /'augment' has no option 'sharpness'/],
    [{ blur: { kernel: 4 } }, /augment\.blur\.kernel' must be an odd whole number/],
    [{ blur: { kernel: 3, sigma: [0, 1] } }, /augment\.blur\.sigma' must be \[lo, hi\] with 0 < lo/],
  ];
  for (const [o, re] of cases) {
    try {
      checkAugment(o, "create a preprocessor", 3);
      assert.unreachable(JSON.stringify(o));
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.match((e as Error).message, re);
    }
  }
  checkAugment(FULL, "create a preprocessor", 3);
});

test("geometric draws: TrivialAugment's magnitudes as torchvision's matrices, RandomAffine's ranges", () => {
  const seed = freshSeed();
  for (let i = 0; i < 500; i++) {
    const a = drawAugment({ trivial: { ops: ["rotate", "translateX", "shearY"] } }, seed, 0, i, 40, 30)!;
    const [m0, m1, m2, m3, m4, m5] = a.warp!.ops[0];
    assert.equal(a.warp!.fill, [0, 0, 0]);
    const det = m0 * m4 - m1 * m3;
    assert.ok(Math.abs(det - 1) < 1e-9, `area kept: det ${det}`);
    if (m1 === 0 && m3 === 0 && m0 === 1 && m4 === 1) {
      // A translation along x: whole pixels up to 32, none along y.
      assert.ok(Number.isInteger(m2) && Math.abs(m2) <= 32 && m5 === 0, `${m2} ${m5}`);
    } else if (m0 === 1 && m1 === 0 && m4 === 1) {
      // A shear along y about the top-left corner: the corner (−20, −15 from the centre) stays.
      assert.ok(Math.abs(m3 * -20 + m4 * -15 + m5 - -15) < 1e-9, "corner kept");
      assert.ok(Math.abs(m3) <= 0.99 + 1e-12);
    } else {
      // A rotation about the centre by at most 135°.
      assert.ok(Math.abs(m2) < 1e-9 && Math.abs(m5) < 1e-9 && Math.abs(m0 - m4) < 1e-12 && Math.abs(m1 + m3) < 1e-12);
      assert.ok(Math.acos(Math.max(-1, Math.min(1, m0))) <= (135 * Math.PI) / 180 + 1e-9);
    }
  }
  for (let i = 0; i < 300; i++) {
    const a = drawAugment({ affine: { degrees: [10, 20], scale: [0.5, 0.8], translate: [0.1, 0.2] }, fill: [0.1, 0.2, 0.3] }, seed, 0, i, 50, 40)!;
    const [m0, m1, m2, m3, m4, m5] = a.warp!.ops[0];
    const det = m0 * m4 - m1 * m3, scale = 1 / Math.sqrt(det);
    assert.ok(scale >= 0.5 - 1e-9 && scale <= 0.8 + 1e-9, `scale ${scale}`);
    const angle = (Math.atan2(m1, m0) * 180) / Math.PI; // the inverse of R(θ) is [cos θ, sin θ; −sin θ, cos θ]
    assert.ok(angle >= 10 - 1e-6 && angle <= 20 + 1e-6, `angle ${angle}`);
    // The inverse's shift is −M·t: the drawn translation is whole pixels within 10 % and 20 %.
    const tx = -(m4 * m2 - m1 * m5) / det, ty = -(-m3 * m2 + m0 * m5) / det;
    assert.ok(Math.abs(tx - Math.round(tx)) < 1e-9 && Math.abs(tx) <= 5 + 1e-9 && Math.abs(ty - Math.round(ty)) < 1e-9 && Math.abs(ty) <= 8 + 1e-9, `${tx} ${ty}`);
    assert.equal(a.warp!.fill, [0.1, 0.2, 0.3]);
  }
});

test("a seed's draws are spread: brightness factors fill their range", () => {
  const next = rng(freshSeed());
  const seed = Math.floor(next() * 1e6);
  const bins = new Array(10).fill(0);
  for (let i = 0; i < 2000; i++) {
    const f = drawAugment({ jitter: { brightness: [0, 1] } }, seed, 0, i, 4, 4)!.steps[0].factor;
    bins[Math.floor(f * 10)]++;
  }
  for (const b of bins) assert.ok(b > 120 && b < 280, bins.join(","));
});
