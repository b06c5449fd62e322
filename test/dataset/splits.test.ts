import * as assert from "uvu/assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, test } from "../_support/harness.ts";
import { freshSeed, randomInt, rng } from "../_support/random.ts";
import { createFolds, createSplits, loadSplit, loadSplits, saveSplits } from "../../src/dataset/splits.ts";
import type { DatasetSpec } from "../../src/dataset/spec.ts";
import type { NatRow } from "../../src/dataset/store.ts";
import { CassetteError } from "../../src/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "cassette-splits-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const spec: DatasetSpec = {
  version: 1,
  name: "tissue",
  columns: [{ name: "patient_id", type: "text" }, { name: "slide", type: "int" }, { name: "x", type: "int" }],
  groupBy: ["patient_id", "slide"],
  label: { kind: "int", classes: ["normal", "tumor"] },
};

/** A pathology-like dataset: patients with uneven slide counts and patch counts, 1:4 tumor. */
function pathology(seed: number, patients = 60): NatRow[] {
  const next = rng(seed);
  const rows: NatRow[] = [];
  for (let p = 0; p < patients; p++) {
    const slides = randomInt(next, 1, 4);
    for (let s = 0; s < slides; s++) {
      const patches = randomInt(next, 20, 150);
      for (let x = 0; x < patches; x++) {
        rows.push({ id: `${p}-${s}-${x}`, label: next() < 0.2 ? 1 : 0, meta: { patient_id: `P${p}`, slide: s, x } });
      }
    }
  }
  return rows;
}

function patientsOf(ids: string[]): Set<string> {
  return new Set(ids.map((id) => id.split("-")[0]));
}

test("no patient in two splits; ratios within 5 points; every sample at most once", () => {
  const seed = freshSeed();
  const rows = pathology(seed);
  const f = createSplits(spec, rows, { ratios: [7, 2, 1], groupBy: ["patient_id"], seed: 3 });
  const sets = f.splits.map((s) => patientsOf(s.ids));
  for (let a = 0; a < 3; a++) for (let b = a + 1; b < 3; b++) {
    const shared = [...sets[a]].filter((p) => sets[b].has(p));
    assert.equal(shared, [], `patients in ${f.splits[a].name} and ${f.splits[b].name} (seed ${seed})`);
  }
  const all = f.splits.flatMap((s) => s.ids);
  assert.is(new Set(all).size, all.length, "no id twice");
  const n = all.length;
  assert.ok(n > 0.9 * rows.length, `uses most rows with balance=data: ${n}/${rows.length} (seed ${seed})`);
  [0.7, 0.2, 0.1].forEach((want, i) => {
    const got = f.splits[i].ids.length / n;
    assert.ok(Math.abs(got - want) < 0.05, `${f.splits[i].name}: ${got.toFixed(3)} vs ${want} (seed ${seed})`);
  });
  assert.equal(f.params.names, ["train", "val", "test"]);
  assert.is(f.version, 1);
});

test("balance equal with a cap: 1:1 normal/tumor in every split, total ≤ max", () => {
  const seed = freshSeed();
  const f = createSplits(spec, pathology(seed), { ratios: [3, 1], groupBy: ["patient_id"], balance: "equal", max: 1000, seed: 1 });
  const total = f.splits.reduce((n, s) => n + s.ids.length, 0);
  assert.ok(total <= 1000 && total > 900, `total ${total} (seed ${seed})`);
  for (const s of f.splits) {
    const [normal = 0, tumor = 0] = [s.counts[0], s.counts[1]];
    assert.ok(Math.abs(normal - tumor) <= 0.1 * (normal + tumor), `${s.name}: ${normal} normal vs ${tumor} tumor (seed ${seed})`);
  }
});

