import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { NO_CASSANDRA, testCassandra } from "../_support/services.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { sampleId } from "../../src/dataset/sample_id.ts";
import type { PredictionRow, Store } from "../../src/dataset/store.ts";
import { CassetteError } from "../../src/errors.ts";
import { openStore } from "../../src/source/open.ts";
import { runtime } from "../../runtime-adapters/index.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-predictions-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Random rows: top-k of f32 probabilities, some without a label or a key. */
function rows(next: () => number, n: number, at: string): PredictionRow[] {
  return Array.from({ length: n }, (_, i) => {
    const k = 3;
    const probs = Array.from(new Float32Array(Array.from({ length: k }, () => next() / k)).sort().reverse());
    return {
      id: sampleId("pred", `${runtime.name}/${i}`), dataset: "pred", key: i % 4 === 0 ? null : `${runtime.name}/${i}`,
      classes: [randomInt(next, 0, 3), 4 + randomInt(next, 0, 3), 8 + randomInt(next, 0, 3)], probs,
      label: i % 3 === 0 ? null : randomInt(next, 0, 11), weights: `sha256:${"ab".repeat(32)}`, at,
    };
  });
}

async function scan(s: Store, table: string): Promise<PredictionRow[]> {
  const out: PredictionRow[] = [];
  for await (const page of s.scanPredictions(table)) out.push(...page);
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}

async function expectCode(p: Promise<unknown>, code: string, re: RegExp): Promise<void> {
  try {
    await p;
    assert.unreachable("should throw");
  } catch (e) {
    assert.instance(e, CassetteError);
    assert.is((e as CassetteError).code, code);
    assert.match((e as Error).message, re);
  }
}

const stores: { name: string; skip: string | false; address: () => string }[] = [
  { name: "SQLite", skip: false, address: () => `sqlite:${join(dir, "p.sqlite")}` },
  { name: "Cassandra", skip: NO_CASSANDRA, address: () => testCassandra("cassette_predictions")! },
];

for (const { name, skip, address } of stores) {
  test(`${name}: putPredictions writes rows keyed by id that scanPredictions reads back equal (null labels and keys too); a second put replaces them`, async () => {
    const seed = freshSeed();
    const next = rng(seed);
    const s = await openStore(address());
    const table = `predictions_t_${runtime.name}`;
    try {
      const first = rows(next, 150, "2026-01-02T03:04:05.678Z");
      await s.putPredictions(table, first.slice(0, 100));
      await s.putPredictions(table, first.slice(100));
      const sorted = [...first].sort((a, b) => (a.id < b.id ? -1 : 1));
      const got = await scan(s, table);
      // A re-run of the test finds the previous run's rows: the same ids, replaced here.
      assert.equal(got, sorted, `seed ${seed}`);
      const second = rows(next, 150, "2026-01-02T03:04:06.000Z");
      await s.putPredictions(table, second);
      assert.equal(await scan(s, table), [...second].sort((a, b) => (a.id < b.id ? -1 : 1)), `replaced, not added (seed ${seed})`);
      await expectCode(s.putPredictions("Bad Name", second), "ERR_INVALID_OPTION", /Cannot use 'Bad Name' as a predictions table/);
      await expectCode(scan(s, "predictions_none_such"), "ERR_STORE", /Cannot read predictions table 'predictions_none_such' in .*: there is no such table/);
    } finally {
      await s.close();
    }
  }, { skip, timeoutMs: 60_000 });
}
