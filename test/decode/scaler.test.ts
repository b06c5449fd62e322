/**
 * NOTE [ Worker scaling ]'s rule on its own (src/decode/scaler.ts), with the machine's CPU
 * times given: each clause of the rule, period by period, where the pools (the decode pool in
 * test/decode/lanes.test.ts, the read workers in test/read/worker_source.test.ts) show it at
 * work on real workers.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { Scaler } from "../../src/decode/scaler.ts";
import { ManualClock } from "../_support/clock.ts";

/** A 4-core machine whose cores are `idle` idle (0 … 4) in each period asked for. */
function machine(): { cpuTimes: () => { cores: number; idleMs: number; totalMs: number }; idle: number } {
  const m = {
    idle: 0,
    t: 0,
    i: 0,
    cpuTimes: () => ((m.t += 1000), (m.i += 250 * m.idle), { cores: 4, idleMs: m.i, totalMs: m.t }),
  };
  return m;
}

test("grows by one when work waits, the consumer waits and half a core is idle; not past max, nor without an idle core", () => {
  const m = machine();
  const s = new Scaler({ min: 1, max: 3, cpuTimes: m.cpuTimes });
  m.idle = 2;
  s.demand(50);
  assert.is(s.period({ workers: 2, busyMs: 500, backlog: true, periodMs: 250 }), 3, "grows");
  s.demand(50);
  assert.is(s.period({ workers: 3, busyMs: 750, backlog: true, periodMs: 250 }), 3, "at max");
  m.idle = 0.25;
  s.demand(50);
  assert.is(s.period({ workers: 2, busyMs: 500, backlog: true, periodMs: 250 }), 2, "no idle half core");
  m.idle = 2;
  s.demand(5);
  assert.is(s.period({ workers: 2, busyMs: 500, backlog: true, periodMs: 250 }), 2, "the consumer waited 2 %");
  s.demand(50);
  assert.is(s.period({ workers: 2, busyMs: 500, backlog: false, periodMs: 250 }), 2, "no backlog");
  assert.ok(s.periods.every((p) => p.consumer), "a consumer reported");
  assert.equal(s.periods.map((p) => p.to), [3, 3, 2, 2, 2]);
});

test("shrinks after four periods with over a worker's worth idle, not three; never under two while the slow lane was used lately", () => {
  const m = machine();
  m.idle = 2;
  const s = new Scaler({ min: 1, max: 4, cpuTimes: m.cpuTimes });
  const idle = () => s.period({ workers: 3, busyMs: 250, backlog: false, periodMs: 250 }); // 2 of 3 idle
  assert.equal([idle(), idle(), idle()], [3, 3, 3], "three periods");
  assert.is(idle(), 2, "the fourth");
  const t = new Scaler({ min: 1, max: 4, cpuTimes: m.cpuTimes });
  t.laneUsed();
  const two = () => t.period({ workers: 2, busyMs: 0, backlog: false, periodMs: 250 });
  assert.equal([two(), two(), two(), two(), two()], [2, 2, 2, 2, 2], "two kept for the lane");
  assert.ok(t.periods.every((p) => p.floor === 2), "its floor");
});

test("the slow lane's floor of two holds for 4 s after the last slow sample, to the millisecond, then the idle rule shrinks", () => {
  const m = machine();
  m.idle = 2;
  const clock = new ManualClock(1000);
  const s = new Scaler({ min: 1, max: 4, cpuTimes: m.cpuTimes, clock });
  const idle = () => s.period({ workers: 2, busyMs: 0, backlog: false, periodMs: 250 }); // two idle workers
  s.laneUsed(); // at 1000 ms
  for (let k = 0; k < 8; k++) assert.is(idle(), 2, `period ${k}, at ${clock.now()} ms: two kept for the lane`);
  clock.advanceTo(4999);
  assert.is(idle(), 2, "3999 ms after the lane was used");
  assert.is(s.periods.at(-1)!.floor, 2);
  clock.advanceTo(5000);
  assert.is(idle(), 1, "4000 ms after: the floor is min again, and idle for four periods, the pool shrinks");
  assert.is(s.periods.at(-1)!.floor, 1);
  assert.is(s.periods.at(-1)!.t, 4000, "periods are stamped on the scaler's clock, from its start");
  s.laneUsed();
  assert.is(s.period({ workers: 2, busyMs: 0, backlog: false, periodMs: 250 }), 2, "the lane again: two kept");
});

test("shrinks when the machine has no idle CPU while the consumer does not wait and the workers have time to spare (training on the same cores)", () => {
  const m = machine();
  m.idle = 0;
  const s = new Scaler({ min: 1, max: 4, cpuTimes: m.cpuTimes });
  const step = () => (s.demand(0), s.period({ workers: 2, busyMs: 300, backlog: false, periodMs: 250 })); // 0.8 idle
  assert.equal([step(), step(), step(), step()], [2, 2, 2, 1]);
  // The same without a consumer that reports: it is assumed to wait, and nothing shrinks.
  const u = new Scaler({ min: 1, max: 4, cpuTimes: m.cpuTimes });
  const quiet = () => u.period({ workers: 2, busyMs: 300, backlog: false, periodMs: 250 });
  assert.equal([quiet(), quiet(), quiet(), quiet(), quiet()], [2, 2, 2, 2, 2]);
  assert.ok(u.periods.every((p) => p.waited === 1 && !p.consumer));
});