test("groups whose class mix is skewed: balance holds in every split (a short class cuts the others), no group in two splits", () => {
  const three: DatasetSpec = { ...spec, label: { kind: "int", classes: ["a", "b", "c"] } };
  for (let round = 0; round < 6; round++) {
    const seed = freshSeed();
    const next = rng(seed);
    // Each patient's patches are mostly of one class, so a split's patients rarely hold its
    // targets of every class at once.
    const rows: NatRow[] = [];
    for (let p = 0, n = randomInt(next, 12, 40); p < n; p++) {
      const main = randomInt(next, 0, 2), pure = 0.75 + 0.2 * next();
      for (let x = 0, m = randomInt(next, 10, 200); x < m; x++) {
        rows.push({ id: `${p}-0-${x}`, label: next() < pure ? main : randomInt(next, 0, 2), meta: { patient_id: `P${p}`, slide: 0, x } });
      }
    }
    const weights = round % 2 ? ([1, 2, 1] as number[]) : undefined;
    let f;
    try {
      f = createSplits(three, rows, { ratios: [7, 2, 1], groupBy: ["patient_id"], balance: weights ?? "equal", seed: round });
    } catch (e) {
      // A small split whose few groups lack a class, or hold too few of one for a single unit of
      // the weights, cannot be balanced: named, not empty.
      assert.match((e as Error).message, /split '\w+' would be empty: its groups hold (no|too few) samples of label \d/, `seed ${seed}`);
      continue;
    }
    const sets = f.splits.map((s) => patientsOf(s.ids));
    for (let a = 0; a < 3; a++) for (let b = a + 1; b < 3; b++) {
      assert.equal([...sets[a]].filter((p) => sets[b].has(p)), [], `a patient in two splits (seed ${seed})`);
    }
    const w = weights ?? [1, 1, 1];
    for (const s of f.splits) {
      const c = [0, 1, 2].map((l) => s.counts[l] ?? 0);
      // Every class at its weight's share of the split, to within one unit of rounding.
      const units = c.map((n, l) => n / w[l]);
      assert.ok(Math.min(...units) > 0 && Math.max(...units) - Math.min(...units) <= 1, `${s.name}: counts ${c.join("/")} for weights ${w.join(":")} (seed ${seed})`);
      assert.is(s.ids.length, c.reduce((a, b) => a + b, 0));
    }
  }
});

test("deterministic by seed; another seed gives other splits", () => {
  const rows = pathology(42);
  const p = { ratios: [7, 2, 1], groupBy: ["patient_id"], seed: 9 };
  assert.equal(createSplits(spec, rows, p), createSplits(spec, rows.slice().reverse(), p), "row order does not matter");
  const other = createSplits(spec, rows, { ...p, seed: 10 });
  assert.not.equal(other.splits[0].ids, createSplits(spec, rows, p).splits[0].ids);
});

test("impossible requests are refused with the reason", () => {
  const rows = pathology(7, 2);
  const attempt = (params: Parameters<typeof createSplits>[2], re: RegExp) => {
    try {
      createSplits(spec, rows, params);
      assert.unreachable(`should refuse ${JSON.stringify(params)}`);
    } catch (e) {
      assert.instance(e, CassetteError);
      assert.match((e as Error).message, re);
    }
  };
  attempt({ ratios: [1, 1, 1], groupBy: ["patient_id"] }, /3 splits need at least 3 groups and 'patient_id' gives 2/);
  attempt({ ratios: [1, 1], groupBy: ["hospital"] }, /no such column: columns are patient_id, slide, x/);
  attempt({ ratios: [1, 1], balance: [1, 2, 3] }, /one non-negative weight per label \(2: labels 0,1\)/);
  attempt({ ratios: [0, 0] }, /at least one positive/);
  attempt({ ratios: [1, 1], names: ["a"] }, /2 ratios but 1 names/);
  // Two patients, one with no tumour patch at all: a balanced split of its own would be empty.
  const lopsided: NatRow[] = [
    ...Array.from({ length: 40 }, (_, x) => ({ id: `0-0-${x}`, label: x % 2, meta: { patient_id: "P0", slide: 0, x } })),
    ...Array.from({ length: 10 }, (_, x) => ({ id: `1-0-${x}`, label: 0, meta: { patient_id: "P1", slide: 0, x } })),
  ];
  assert.throws(() => createSplits(spec, lopsided, { ratios: [1, 1], groupBy: ["patient_id"], balance: "equal" }), /split '(train|test)' would be empty: its groups hold no samples of label 1/);
  assert.is(createSplits(spec, lopsided, { ratios: [1, 1], groupBy: ["patient_id"] }).splits.every((x) => x.ids.length > 0), true, "balance data takes what there is");
});

