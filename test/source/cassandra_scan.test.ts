/**
 * The ranged scan's parts without a node (NOTE [ Ranged scan ] in src/source/cassandra/cassandra_scan.ts):
 * the ring's cut, the WHERE clauses, and pagesInOrder's order, memory bound, stop and failure
 * on seeded random ranges whose pages answer after random delays.
 */
import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { type FetchPage, pagesInOrder, ringRanges, tokenWhere } from "../../src/source/cassandra/cassandra_scan.ts";

const MIN = -(2n ** 63n), MAX = 2n ** 63n - 1n;

test("ringRanges: n ranges in ring order that meet end to end; the first has no lower bound, the last no upper one", () => {
  for (const n of [1, 2, 3, 7, 16, 1000]) {
    const r = ringRanges(n);
    assert.is(r.length, n);
    assert.is(r[0].after, undefined, `n=${n}: the first range starts at the ring's minimum`);
    assert.is(r[n - 1].upTo, undefined, `n=${n}: the last range ends at 2^63-1, included`);
    for (let i = 1; i < n; i++) {
      assert.is(r[i].after, r[i - 1].upTo, `n=${n}: range ${i} starts where ${i - 1} ends`);
      assert.ok(r[i].after! > MIN && r[i].after! < MAX, `n=${n}: bound ${i} inside the ring`);
      if (i > 1) assert.ok(r[i].after! > r[i - 1].after!, `n=${n}: bounds increase`);
    }
  }
  assert.equal(ringRanges(2), [{ upTo: 0n }, { after: 0n }]);
});

test("tokenWhere: both bounds, one, or none (the whole ring: no WHERE)", () => {
  assert.is(tokenWhere(["label", "bucket"], { after: -5n, upTo: 7n }), " WHERE token(label, bucket) > -5 AND token(label, bucket) <= 7");
  assert.is(tokenWhere(["id"], { upTo: -3n }), " WHERE token(id) <= -3");
  assert.is(tokenWhere(["id"], { after: 9n }), " WHERE token(id) > 9");
  assert.is(tokenWhere(["id"], {}), "");
  assert.is(tokenWhere(["id"], ringRanges(1)[0]), "");
});

/** Ranges of random page counts (some empty), each page answering after a random delay. */
function fakeTable(seed: number, ranges: number) {
  const next = rng(seed);
  const pages = Array.from({ length: ranges }, (_, i) =>
    Array.from({ length: randomInt(next, 0, 5) }, (_, p) => Array.from({ length: randomInt(next, 0, 4) }, (_, k) => `r${i}p${p}k${k}`))
  );
  const delays = pages.map((ps) => ps.map(() => randomInt(next, 0, 6)));
  let held = 0, maxHeld = 0, asked = 0;
  const fetch: FetchPage<string> = async (i, state) => {
    const p = state === undefined ? 0 : Number(state);
    asked++;
    await new Promise((r) => setTimeout(r, delays[i][p] ?? 0));
    const rows = pages[i][p] ?? []; // a range with no pages answers one empty page, as Cassandra does
    if (rows.length) held++; // empty pages are dropped, never handed over
    maxHeld = Math.max(maxHeld, held);
    return { rows, ...(p + 1 < pages[i].length ? { pageState: String(p + 1) } : {}) };
  };
  return {
    fetch,
    expected: pages.flat().filter((p) => p.length),
    taken: () => held--,
    get maxHeld() {
      return maxHeld;
    },
    get asked() {
      return asked;
    },
  };
}

test("pagesInOrder: every range's pages in range order, whatever order they answer in; never more than concurrency × ahead pages held", async () => {
  for (let run = 0; run < 30; run++) {
    const seed = freshSeed();
    const next = rng(seed);
    const ranges = randomInt(next, 1, 12), concurrency = randomInt(next, 1, 6), ahead = randomInt(next, 1, 3);
    const t = fakeTable(seed, ranges);
    const got: string[][] = [];
    for await (const page of pagesInOrder(ranges, concurrency, ahead, t.fetch)) {
      // Counted as taken once the page is in the caller's hands; one is still the range's own until then.
      got.push(page);
      t.taken();
      if (randomInt(next, 0, 3) === 0) await new Promise((r) => setTimeout(r, randomInt(next, 0, 8)));
    }
    const label = `seed ${seed}: ${ranges} ranges, ${concurrency} at once, ${ahead} ahead`;
    assert.equal(got, t.expected.length ? t.expected : [[]], label);
    // Held: answered and not yet taken; the +1 is the page in the caller's hands, whose slot its range may refill.
    assert.ok(t.maxHeld <= concurrency * ahead + 1, `${label}: held ${t.maxHeld} pages`);
  }
});

test("pagesInOrder: a caller that stops early stops the fetching", async () => {
  let asked = 0;
  const fetch: FetchPage<number> = async (i, state) => {
    asked++;
    await new Promise((r) => setTimeout(r, 1));
    const p = Number(state ?? 0);
    return { rows: [i * 1000 + p], pageState: String(p + 1) }; // endless ranges
  };
  for await (const page of pagesInOrder(4, 4, 2, fetch)) {
    if (page[0] >= 3) break;
  }
  const after = asked;
  await new Promise((r) => setTimeout(r, 30));
  assert.ok(asked - after <= 4, `no fetching after the caller stopped: ${asked - after} more pages asked`);
  assert.ok(after <= 4 * 3 + 4, `at most ahead + 1 pages per range were asked: ${after}`);
});

test("pagesInOrder: a range's failure reaches the caller, even while it waits on an earlier range", async () => {
  const fetch: FetchPage<number> = async (i, state) => {
    if (i === 2) throw new Error("range 2 failed");
    await new Promise((r) => setTimeout(r, i === 0 ? 20 : 1));
    return { rows: [i], ...(state === undefined && i === 0 ? { pageState: "1" } : {}) };
  };
  const got: number[][] = [];
  try {
    for await (const page of pagesInOrder(4, 4, 2, fetch)) got.push(page);
    assert.unreachable("the scan should fail");
  } catch (e) {
    assert.match((e as Error).message, "range 2 failed");
  }
  assert.ok(got.length <= 2, `only range 0's pages came before the failure: ${JSON.stringify(got)}`);
});
