import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, rng } from "../_support/random.ts";
import { type Lane, RateChooser } from "../../src/source/cassandra/connection_choice.ts";

/** A connection that completes `perMs` requests per ms of fake time (fractions carried over). */
class FakeLane implements Lane {
  inFlight = 0;
  credit = 0;
  done = 0;
  perMs: number;
  constructor(perMs: number) {
    this.perMs = perMs;
  }
  getInFlight(): number {
    return this.inFlight;
  }
  tick(): void {
    this.credit = Math.min(this.credit + this.perMs, Math.max(this.perMs, 1));
    const n = Math.min(this.inFlight, Math.floor(this.credit));
    this.inFlight -= n, this.credit -= n, this.done += n;
  }
}

/** Keeps `window` requests in flight over `lanes` for `ms` of fake time; returns each lane's mean in-flight share. */
function simulate(lanes: FakeLane[], window: number, ms: number, choose: (t: number) => Lane | undefined) {
  const held = lanes.map(() => 0);
  for (let t = 0; t < ms; t++) {
    for (const l of lanes) l.tick();
    let total = lanes.reduce((s, l) => s + l.inFlight, 0);
    while (total < window) {
      const l = choose(t) as FakeLane | undefined;
      if (!l) break;
      l.inFlight++, total++;
    }
    if (t >= ms / 2) lanes.forEach((l, i) => (held[i] += l.inFlight));
  }
  const sum = held.reduce((a, b) => a + b, 0);
  return held.map((h) => h / sum);
}

test("a congested lane holds requests in proportion to its rate, not a fair share", () => {
  const seed = freshSeed();
  const r = rng(seed);
  // Three healthy lanes and one 30× slower, in a random position.
  const slowAt = Math.floor(r() * 4);
  const lanes = [0, 1, 2, 3].map((i) => new FakeLane(i === slowAt ? 1 / 10 : 3));
  let now = 0;
  const chooser = new RateChooser(() => now);
  const share = simulate(lanes, 400, 4000, (t) => (now = t, chooser.pick(lanes, 2048)));
  const rateShare = lanes[slowAt].perMs / lanes.reduce((s, l) => s + l.perMs, 0); // ≈ 1 %
  assert.ok(share[slowAt] < 3 * rateShare + 0.01, `seed ${seed}: the slow lane held ${(100 * share[slowAt]).toFixed(1)} % of the window (its rate share ${(100 * rateShare).toFixed(1)} %)`);
  assert.ok(lanes[slowAt].done > 0, "the slow lane still gets work");

  // The driver's rule (fewer in flight of two round-robin neighbours) gives it about a quarter.
  const lanes2 = [0, 1, 2, 3].map((i) => new FakeLane(i === slowAt ? 1 / 10 : 3));
  let k = 0;
  const share2 = simulate(lanes2, 400, 4000, () => {
    const a = lanes2[k++ % 4], b = lanes2[k % 4];
    return b.inFlight < a.inFlight ? b : a;
  });
  assert.ok(share2[slowAt] > 0.15, `seed ${seed}: the driver's rule held ${(100 * share2[slowAt]).toFixed(1)} % on the slow lane`);
});

test("equal lanes share evenly; a lane's measured rate is its completions per ms", () => {
  const lanes = [0, 1, 2].map(() => new FakeLane(2));
  let now = 0;
  const chooser = new RateChooser(() => now);
  const share = simulate(lanes, 300, 2000, (t) => (now = t, chooser.pick(lanes, 2048)));
  for (const s of share) assert.ok(Math.abs(s - 1 / 3) < 0.05, `shares ${share}`);
  for (const l of lanes) assert.ok(Math.abs(chooser.rate(l)! - 2) < 0.2, `rate ${chooser.rate(l)}`);
});

test("limits: never past maxInFlight, undefined when all are full, a retry avoids its previous lane, an idle lane is taken", () => {
  const lanes = [new FakeLane(1), new FakeLane(1)];
  const chooser = new RateChooser(() => 0);
  lanes[0].inFlight = 5, lanes[1].inFlight = 4;
  assert.is(chooser.pick(lanes, 5), lanes[1]);
  lanes[1].inFlight = 5;
  assert.is(chooser.pick(lanes, 5), undefined);
  lanes[0].inFlight = 0, lanes[1].inFlight = 3;
  assert.is(chooser.pick(lanes, 5), lanes[0], "idle lane first");
  assert.is(chooser.pick(lanes, 5, lanes[0]), lanes[1], "previous avoided");
  assert.is(chooser.pick([lanes[0]], 5, lanes[0]), lanes[0], "unless it is the only one");
});

test("congestion that moves onto a fast lane: once it is silent with work in flight, requests go to the lane that recovered, not back onto it", () => {
  const seed = freshSeed();
  const r = rng(seed);
  const stuckLane = new FakeLane(3), other = new FakeLane(3);
  const lanes = r() < 0.5 ? [stuckLane, other] : [other, stuckLane];
  let now = 0;
  const chooser = new RateChooser(() => now);
  // Phase 1: the other lane is congested (nothing completes), so the window goes to this one.
  other.perMs = 0;
  simulate(lanes, 200, 1000, (t) => (now = t, chooser.pick(lanes, 2048)));
  // Phase 2: the congestion moves. Nothing is picked for 150 ms (the window is full of samples
  // stuck on the lane that just turned slow), then 100 of them are asked again at once.
  stuckLane.perMs = 0, other.perMs = 3;
  for (let t = 1000; t < 1150; t++) (now = t), lanes.forEach((l) => l.tick());
  const before = stuckLane.inFlight;
  let onto = 0;
  for (let k = 0; k < 100; k++) {
    const l = chooser.pick(lanes, 2048) as FakeLane;
    if (l === stuckLane) onto++;
    l.inFlight++;
  }
  assert.ok(before >= 50, `seed ${seed}: the window was on the lane that turned slow: ${before}`);
  assert.ok(onto <= 5, `seed ${seed}: ${onto} of 100 requests asked again went back onto the lane silent for 150 ms`);
});