test("split files save and load; FILE:INDEX and FILE:NAME select a split; bad files say why", async () => {
  const f = createSplits(spec, pathology(5), { ratios: [7, 2, 1], groupBy: ["patient_id", "slide"], seed: 2 });
  const path = join(dir, "s.json");
  await saveSplits(path, f);
  assert.equal(await loadSplits(path), f);
  assert.equal((await loadSplit(`${path}:1`)).split.ids, f.splits[1].ids);
  assert.equal((await loadSplit(`${path}:test`)).split.ids, f.splits[2].ids);
  try {
    await loadSplit(`${path}:holdout`);
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /0:train, 1:val, 2:test/);
  }
  await saveSplits(path, { ...f, version: 2 as 1 });
  try {
    await loadSplits(path);
    assert.unreachable();
  } catch (e) {
    assert.is((e as CassetteError).code, "ERR_UNSUPPORTED");
  }
});

test("k-fold: every sample in exactly one fold; without groups classes dealt evenly (sizes within one), with groups no patient in two folds", () => {
  const seed = freshSeed();
  const rows = pathology(seed);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const groupBy of [[], ["patient_id"]]) {
    const k = randomInt(rng(seed), 2, 7);
    const f = createFolds(spec, rows, { folds: k, groupBy, seed });
    const what = `seed ${seed}, ${k} folds, groups ${groupBy.join(",") || "none"}`;
    assert.equal(f.splits.map((s) => s.name), Array.from({ length: k }, (_, i) => `fold${i}`), what);
    assert.is(f.params.folds, k);
    const all = f.splits.flatMap((s) => s.ids);
    assert.is(all.length, rows.length, `${what}: every sample once`);
    assert.is(new Set(all).size, rows.length, `${what}: none twice`);
    for (const s of f.splits) {
      const counts: Record<number, number> = {};
      for (const id of s.ids) counts[byId.get(id)!.label] = (counts[byId.get(id)!.label] ?? 0) + 1;
      assert.equal(counts, s.counts, `${what}: ${s.name}'s counts are its samples'`);
    }
    if (groupBy.length === 0) {
      const sizes = f.splits.map((s) => s.ids.length);
      assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${what}: sizes ${sizes}`);
      for (const label of [0, 1]) {
        const per = f.splits.map((s) => s.counts[label] ?? 0);
        assert.ok(Math.max(...per) - Math.min(...per) <= 1, `${what}: label ${label} per fold ${per}`);
      }
    } else {
      const seen = new Map<string, string>();
      for (const s of f.splits) {
        for (const p of patientsOf(s.ids)) {
          assert.ok(!seen.has(p) || seen.get(p) === s.name, `${what}: patient ${p} in ${seen.get(p)} and ${s.name}`);
          seen.set(p, s.name);
        }
      }
      // Folds of similar size: the largest patient (≤ 600 patches) bounds the spread.
      const sizes = f.splits.map((s) => s.ids.length);
      assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1200, `${what}: sizes ${sizes}`);
    }
    assert.equal(createFolds(spec, rows, { folds: k, groupBy, seed }), f, `${what}: deterministic`);
  }
});

test("k-fold: FILE:!fold2 (or :!2) is every other fold's samples, the training set of round 2; bad folds are refused", async () => {
  const rows = pathology(11, 20);
  const f = createFolds(spec, rows, { folds: 4, groupBy: ["patient_id"], seed: 3 });
  const path = join(dir, "folds.json");
  await saveSplits(path, f);
  for (const ref of [`${path}:!fold2`, `${path}:!2`]) {
    const { split } = await loadSplit(ref);
    assert.is(split.name, "!fold2");
    assert.equal(split.ids, [...f.splits[0].ids, ...f.splits[1].ids, ...f.splits[3].ids], ref);
    assert.is(Object.values(split.counts).reduce((a, b) => a + b, 0), split.ids.length);
    assert.not.ok(split.ids.some((id) => f.splits[2].ids.includes(id)), `${ref}: none of fold2`);
  }
  try {
    await loadSplit(`${path}:!fold9`);
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /split '!fold9'.*0:fold0, 1:fold1, 2:fold2, 3:fold3/);
  }
  for (const folds of [1, 2.5, 0]) {
    try {
      createFolds(spec, rows, { folds });
      assert.unreachable();
    } catch (e) {
      assert.match((e as Error).message, /'folds' must be an integer ≥ 2/);
    }
  }
  try {
    createFolds(spec, rows, { folds: 25, groupBy: ["patient_id"] }); // 20 patients
    assert.unreachable();
  } catch (e) {
    assert.match((e as Error).message, /25 splits need at least 25 groups/);
  }
});
