/**
 * The prefetch window on its own (src/schedule/window.ts): the ramp ("request 5 for every 4
 * consumed"), the faster ramp while answers show no queue, the ceiling and its growth when
 * starved, and widen/unwiden, against the rule written out here, on random sequences.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { Window } from "../../src/schedule/window.ts";

test("the ramp: start batches, one more for every 4 consumed (two per batch while unqueued), never past the ceiling", () => {
  for (let round = 0; round < 30; round++) {
    const seed = freshSeed();
    const next = rng(seed);
    const B = randomInt(next, 1, 64), prefetch = randomInt(next, 1, 40), start = randomInt(next, 1, 8);
    let unqueued = false;
    const w = new Window(B, prefetch, start, prefetch, () => unqueued);
    let credit = 0; // quarter batches, as the rule counts them
    for (let k = 0; k < 200; k++) {
      const want = Math.min(prefetch, Math.min(start, prefetch) + Math.floor(credit / 4));
      assert.is(w.batches(), want, `after ${k} batches (B ${B}, prefetch ${prefetch}, start ${start}, seed ${seed})`);
      assert.is(w.samples(), want * B);
      unqueued = next() < 0.3;
      w.consumed();
      credit += unqueued ? 8 : 1;
    }
    assert.is(w.batches(), prefetch, "the ramp ends at the ceiling");
  }
});

test("starved: the ceiling grows by the step only while the window is full and under maxPrefetch", () => {
  const w = new Window(8, 4, 2, 10);
  assert.is(w.starved(), false, "not full yet (2 of 4 batches): the ramp, not the ceiling, is short");
  for (let k = 0; k < 8; k++) w.consumed(); // 2 + 2 = 4: full
  assert.is(w.batches(), 4);
  assert.is(w.starved(3), true);
  assert.is(w.prefetch, 7);
  assert.is(w.batches(), 4, "the window follows at the ramp's pace, not at once");
  for (let k = 0; k < 12; k++) w.consumed();
  assert.is(w.batches(), 7);
  assert.is(w.starved(5), true);
  assert.is(w.prefetch, 10, "never past maxPrefetch");
  assert.is(new Window(8, 4, 4).starved(), false, "a fixed depth (maxPrefetch = prefetch) never grows");
});

test("widen starts the window at a first window's batches (within maxPrefetch); unwiden undoes it", () => {
  const w = new Window(16, 4, 2, 40);
  w.widen(25);
  assert.is(w.batches(), 25);
  assert.is(w.prefetch, 25);
  w.widen(100);
  assert.is(w.batches(), 40, "capped at maxPrefetch");
  w.unwiden();
  assert.is(w.batches(), 2, "back to the start it had");
  assert.is(w.prefetch, 4);
  const small = new Window(16, 4, 2, 4);
  small.widen(30);
  assert.is(small.batches(), 4, "a fixed depth is not widened past itself");
});
