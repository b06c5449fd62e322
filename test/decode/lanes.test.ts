import * as assert from "uvu/assert";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { createDecodePool, type JpegDecodePool, type ScalePeriod } from "../../src/decode/pool.ts";
import type { Image } from "../../src/decode/decoder.ts";

const SPIN = new URL("../fixtures/transforms/spin.ts", import.meta.url).href;
const nothing = new Uint8Array(1);
const tmp = mkdtempSync(join(tmpdir(), "cassette-lanes-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function spinPool(o: { workers?: number; slowLane?: boolean; perWorker?: number; autoscale?: boolean; minWorkers?: number; maxWorkers?: number } = {}): Promise<JpegDecodePool> {
  return createDecodePool({ perWorker: 4, ...o, transform: { url: SPIN, options: { byLabel: true } } });
}

/** A job spinning `ms` (its label); resolves to [its number, when it finished]. */
function job(pool: JpegDecodePool, n: number, ms: number): Promise<[number, number]> {
  return pool.prepare({ bytes: nothing, decode: false, id: `job${n}`, label: ms }).then((img) => {
    assert.is((img as Image).data[0], ms & 255, `job ${n}: its own answer`);
    return [n, performance.now()];
  });
}

async function warm(pool: JpegDecodePool, ms: number, n = 64): Promise<void> {
  await Promise.all(Array.from({ length: n }, (_, i) => job(pool, -1 - i, ms)));
}

/**
 * One slow job among fast ones: which fast ones finished after it. With the slow lane, the
 * slow job spins until every fast one has answered (a file the test makes then; at most 60 s),
 * so that "none waits for it" is an order of events whatever the machine's load; without it,
 * the slow job spins 400 ms and the jobs queued behind it wait.
 */
async function slowAmongFast(slowLane: boolean): Promise<{ late: number; fast: number; stats: ReturnType<JpegDecodePool["stats"]> }> {
  const signal = join(tmp, `fast-done-${slowLane}`);
  const pool = slowLane
    ? await createDecodePool({ perWorker: 4, workers: 2, slowLane, transform: { url: SPIN, options: { slowIds: ["job0"], slowMs: [60_000], fastMs: 2, slowUntilFile: signal } } })
    : await spinPool({ workers: 2, slowLane });
  try {
    await warm(pool, 2);
    // The slow job first, so that fast ones are queued behind it in its worker.
    const slow = job(pool, 0, 400);
    const fast = Array.from({ length: 40 }, (_, i) => job(pool, i + 1, 2));
    const done = await Promise.all(fast);
    writeFileSync(signal, "");
    const [, slowAt] = await slow;
    return { late: done.filter(([, at]) => at > slowAt).length, fast: done.length, stats: pool.stats() };
  } finally {
    pool.close();
  }
}

test("slow lane: a job past the deadline keeps running, the jobs queued behind it move to the other worker and finish first; each answered once", async () => {
  const on = await slowAmongFast(true);
  assert.is(on.late, 0, `with the slow lane no fast job waits for the slow one (${JSON.stringify(on.stats)})`);
  assert.ok(on.stats.slowLane >= 1 && on.stats.stolen >= 1, `the slow job was moved and its followers taken back: ${JSON.stringify(on.stats)}`);
  assert.ok(on.stats.thresholdMs >= 1 && on.stats.thresholdMs < 50, `deadline learned from 2 ms jobs: ${on.stats.thresholdMs}`);
  const off = await slowAmongFast(false);
  assert.ok(off.late >= 1, `without it, the jobs queued behind the slow one wait for it (${off.late} late)`);
  assert.is(off.stats.stolen, 0);
});

test("slow lane: two busy workers keep their queues through short pauses (nothing taken back while neither has run dry); each job answered once", async () => {
  // 3 ms a job, one in eight 15 ms (past the ~6 ms deadline, as a collector's pause or the
  // machine's other work is), 8 jobs sent ahead to each worker: both hold deep queues, so a slow
  // job is no reason to move the other jobs to a worker as busy. (Before, each moved its
  // worker's whole queue: ~7 jobs each time, a copy of each.)
  const ids = Array.from({ length: 240 }, (_, i) => `job${i}`);
  const pool = await createDecodePool({ perWorker: 8, workers: 2, transform: { url: SPIN, options: { slowIds: ids.filter((_, i) => i % 8 === 3), slowMs: [15], fastMs: 3 } } });
  try {
    const run = () => Promise.all(ids.map((id, i) => pool.prepare({ bytes: nothing, decode: false, id, label: i }).then((img) => (img as Image).data[0])));
    await run(); // the deadline learned
    const before = pool.stats();
    const got = await run();
    assert.equal(got, ids.map((_, i) => i & 255), "each job its own answer, once");
    const after = pool.stats();
    // At the run's end one worker runs dry while the other still holds jobs: half of those move.
    // A loaded machine can starve a worker mid-run too; whole queues at every slow job moved ~200.
    assert.ok(after.stolen - before.stolen <= ids.length / 4, `taken back between busy workers: ${after.stolen - before.stolen} of ${ids.length} (${JSON.stringify(after)})`);
  } finally {
    pool.close();
  }
});

test("slow lane: the deadline follows the distribution when it shifts", async () => {
  const pool = await spinPool({ workers: 2 });
  try {
    await warm(pool, 1, 128);
    const before = pool.stats().thresholdMs;
    await warm(pool, 30, 200);
    const after = pool.stats().thresholdMs;
    // Spins last at least their time, longer on a loaded machine (other tests, other runtimes):
    // the deadline must move by an order of magnitude, not hit exact figures.
    assert.ok(after >= 30 && after < 600, `after 30 ms jobs: ${after}`);
    assert.ok(before < after / 3, `after 1 ms jobs: ${before} (then ${after})`);
  } finally {
    pool.close();
  }
});

/** NOTE [ Worker scaling ] restated: every period's change follows from what it saw. */
function checkRule(periods: ScalePeriod[], max: number, min: number): void {
  periods.forEach((p, i) => {
    const grow = p.backlog && p.waited > 0.05 && p.idleCores >= 0.5 && p.workers < max;
    const where = `period ${i}: ${JSON.stringify(p)}`;
    if (grow) assert.is(p.to, p.workers + 1, `should grow, ${where}`);
    else if (p.to > p.workers) assert.unreachable(`grew without cause, ${where}`);
    if (p.to < p.workers) {
      const idleTwice = [0, 1, 2, 3].every((k) => (periods[i - k]?.idleWorkers ?? 0) > 1);
      const starved = (q?: ScalePeriod) => q !== undefined && q.idleCores < 0.25 && q.consumer && q.waited < 0.01 && q.idleWorkers >= 0.5;
      const starvedLong = [0, 1, 2, 3].every((k) => starved(periods[i - k]));
      assert.ok(p.workers > Math.max(min, p.floor) && (idleTwice || starvedLong), `shrank without cause, ${where}`);
    }
  });
}

test("workers: autoscale grows under a backlog when a core is idle and shrinks when idle, within its bounds; a fixed pool stays its size", async () => {
  const pool = await spinPool({ autoscale: true, workers: 1, minWorkers: 1, maxWorkers: 2 });
  try {
    assert.is(pool.size, 1);
    // A decode-bound stream with nobody reporting demand (so demand is assumed): a backlog for
    // seconds. Whether it may grow depends on the machine having half a core idle (the other
    // test processes share it): each period's choice is checked against what it saw.
    await Promise.all(Array.from({ length: 300 }, (_, i) => job(pool, i, 10)));
    const { periods, history } = pool.stats();
    assert.ok(periods.length >= 3, `periods recorded: ${periods.length}`);
    checkRule(periods, 2, 1);
    const couldGrow = periods.some((p) => p.backlog && p.idleCores >= 0.5 && p.workers < 2);
    if (couldGrow) assert.ok(history.some(([, n]) => n === 2), `grew to 2 under the backlog: ${JSON.stringify(history)}`);
    assert.ok(history.every(([, n]) => n >= 1 && n <= 2), "within bounds");
    const t0 = performance.now();
    while (pool.size > 1 && performance.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 100));
    assert.is(pool.size, 1, `back to its minimum when idle: ${JSON.stringify(pool.stats().history)}`);
    checkRule(pool.stats().periods, 2, 1);
  } finally {
    pool.close();
  }
  const fixed = await spinPool({ workers: 2 });
  try {
    await Promise.all(Array.from({ length: 60 }, (_, i) => job(fixed, i, 5)));
    assert.equal(fixed.stats().history.map(([, n]) => n), [2]);
    assert.equal(fixed.stats().periods, []);
  } finally {
    fixed.close();
  }
});

