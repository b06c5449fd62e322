/**
 * The prefetch depth policy on its own (src/schedule/depth.ts), with the clock given: answers
 * and hand-overs carry their times, so what the Loader's tests could only see through real
 * latency (a proxy, sleeps) is checked exactly here: when a link counts as far and unqueued,
 * when a starved consumer grows the window (too shallow for rate × latency), when a probe
 * beyond that goes on, and when it stops.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { DepthPolicy } from "../../src/schedule/depth.ts";
import { Window } from "../../src/schedule/window.ts";

test("depth: the configured one, 8 for auto, then what an epoch learned", () => {
  assert.is(new DepthPolicy(32, 5).depth(), 5);
  const auto = new DepthPolicy(32);
  assert.is(auto.depth(), 8);
  auto.learned(13);
  assert.is(auto.depth(), 13);
  assert.is(auto.rampedUp(), false, "the first epoch ramps");
  assert.is(auto.rampedUp(), true, "later ones start where the link was");
});

test("unqueued: only a far link (≥ 10 ms) whose answers, after a batch of them, all come within 25 % of the fastest", () => {
  const seed = freshSeed();
  const next = rng(seed);
  for (let round = 0; round < 40; round++) {
    const B = randomInt(next, 1, 32), base = randomInt(next, 1, 200);
    const d = new DepthPolicy(B);
    let t = 0;
    for (let i = 0; i <= B; i++) {
      assert.is(d.unqueued(), false, `seed ${seed}: before more than a batch of answers (${i} of ${B})`);
      d.answered(base * (1 + next() * 0.2), (t += 1));
    }
    // Far means the fastest answer seen is 10 ms or more (9 ms answers drawn 20 % slower can be).
    assert.is(d.unqueued(), d.fastestMs() >= 10, `seed ${seed}: ${base} ms answers (fastest ${d.fastestMs()}), within 20 % of each other`);
    d.answered(d.fastestMs() * 1.3 + 1, (t += 1));
    assert.is(d.unqueued(), false, `seed ${seed}: one answer 30 % slower than the fastest is a queue`);
    assert.is(d.fastestMs() <= base * 1.2 && d.fastestMs() >= base, true);
  }
});

test("farAtLeast: a batch of answers to requests sent after the first answer came, the fastest of them at least that far", () => {
  const B = 8;
  const d = new DepthPolicy(B);
  // The first answers: a cold start, 300 ms, sent before anything came back (answered at 300).
  for (let i = 0; i < B; i++) d.answered(300, 300 + i);
  assert.is(d.farAtLeast(100), false, "a cold start alone never makes a link far");
  // Then requests sent after the first answer (at ≥ 300): 120 ms each, in a batch.
  for (let i = 0; i < B - 1; i++) d.answered(120, 500 + i);
  assert.is(d.farAtLeast(100), false, "one answer short of a batch");
  d.answered(120, 600);
  // The fastest answer seen is 120, the smoothed one still near 300: the path shows a queue.
  assert.is(d.unqueued(), false);
  for (let i = 0; i < 40; i++) d.answered(120, 700 + i);
  assert.is(d.farAtLeast(100), true, "a batch of later answers, ≥ 100 ms, no queue");
  assert.is(d.farAtLeast(150), false, "not that far");
});

/** Hands over `n` batches of `B` at `every` ms apart from `t`, answering each request after `ms`; returns the time after. */
function steady(d: DepthPolicy, w: Window, B: number, n: number, t: number, every: number, ms: number): number {
  for (let i = 0; i < n; i++) {
    t += every;
    for (let k = 0; k < B; k++) d.answered(ms, t);
    d.handedOver(t, B);
    w.consumed();
  }
  return t;
}

test("starved: a window shallower than twice rate × latency grows by a batch; a deep one probes 25 % and stops when the rate does not rise 5 %", () => {
  const B = 16;
  // 1 batch per ms taken (16 samples/ms), 20 ms answers: twice what the link holds is 640
  // samples, 40 batches; a window of 8 is too shallow.
  const d = new DepthPolicy(B);
  const w = new Window(B, 8, 8, 200);
  let t = steady(d, w, B, 20, 0, 1, 20);
  let batches = 20;
  assert.is(w.prefetch, 8);
  d.starved(w, batches);
  assert.is(w.prefetch, 9, "too shallow: one more batch");
  while (w.prefetch < 41) {
    for (let i = 0; i < 64; i++) w.consumed(); // the window fills to its new ceiling
    d.starved(w, batches);
  }
  assert.is(w.prefetch, 41, "grown one batch at a time up to twice the link's contents (40 batches) and one");
  // Beyond: probes of a quarter (10 batches), judged 16 hand-overs later at the same rate.
  t = steady(d, w, B, 16, t, 1, 20), batches += 16;
  for (let i = 0; i < 200; i++) w.consumed();
  d.starved(w, batches);
  assert.is(w.prefetch, 51, "a probe: 25 % deeper");
  for (let i = 0; i < 200; i++) w.consumed();
  d.starved(w, batches + 3);
  assert.is(w.prefetch, 51, "no second probe before the first is judged (16 batches)");
  t = steady(d, w, B, 16, t, 1, 20), batches += 16;
  for (let i = 0; i < 200; i++) w.consumed();
  d.starved(w, batches);
  assert.is(w.prefetch, 51, "the rate did not rise ≥ 5 %: a plateau, no more probes");
  t = steady(d, w, B, 16, t, 1, 20), batches += 16;
  for (let i = 0; i < 200; i++) w.consumed();
  d.starved(w, batches);
  assert.is(w.prefetch, 51, "and no probe later either");
  // A link that gets farther still grows the window: the plateau stops probes, not latency's needs.
  t = steady(d, w, B, 16, t, 1, 40), batches += 16;
  d.starved(w, batches);
  assert.is(w.prefetch, 51, "40 ms answers do not lower the fastest seen (20 ms): still deep enough");
  // The same, but the probe pays: the rate after it rises 10 %.
  const d2 = new DepthPolicy(B), w2 = new Window(B, 41, 41, 200);
  let t2 = steady(d2, w2, B, 16, 0, 1, 20), b2 = 16;
  for (let i = 0; i < 200; i++) w2.consumed();
  d2.starved(w2, b2);
  assert.is(w2.prefetch, 51);
  t2 = steady(d2, w2, B, 16, t2, 1 / 1.1, 20), b2 += 16;
  for (let i = 0; i < 200; i++) w2.consumed();
  d2.starved(w2, b2);
  assert.is(w2.prefetch, 64, "a probe that paid: another 25 %");
});