test("workers: while the slow lane is in use the scaler keeps a second worker for it, however idle, and lets it go a few seconds after", async () => {
  const pool = await spinPool({ autoscale: true, workers: 2, minWorkers: 1, maxWorkers: 2 });
  try {
    await warm(pool, 2);
    // A light load (well over a worker's worth idle, which alone shrinks the pool in a second)
    // with a slow sample now and then, for 3 s.
    const t0 = performance.now();
    for (let k = 0; performance.now() - t0 < 3000; k++) {
      await Promise.all([job(pool, 1000 + k, 150), ...Array.from({ length: 3 }, (_, i) => job(pool, 2000 + 4 * k + i, 2))]);
      await new Promise((r) => setTimeout(r, 200));
    }
    const during = pool.stats();
    assert.ok(during.slowLane > 0, `the slow samples took the lane: ${during.slowLane}`);
    assert.ok(during.periods.some((p) => p.idleWorkers > 1), "the pool was idle enough to shrink");
    assert.ok(during.periods.some((p) => p.floor === 2), "the lane's floor applied");
    assert.equal(during.history.map(([, n]) => n), [2], `two workers throughout: ${JSON.stringify(during.history)}`);
    checkRule(during.periods, 2, 1);
    // Idle, the floor lapses 4 s after the last slow sample, then the idle rule shrinks.
    const t1 = performance.now();
    while (pool.size > 1 && performance.now() - t1 < 9000) await new Promise((r) => setTimeout(r, 100));
    assert.is(pool.size, 1, `down to one once the lane is quiet: ${JSON.stringify(pool.stats().history)}`);
    checkRule(pool.stats().periods, 2, 1);
  } finally {
    pool.close();
  }
});

test("a transform module that does not load, or answers no image, is a named error", async () => {
  const missing = new URL("../fixtures/transforms/no_such_module.ts", import.meta.url).href;
  await createDecodePool({ workers: 1, transform: { url: missing } }).then(
    () => assert.unreachable("started"),
    (e: Error) => assert.match(e.message, /Cannot (start a decode worker|load the transform module)[^]*no_such_module/),
  );
  const pool = await createDecodePool({ workers: 1, transform: { url: new URL("../fixtures/transforms/not_an_image.ts", import.meta.url).href } });
  try {
    await pool.prepare({ bytes: nothing, decode: false, id: "s1", label: 3 }).then(
      () => assert.unreachable(),
      (e: Error) => assert.match(e.message, /answered for sample s1 something that is not an image/),
    );
  } finally {
    pool.close();
  }
});
